"""The order the suite's files start in."""

#: Test files that take longest (``pytest --durations=0``, summed per file), run first: with
#: ``--dist loadfile`` a worker takes whole files in collection order, and a long file started
#: last keeps one worker busy while the other has nothing left (longest first balances them).
LONGEST_FILES = ("test_ray_executor.py", "test_strategies.py", "test_cli.py", "test_export.py", "test_engine.py",
                 "test_sizes_sweep.py", "test_pool.py", "test_portability.py")
