import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.sim.weighing.policies import make_policy, parse_target, required_set
from labrecord.sim.weighing.scene import STANDARD_GRAMS, STANDARDS, display_segments


def test_required_set_by_hand():
    # paper example: 180 g target, stable 130 g reading -> the 50 g standard
    assert required_set(180.0, 130.0, set()) == {"w50"}
    assert required_set(180.0, 160.0, set()) == {"w20"}
    # 100 g sample + 50 g on the pan, 220 g target -> 100 + 20
    assert required_set(220.0, 150.0, {"w50"}) == {"w100", "w20"}
    assert required_set(180.0, 175.0, set()) is None


@settings(max_examples=80, deadline=None)
@given(st.sets(st.sampled_from(STANDARDS)), st.sets(st.sampled_from(STANDARDS)), st.floats(50, 150), st.floats(-0.3, 0.3))
def test_required_set_recovers_goal(goal, standing, sample, noise):
    target = sample + sum(STANDARD_GRAMS[w] for w in goal)
    reading = sample + sum(STANDARD_GRAMS[w] for w in standing) + noise
    assert required_set(target, reading, set(standing)) == set(goal)


def test_parse_target():
    assert parse_target("Bring the balance reading to 180 g using the labeled standards") == 180.0
    with pytest.raises(LabrecordError, match="no target"):
        parse_target("weigh something")


def test_unknown_policy_and_denomination():
    with pytest.raises(LabrecordError, match="policy 'nope'"):
        make_policy("nope")
    with pytest.raises(LabrecordError, match="denomination"):
        make_policy("fixed-preference", denomination="w30")


def test_display_segments():
    lit = display_segments("130.5")
    assert {"seg0b", "seg0c"} <= lit and "seg0a" not in lit  # a '1'
    assert "seg3g" in display_segments("8.8") and "seg0a" not in display_segments("8.8")
