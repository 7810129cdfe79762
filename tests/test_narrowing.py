"""A narrowed domain kept as restrictions: the forms written, and read back only when exactly theirs."""

from __future__ import annotations

from workbench.core.domain.expr import MAX_TEXT
from workbench.core.domain.narrowing import narrowings, split_narrowings
from workbench.core.domain.space import SearchSpace, Slot


def test_the_shorter_form_is_written_and_read_back() -> None:
    domain = (0.1, 1e-05, -2.5, 3.0)
    assert narrowings("x", domain, [1e-05]) == ["x in (1e-05,)"]
    assert narrowings("x", domain, [0.1, 1e-05, 3.0]) == ["x not in (-2.5,)"]
    for kept in ([1e-05], [0.1, 1e-05, 3.0]):
        space = SearchSpace([Slot("x", domain), Slot("mode", ("fast", "exact"))],
                            restrictions=[*narrowings("x", domain, kept), "mode != 'exact'"])
        assert split_narrowings(space) == ({"x": kept}, ["mode != 'exact'"])


def test_a_wide_slot_narrowed_by_half_is_several_restrictions_each_within_the_length_allowed() -> None:
    """Narrowing 800 values to 400 wrote one restriction of 2,800 characters, which the space
    refused: continuing the session failed naming a restriction the person never wrote."""
    domain = list(range(10000, 10800))
    kept = domain[::2]
    texts = narrowings("x", domain, kept)
    assert len(texts) > 1 and all(len(text) <= MAX_TEXT for text in texts)
    space = SearchSpace([Slot("x", tuple(domain))], restrictions=texts)
    assert space.count() == 400
    assert split_narrowings(space) == ({"x": kept}, [])


def test_a_persons_own_restriction_of_the_same_kind_stays_theirs() -> None:
    space = SearchSpace([Slot("x", (1, 2, 3, 4))], restrictions=["x in (1, 2)", "x not in (4,)"])
    kept, others = split_narrowings(space)
    assert kept == {"x": [1, 2, 3]} and others == ["x in (1, 2)"]  # (the second is the form's own text)
