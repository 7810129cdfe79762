"""Drawing distinct valid configs uniformly at random, from a product space or a recording.

A product space is sampled in up to three stages, each used only while it is the cheapest way to
find new configs: rejection from the cartesian product while the valid fraction (when known) and
the yield of new configs stay reasonable; exact draws from the component counts
(:mod:`workbench.core.domain.space_count`) while the excluded configs leave plenty; and a listing of what
is left when exclusions leave too few to find by drawing. A recording is a list: choose from what
is not excluded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from workbench.core.domain.space import Config, ProductSpace

#: Below this valid fraction (when known) sampling skips rejection from the cartesian product.
MIN_REJECTION_FRACTION = 0.01
#: Rejection sampling gives up once fewer than this share of its draws were new valid configs.
REJECTION_MIN_YIELD = 0.02


def sample_recorded(points: Sequence[Config], rng: np.random.Generator, n: int, taken: set[str]) -> list[Config]:
    """Up to ``n`` distinct recorded points whose ids are not in ``taken``, uniformly at random."""
    remaining = [c for c in points if c.id not in taken]
    if not remaining:
        return []
    picks = rng.choice(len(remaining), size=min(n, len(remaining)), replace=False)
    return [remaining[int(i)] for i in picks]


def sample_product(space: ProductSpace, rng: np.random.Generator, n: int, taken: set[str]) -> list[Config]:
    """Up to ``n`` distinct valid configs of ``space`` whose ids are not in ``taken`` (which grows).

    Returns fewer than ``n`` only when fewer remain.
    """
    out: list[Config] = []

    def accept(config: Config) -> None:
        if config.id not in taken:
            taken.add(config.id)
            out.append(config)

    # 1. rejection from the cartesian product, while it finds new configs often enough
    known = space.known_count
    known_fraction = None if known is None else known / space.cartesian_size
    small = 4 * (len(taken) + n) >= space.cartesian_size  # likely to exhaust: count instead
    if not small and (known_fraction is None or known_fraction >= MIN_REJECTION_FRACTION):
        sizes = [len(s.values) for s in space.slots]
        budget = max(2000, 50 * n)
        drawn = 0
        while len(out) < n and drawn < budget:
            if drawn >= 1000 and len(out) < REJECTION_MIN_YIELD * drawn:
                break  # too few valid (or too many excluded): draw from the counts instead
            batch = min(budget - drawn, max(64, 4 * (n - len(out))))
            columns = [rng.integers(0, size, size=batch) for size in sizes]
            rows = np.stack(columns, axis=1).tolist() if columns else [[]] * batch
            drawn += batch
            for row in rows:
                config = space.config_at(row)
                if space.satisfies(config):
                    accept(config)
                    if len(out) == n:
                        break
        if len(out) == n:
            return out
    # 2. exact draws from the counts, when the excluded part leaves plenty
    total = space.count()
    if total == 0:
        return out
    if total > 2 * (len(taken) + n):
        attempts = 0
        while len(out) < n and attempts < 20 * n + 100:
            attempts += 1
            accept(space.draw_exact(rng))
        if len(out) == n:
            return out
    # 3. list what is left (at most a few times what is excluded or asked for) and choose
    rest = [c for c in space.enumerate_unordered() if c.id not in taken]
    if rest:
        picks = rng.choice(len(rest), size=min(n - len(out), len(rest)), replace=False)
        out.extend(rest[int(i)] for i in picks)
    return out
