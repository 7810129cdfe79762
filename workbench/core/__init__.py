"""The workbench's core, Qt-free and CuPy-free: three layers (io -> model -> domain) over ``fs`` and ``errors``.

See docs/architecture.md ("Inside core"). Nothing is re-exported here: import a module from its package.
"""
