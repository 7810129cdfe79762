"""Pure-Python core: search space, measurements, objective, sessions. No Qt, no CuPy."""
