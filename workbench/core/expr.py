"""The safe restriction language.

Restrictions such as ``block_size * items_per_thread <= 4096`` or
``strategy != "atomic" or block_size >= 128`` are parsed with :mod:`ast` and compiled to a tree
of Python closures over a whitelist: numbers, strings, booleans, names (slots and problem
parameters), arithmetic (``+ - * / // % **``), comparisons (chained), ``and``/``or``/``not``,
``in``/``not in`` over literal tuples/lists, conditional expressions, and calls to ``min``,
``max``, ``abs``. Anything else is refused with a :class:`RestrictionError` that names the
offending part and its column. User text is never passed to ``eval``.

Contract:

- ``compile_restriction(text: str, known_names: Iterable[str]) -> Restriction``
- ``Restriction.text``, ``Restriction.names`` (frozenset of names it reads),
  ``Restriction(values: Mapping[str, Value]) -> bool``.
"""
