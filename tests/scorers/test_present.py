from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from labrecord.scorers.present import format_ci, format_value, is_rate


def test_rates_print_as_percent_with_counts():
    assert format_value("correct.select_weight", {"value": 0.2, "num": 10, "den": 50}) == "20 % (10/50)"
    assert format_value("completion.valid", {"value": 2 / 3, "num": 2, "den": 3}) == "66.7 % (2/3)"
    assert format_value("B_next", {"value": None, "num": 0, "den": 0}) == "unavailable (0/0)"
    assert format_value("e_p", {"value": 0.01234, "num": 0.02468, "den": 2}) == "0.01234"
    assert format_ci("C_id", {"ci": [0.1, 0.3]}) == "[10 %, 30 %]"
    assert format_ci("C_id", {"ci": None}) == "—"


@given(st.integers(0, 500), st.integers(1, 500))
def test_every_rate_shows_its_denominator(num, den):
    text = format_value("C_id", {"value": num / den, "num": num, "den": den})
    assert text.endswith(f"({num}/{den})") and " %" in text
    assert is_rate("C_id") and not is_rate("gain.completion")


def test_provisional_metric_prints_its_bounds_and_coverage():
    """B_next with 5 of 8 correct, 2 unresolved: provisional [62.5 %, 87.5 %], 2 of 8 unresolved."""
    from labrecord.scorers.present import format_provisional, metric_rows

    metrics = {"B_next": {"value": None, "num": 5, "den": 6, "n": 6, "ci": None},
               "B_next.lower": {"value": 5 / 8, "num": 5, "den": 8, "n": 8, "ci": None},
               "B_next.upper": {"value": 7 / 8, "num": 7, "den": 8, "n": 8, "ci": None},
               "e_p": {"value": None, "num": 0.1, "den": 5, "n": 5, "ci": None}}
    coverage = {"B_next": {"resolved": 6, "registered": 8}, "e_p": {"resolved": 5, "registered": 6}}
    assert format_provisional("B_next", metrics, coverage) == "provisional [62.5 %, 87.5 %], 2 of 8 unresolved"
    assert format_provisional("e_p", metrics, coverage) == "unavailable (unbounded), 1 of 6 unresolved"
    rows = metric_rows({"metrics": metrics, "coverage": coverage})
    assert [r[0] for r in rows] == ["B_next", "e_p"]  # the bounds are shown inside, not as rows


def test_score_prints_provisional_rows_and_unresolved_runs(tmp_path):
    from click.testing import CliRunner

    from labrecord.cli import cli
    from labrecord.scorers.synthetic import RolloutSpec, write_rollout

    write_rollout(tmp_path, RolloutSpec("r0", physical=True))
    write_rollout(tmp_path, RolloutSpec("r1", physical=True, status="aborted", ended=False))
    result = CliRunner().invoke(cli, ["score", str(tmp_path), "--resamples", "0", "--no-audit"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "provisional [50 %, 100 %], 1 of 2 unresolved" in result.output
    assert "unresolved run r1: status aborted" in result.output
