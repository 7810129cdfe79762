"""Grid search: every valid config, once, in the space's stable order.

The baseline every other strategy is judged against, and the way to measure a small space
completely. Configs already measured (told, or known from a reopened session) are skipped, so a
resumed grid continues where it stopped.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Iterator

from workbench.core.domain.space import Config, ProductSpace
from workbench.core.errors import SpaceError
from workbench.search.base import Strategy

#: A space of at most this many valid configs is listed from its counts (``ProductSpace.in_order``,
#: the same order): walking the product checks the restrictions at every point it cannot rule out
#: slot by slot, and a sparse space (a restriction over all its slots keeping a few dozen configs
#: of millions) kept the run waiting tens of seconds between its last configs and after them.
#: Larger spaces are walked lazily (they are rarely sparse, and their listing would not fit), and
#: so is a space whose count is not known yet and whose largest group of linked slots holds more
#: than ``COUNTED_UP_TO`` configs before restrictions: counting it may take longer than the walk
#: it would save (a restriction over eight slots of twelve values took 22 s to be found
#: uncountable, where the walk proposed at once); smaller groups are counted in a second or two.
LISTED_UP_TO = 50_000
COUNTED_UP_TO = 20_000_000


class GridSearch(Strategy):
    """Enumerates the valid configs in order (slot order, domain order, last slot fastest)."""

    name = "grid"
    description = "Every valid config in a fixed order; exhaustive and deterministic."
    OPTIONS = ()
    uses_objective = False  # proposals ignore costs

    def __init__(self, space: Any, seed: int = 0, **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self._proposed = 0
        #: made at the first ask, in the thread that runs the search: a count may take a second or
        #: two, which a window starting the run would otherwise spend frozen
        self._configs: Iterator[Config] | None = None

    def _in_order_from(self, start: int) -> Iterator[Config]:
        """The valid configs in the space's order, from the ``start``-th on."""
        space = self.space
        if isinstance(space, ProductSpace):
            count = space.known_count
            if count is None and space.largest_linked_group <= COUNTED_UP_TO:
                try:  # (at most some 10^7 points, counted with NumPy: a second or two)
                    count = space.count()
                except SpaceError:  # too costly to count after all: walked
                    count = None
            if count is not None and count <= LISTED_UP_TO:
                return iter(space.in_order()[start:])
        return islice(iter(space), start, None)

    def ask(self, n: int) -> list[Config]:
        out: list[Config] = []
        if self._configs is None:
            self._configs = self._in_order_from(self._proposed)
        while len(out) < n:
            config = next(self._configs, None)
            if config is None:
                break
            self._proposed += 1
            if config.id not in self.measured:
                out.append(config)
        return out

    def state(self) -> dict[str, Any]:
        return {"proposed": self._proposed}

    def __getstate__(self) -> dict[str, Any]:
        """Picklable: the enumeration is stored as its position, not as a live generator."""
        state = dict(self.__dict__)
        del state["_configs"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._configs = None  # (listed again from where it stopped at the next ask)
