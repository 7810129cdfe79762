"""The strategy contract: ``ask`` / ``tell``, seeded, no I/O, no knowledge of backends.

The engine owns the loop. It asks a strategy for configs, drops the ones already measured,
measures the rest, and tells the strategy the finished trials (frozen records). A strategy keeps
its own ``numpy.random.Generator`` and never touches the global random state; its options are
declared once in ``OPTIONS`` (name, default, description, allowed values) and that declaration drives validation,
the CLI help, the docs and the GUI's settings form.
"""

from __future__ import annotations

import difflib

import importlib
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

import numpy as np

from workbench.core.errors import WorkbenchError, quoted
from workbench.core.domain.measurement import Trial
from workbench.core.domain.search_objective import default_objective
from workbench.core.domain.space import Config, SearchSpace


def shown_value(value: Any) -> str:
    """An option's value as a message shows it: its ``repr``, shortened so the line stays readable
    (a value from a file or a command line can be of any length)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: The largest seed a run takes (the session file stores it as a 64-bit integer).
MAX_SEED = 2**63 - 1


def checked_seed(seed: Any) -> int:
    """``seed`` when it is one (an integer from 0 to :data:`MAX_SEED`), else one clear line.

    Why here: every strategy seeds its own generator with it, and NumPy refused a negative one, or
    None, a float or a string, with a traceback from inside the generator (or, for None, drew an
    unseeded run that no seed reproduces) when a script built a strategy or a run directly."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and 0 <= int(seed) <= MAX_SEED:
        return int(seed)
    raise WorkbenchError(f"seed {shown_value(seed)}: a seed is an integer from 0 to 2**63-1")


@dataclass(frozen=True)
class Option:
    """One declared strategy option."""

    name: str
    default: Any
    description: str
    choices: tuple[Any, ...] | None = None
    #: Inclusive bounds of a number (what the strategy's code can use); None: unbounded that side.
    low: float | None = None
    high: float | None = None

    @property
    def range_text(self) -> str:
        """The allowed values as help, docs and error lines show them: ``[1, 64]``, ``>= 0``,
        ``true/false``, ``one of: a, b``; empty for an unconstrained text option."""
        if self.choices is not None:
            return "one of: " + ", ".join(map(str, self.choices))
        if isinstance(self.default, bool):
            return "true/false"
        if self.low is not None and self.high is not None:
            return f"[{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f">= {self.low:g}"
        if self.high is not None:
            return f"<= {self.high:g}"
        return ""

    def check(self, value: Any) -> Any:
        """``value`` as this option's type, or ``ValueError`` saying what is allowed.

        A bool takes only a real bool or the spellings the command line documents (true/false,
        1/0), never any text through ``bool()``; a number must be a number (a bool is not one), an
        int a whole one, and within ``low``..``high``, so a hand-edited session or a stray
        ``--option`` is refused before the run starts instead of failing inside the strategy.
        """
        default = self.default
        if self.choices is not None:
            if isinstance(value, bool) or value not in self.choices:
                raise ValueError(self.range_text)
            return value
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
                return value.strip().lower() in ("true", "1")
            raise ValueError("true/false")
        if isinstance(default, (int, float)):
            number = _number(value, whole=isinstance(default, int))
            if number is None:
                kind = "a whole number" if isinstance(default, int) else "a number"
                raise ValueError(f"{kind} in {self.range_text}" if self.range_text else kind)
            if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
                raise ValueError(f"in {self.range_text}" if self.range_text.startswith("[") else self.range_text)
            return number
        if default is not None and not isinstance(value, type(default)):
            try:
                return type(default)(value)
            except (TypeError, ValueError) as exc:
                raise ValueError(str(exc)) from None
        return value

    @property
    def type_name(self) -> str:
        """The value type, as help and forms show it: ``choice``, ``bool``, ``int``, ``float``,
        ``str`` (from the default, which :meth:`Strategy.validate_options` converts values to)."""
        if self.choices is not None:
            return "choice"
        return "any" if self.default is None else type(self.default).__name__


