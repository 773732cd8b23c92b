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
