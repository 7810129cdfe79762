"""A fixed list of configs, in order: for re-measuring chosen configs (not a search strategy).

Used to measure again what was aborted under a tighter latency constraint: the engine is told
which measured ids may be measured again, and this proposes exactly those, once each.
"""

from __future__ import annotations

from typing import Any, Sequence

from workbench.core.domain.space import Config, SearchSpace
from workbench.search.base import Strategy


class Listed(Strategy):
    name = "listed"
    description = "The given configs, in order, each once"
    uses_objective = False

    def __init__(self, space: SearchSpace, seed: int = 0, configs: Sequence[Config] = (), **options: Any) -> None:
        super().__init__(space, seed=seed, **options)
        self.configs = list(configs)
        self._next = 0

    def ask(self, n: int) -> list[Config]:
        out = self.configs[self._next : self._next + max(n, 0)]
        self._next += len(out)
        return out

    def state(self) -> dict[str, Any]:
        return {"listed": len(self.configs), "given": self._next}
