"""What the command line's refusals must look like (shared by the tests of its commands)."""

from __future__ import annotations

from typing import Protocol


class Ended(Protocol):
    returncode: int
    stdout: str
    stderr: str


def one_line_error(result: Ended) -> str:
    """The single ``error: ...`` line of a refused command (exit status 2, no traceback)."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in result.stderr, result.stderr
    return lines[0]
