"""``bench/utility_fit.py``: its reference is the fit it compares with, and its tables are whole."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import utility_fit  # noqa: E402


def test_the_three_pass_reference_computes_the_fits_mean() -> None:
    """The timing compares like with like: the old computation's mean is the model's."""
    model = utility_fit.fed_model(40, rows=64)
    mean, chol = utility_fit.three_pass_fit(model)
    assert np.allclose(mean, model.fit().mean, rtol=1e-9, atol=1e-12) and chol.shape == (40, 40)


def test_it_prints_a_row_per_feature_count_in_both_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert utility_fit.main(["--features", "24,40", "--repeats", "1", "--evaluations", "30"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 24 |") or line.startswith("| 40 |")]
    assert len(rows) == 4 and all(" | " in r and r.endswith("|") for r in rows)
    assert utility_fit.per_config_ms(24, 30) > 0.0


def test_a_feature_count_too_small_for_its_space_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        utility_fit.main(["--features", "8"])
    assert "at least 16" in capsys.readouterr().err
