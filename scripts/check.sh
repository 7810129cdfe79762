#!/usr/bin/env bash
# Every check CI runs, in order, stopping at the first failure: ruff (lint), mypy (types),
# import-linter (the layering contracts), then the tests, one process more than the cores (pytest-xdist; a
# file's tests stay in one process). Extra arguments go to pytest.
# PYTHON names another interpreter than .venv's (its environment must have the test extra).
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-.venv/bin/python}"
echo "check: ruff"
"$py" -m ruff check .
echo "check: mypy"
"$py" -m mypy
echo "check: lint-imports"
"$py" -c 'import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())'
echo "check: pytest"
# The tests start several hundred interpreters (command-line runs, worker processes, benchmark
# readers). Where the environment sets PYTHONDONTWRITEBYTECODE (some CI images do), each of them
# compiled the package's modules from source again (the suite took 226 s instead of 195 s on an
# idle 2-core machine). Bytecode goes to __pycache__ folders, which git ignores.
unset PYTHONDONTWRITEBYTECODE
# --no-loadscope-reorder keeps the collection order (the longest files first, tests/suite_order.py)
# instead of xdist's order by test count. The outer limit is a backstop behind the per-test
# timeout: whatever hangs, the check ends with a message long before any CI limit.
# One test process more than the cores: a good part of the suite waits (on programs it started, on
# a run's thread, on timeouts it tests), and a third process on a 2-core machine fills that time
# (the whole suite on an idle 2-core machine: 245 s with 2 processes, 221 s
# with 3, 220 s with 4).
workers=$(( $(nproc) + 1 ))
status=0
timeout --kill-after=30 "${PYTEST_LIMIT_S:-1200}" "$py" -m pytest -q -n "$workers" --dist loadfile --no-loadscope-reorder "$@" || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "check: pytest did not finish within ${PYTEST_LIMIT_S:-1200} s; something hangs" >&2
fi
exit "$status"