@dataclass(frozen=True)
class OptionsConflict:
    """Options that contradict each other: the sentence that says how, and the options it concerns.

    The names are given, not read back from the sentence, so the hint that names an option left at
    its default (give it too) does not depend on how a strategy words its message."""

    message: str
    #: the declared options involved (each an ``Option.name`` of the strategy)
    options: tuple[str, ...]


def _number(value: Any, whole: bool) -> int | float | None:
    """A finite int (``whole``) or float from a number or its text; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 40:
            return None
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return None
    if isinstance(value, int):
        if whole:
            return value
        try:
            return float(value)
        except OverflowError:  # past any float: no number a float option takes
            return None
    if isinstance(value, float) and math.isfinite(value):
        if whole:
            return int(value) if value.is_integer() else None
        return value
    return None


class Strategy(ABC):
    """Base class of every search strategy.

    Contract (checked by one set of contract tests over all strategies):
    - deterministic for a given ``seed``; ``ask`` never returns configs that violate the space's
      restrictions, never returns duplicates within one call, and avoids configs already told;
    - ``ask(n)`` may return fewer than ``n`` configs (an empty list means: nothing left to propose);
    - ``tell(trials)`` receives finished trials (ok or failed) in completion order. It is not
      overridden: it keeps the bookkeeping every strategy shares and hands what a strategy can
      place to its :meth:`_update` (and :meth:`warm_start` to :meth:`_warm`), so the rules below
      hold for all of them alike;
    - the run's objective reaches a strategy through :meth:`set_objective` (before the first
      ``tell`` and again whenever the user changes constraints or weights mid-run);
      ``self.objective(trial) -> float`` is the per-trial cost (lower is better): feasible trials by
      score, infeasible ones behind them graded by how far they miss, failures ``+inf``
      (:class:`workbench.core.domain.search_objective.Objective`). A strategy ranks by that cost and
      never looks at constraints or weights itself;
    - configs known from elsewhere (a reopened session, a duplicate the engine dropped) reach it
      through :meth:`exclude`; nothing outside a strategy writes into its fields.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    #: True when the strategy can use a batch of parallel evaluations productively (a wrapper, such
    #: as the pruning one, takes its inner strategy's value per instance).
    batch_parallel: bool = True
    #: False for strategies whose proposals do not depend on costs (nothing to re-rank).
    uses_objective: ClassVar[bool] = True
    #: True for strategies that search a Pareto front when the objective names several metrics
    #: (``Objective.objectives``); the others rank by the single cost.
    multi_objective: ClassVar[bool] = False

    def __init__(self, space: SearchSpace, seed: int = 0, **options: Any) -> None:
        self.space = space
        self.seed = checked_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.options = self.validate_options(options)
        self._objective: Callable[[Trial], float] = default_objective()
        self.measured: set[str] = set()  # ids of configs already measured (told or known from the session)
        self._told: list[Trial] = []  # every trial told, in order: re-ranked when the objective changes

    @classmethod
    def validate_options(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        known = {o.name: o for o in cls.OPTIONS}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise WorkbenchError(
                f"strategy {cls.name!r} has no option {unknown[0]!r}; options: {', '.join(known) or 'none'}"
            )
        resolved = {o.name: o.default for o in cls.OPTIONS}
        for key, value in options.items():
            try:
                resolved[key] = known[key].check(value)
            except ValueError as exc:
                raise WorkbenchError(f"strategy {cls.name!r}: option {key}={shown_value(value)} must be {exc}") from None
        conflict = cls.options_conflict(resolved)
        if conflict is not None:
            problem = conflict.message
            # the documented low bound of one option can clash with another's default: say which
            defaulted = [name for name in known if name not in options and name in conflict.options]
            if defaulted and len(defaulted) < len(known):
                several = len(defaulted) > 1
                problem += (f"; {' and '.join(defaulted)} {'are at their defaults' if several else 'is at its default'}: "
                            f"give {'them' if several else 'it'} too")
            raise WorkbenchError(f"strategy {cls.name!r}: {problem}")
        return resolved

    @classmethod
    def options_conflict(cls, options: Mapping[str, Any]) -> OptionsConflict | None:
        """What makes ``options`` (each within its own bounds) contradict each other, or None.

        Why: a bound per option cannot say that one option must stay below another (elites out of a
        population, the last temperature below the first); such a run would start and do something
        else than asked. Strategies with such pairs override this."""
        return None

    @classmethod
    def unsuited(cls, space: SearchSpace) -> str | None:
        """Why this strategy cannot search ``space`` (None when it can): checked before it is built,
        so a space too large for its model is one line, not a failed allocation."""
        return None

    @property
    def objective(self) -> Callable[[Trial], float]:
        """The per-trial cost in force (lower is better)."""
        return self._objective

    def set_objective(self, objective: Callable[[Trial], float]) -> None:
        """Rank by ``objective`` from now on, and re-rank everything told so far.

        The default re-learns from scratch: a fresh instance of the same strategy (same seed and
        options) is told every past trial under the new cost, and takes over this one's state;
        what was handed out or measured stays taken, and the random generator goes on where it
        was, so the strategy never proposes a config twice. That re-ranks any strategy, whatever
        it derives from costs (a model, an incumbent, a population). A strategy that wraps others
        overrides this to pass the objective on.
        """
        self._objective = objective
        if not self._told or not self.uses_objective:
            return
        told = list(self._told)
        keep = self._kept_state()
        fresh = type(self)(self.space, seed=self.seed, **self.options)
        fresh._objective = objective
        fresh.warm_start(told)
        self.__dict__.update(fresh.__dict__)
        self._restore_state(keep)

    def _kept_state(self) -> dict[str, Any]:
        """What survives re-learning: the generator and everything already taken."""
        return {"rng": self.rng, "measured": set(self.measured)}

    def _restore_state(self, kept: dict[str, Any]) -> None:
        self.rng = kept["rng"]
        self.measured |= kept["measured"]

    def exclude(self, ids: Iterable[str]) -> None:
        """Never propose these config ids (measured elsewhere, or being measured)."""
        self.measured.update(ids)

    def handed(self) -> frozenset[str]:
        """Ids of the configs this strategy proposes because it was handed them (a warm start),
        not because its search chose them. A run's patience counts only the search's own
        proposals: a handed config that does not improve says nothing of the search stalling.
        Wrappers answer for what they wrap."""
        return frozenset()

    def warm_start(self, trials: Sequence[Trial]) -> None:
        """Learn from trials measured before this strategy existed (a reopened session), by the
        rules of :meth:`tell`."""
        trials = self._placeable(trials)
        self._note(trials)
        self._warm(trials)

    @abstractmethod
    def ask(self, n: int) -> list[Config]:
        """Up to ``n`` new configs to measure."""

    def tell(self, trials: Sequence[Trial]) -> None:
        """Finished trials, ok or failed.

        - A trial the space's restrictions rule out (measured before they were tightened) is
          learnt from but not counted as taken: it is no config this space could propose, and
          counting it would end the search before the space is used up.
        - A trial with a value outside its slot's domain (measured before the domains were
          narrowed, or of another space) is left out: a strategy places what it learns by the
          slots' values, and has no place for one its domain lacks.
        """
        trials = self._placeable(trials)
        self._note(trials)
        self._update(trials)

    def _placeable(self, trials: Sequence[Trial]) -> Sequence[Trial]:
        """``trials`` without those holding a value outside a slot's domain (see :meth:`tell`)."""
        if all(self.space.in_domains(trial.config) for trial in trials):
            return trials
        return [trial for trial in trials if self.space.in_domains(trial.config)]

    def _note(self, trials: Sequence[Trial]) -> None:
        """The bookkeeping every strategy shares: what is taken, and every trial for re-ranking."""
        for trial in trials:
            if self.space.is_valid(trial.config):
                self.measured.add(trial.config.id)
        self._told.extend(trials)

    def _update(self, trials: Sequence[Trial]) -> None:
        """What this strategy learns from finished trials (called by :meth:`tell`, after the
        shared bookkeeping; only trials within the slots' domains). Nothing by default."""

    def _warm(self, trials: Sequence[Trial]) -> None:
        """What this strategy learns from trials of before it existed (see :meth:`warm_start`):
        by default what it learns from told ones. A strategy that wraps others passes them on."""
        self._update(trials)

    def state(self) -> dict[str, Any]:
        """JSON-able state for saving with a session (default: nothing beyond seed and options)."""
        return {}


#: strategy name -> "module:Class", imported lazily.
STRATEGIES: dict[str, str] = {
    "grid": "workbench.search.grid:GridSearch",
    "random": "workbench.search.random:RandomSearch",
    "local": "workbench.search.local:LocalSearch",
    "annealing": "workbench.search.annealing:Annealing",
    "genetic": "workbench.search.genetic:Genetic",
    "tpe": "workbench.search.tpe:TPE",
    "agents": "workbench.search.agents:Agents",
    "hybrid": "workbench.search.hybrid:Hybrid",
}

DEFAULT_STRATEGY = "agents"  # chosen from bench/strategies.py, see docs/strategies.md
#: The default of a run that searches a Pareto front (--objectives): the default above searches one score.
DEFAULT_PARETO_STRATEGY = "tpe"


#: Kernel Tuner's strategy names -> the strategy here that searches the same way, or None where
#: none does. Someone bringing their habits gets the counterpart named; a spelling guess sent
#: ``dual_annealing`` to plain simulated annealing and left ``genetic_algorithm`` without a word.
KERNEL_TUNER_NAMES: dict[str, str | None] = {
    "brute_force": "grid",
    "random_sample": "random",
    "genetic_algorithm": "genetic",
    "simulated_annealing": "annealing",
    "greedy_mls": "local",
    "greedy_ils": "local",
    "mls": "local",
    "ordered_greedy_mls": "local",
    "bayes_opt": "tpe",
    "dual_annealing": None,
    "hybrid_vndx": None,
    "basinhopping": None,
    "diff_evo": None,
    "firefly_algorithm": None,
    "pso": None,
    "minimize": None,
}


def unknown_strategy(name: str) -> str:
    """What a run is told of a strategy name it does not know: the counterpart of a Kernel Tuner
    name, else the closest spelling, then every name there is."""
    known = f"choose one of: {', '.join(sorted(STRATEGIES))}"
    if name in KERNEL_TUNER_NAMES:
        counterpart = KERNEL_TUNER_NAMES[name]
        said = (f"Kernel Tuner's {name} is {counterpart!r} here" if counterpart is not None else
                f"Kernel Tuner's {name} has no counterpart here")
        return f"unknown strategy {name!r}: {said}; {known}"
    close = difflib.get_close_matches(str(name), list(STRATEGIES), n=1)
    guess = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown strategy {name!r}{guess}; {known}"


def strategy_class(name: str) -> type[Strategy]:
    if name not in STRATEGIES:
        raise WorkbenchError(unknown_strategy(name))
    module_name, _, class_name = STRATEGIES[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def options_help(name: str) -> str:
    """``tune --help-strategy NAME``: the strategy's description, then one line per option from its
    ``OPTIONS`` (name, type, default, description; the allowed values of a choice)."""
    cls = strategy_class(name)
    lines = [f"{name}: {cls.description}" if cls.description else name]
    if not cls.OPTIONS:
        lines.append("no options")
        return "\n".join(lines)
    rows = [(o.name, o.type_name, repr(o.default), o.range_text, o.description) for o in cls.OPTIONS]
    header = ("option", "type", "default", "allowed", "description")
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(4)]
    lines.append("options (tune --option NAME=VALUE):")
    lines += ["  " + "  ".join(f"{cell:<{w}}" for cell, w in zip(row[:4], widths)) + "  " + row[4]
              for row in [header, *rows]]
    return "\n".join(lines)


def create_strategy(name: str, space: SearchSpace, seed: int = 0, **options: Any) -> Strategy:
    cls = strategy_class(name)
    reason = cls.unsuited(space)
    if reason is not None:
        raise WorkbenchError(template=f"strategy {quoted(repr(name))} cannot search this space: {quoted(reason)}; pick another "
                                      "strategy ({strategy:tpe, annealing or random}) or narrow the domains")
    return cls(space, seed=seed, **options)
