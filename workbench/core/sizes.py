"""Problem sizes in one session: which problems a session's trials ran at, and their trials.

A kernel is tuned once and runs at many sizes, and the best config at one size is often not the
best at another. A size sweep therefore keeps the trials of several problems in one session: each
:class:`~workbench.core.measurement.Trial` may carry its own ``problem`` (None: the session's
``problem``). Every view that compares sizes (the size view, dispatch export, warm-started retuning)
groups trials through the helpers here, so a problem means the same everywhere:

- :func:`problem_key` (from :mod:`workbench.core.session`): the canonical text of a problem, equal
  for equal problems whatever the order of their names;
- :func:`problems_of`: the distinct problems a session's trials ran at, in order of first trial;
- :func:`trials_by_problem`: problem key -> that problem's trials, in the same order.
"""

from __future__ import annotations

from typing import Any, Mapping

from workbench.core.measurement import Trial
from workbench.core.session import Session, problem_key

__all__ = ["problem_key", "problems_of", "trials_by_problem"]


def _keyed(session: Session) -> list[tuple[str, Mapping[str, Any], Trial]]:
    """(key, problem, trial) for every trial; a problem object shared by many trials (one run's)
    is keyed once."""
    own = problem_key(session.problem)
    seen: dict[int, str] = {}
    out: list[tuple[str, Mapping[str, Any], Trial]] = []
    for trial in session.trials:
        problem = trial.problem
        if problem is None:
            out.append((own, session.problem, trial))
            continue
        key = seen.get(id(problem))
        if key is None:
            key = seen[id(problem)] = problem_key(problem)
        out.append((key, problem, trial))
    return out


def trials_by_problem(session: Session) -> dict[str, list[Trial]]:
    """Problem key -> the trials measured at that problem, problems in order of their first trial."""
    groups: dict[str, list[Trial]] = {}
    for key, _problem, trial in _keyed(session):
        groups.setdefault(key, []).append(trial)
    return groups


def problems_of(session: Session) -> list[dict[str, Any]]:
    """The distinct problems the session's trials ran at (copies), in order of their first trial;
    a session without trials has none."""
    found: dict[str, dict[str, Any]] = {}
    for key, problem, _trial in _keyed(session):
        if key not in found:
            found[key] = dict(problem)
    return list(found.values())
