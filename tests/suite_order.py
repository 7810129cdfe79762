"""The order the suite's files start in."""

#: Test files that take longest (``pytest --durations=0``, summed per file), run first: with
#: ``--dist loadfile`` a worker takes whole files in collection order, and a long file started
#: last keeps one worker busy while the other has nothing left (longest first balances them).
LONGEST_FILES = ("test_layout_fit.py", "test_gui_parts.py", "test_ray_executor.py", "test_gui_explain.py",
                 "test_engine.py", "test_accessibility.py", "test_readable_axes.py", "test_kernel_editor.py",
                 "test_gui_runs.py", "test_strategies.py", "test_gui_window.py", "test_backends_basic.py",
                 "test_gui_autosave.py", "test_pool.py")
