"""P_state (eq. 7) and the provisional bounds s/N, (s+u)/N."""
from __future__ import annotations

from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.pairs import pair_bounds
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout
from hypothesis import given
from hypothesis import strategies as st


def _population(root, pairs: dict[str, tuple[str, str]]) -> None:
    instances = sorted({m for members in pairs.values() for m in members})
    records = [{"type": "instance", "instance_id": i} for i in instances]
    records += [{"type": "pair", "pair_id": p, "members": list(m), "kind": "answer_changing"} for p, m in pairs.items()]
    write_population(root, "B", records)


def _run(root, instance: str, outcome: str) -> None:
    """Members alternate answers (w10, w20), so each registered pair changes the answer."""
    answer = "w10" if int(instance[1:]) % 2 == 0 else "w20"
    write_rollout(root, RolloutSpec(f"r-{instance}", population=("B", instance),
                                    decisions=[DecisionSpec(outcome=outcome, answer=answer)]))


def test_hand_checked_p_state(tmp_path):
    _population(tmp_path, {"b0": ("i0", "i1"), "b1": ("i2", "i3")})
    for instance, outcome in (("i0", "correct"), ("i1", "correct"), ("i2", "correct"), ("i3", "wrong")):
        _run(tmp_path, instance, outcome)
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    assert (m["P_state"]["num"], m["P_state"]["den"], m["P_state"]["value"]) == (1, 2, 0.5)
    assert "P_state.lower" not in m


def test_unresolved_pairs_give_bounds_not_a_value(tmp_path):
    _population(tmp_path, {"b0": ("i0", "i1"), "b1": ("i2", "i3"), "b2": ("i4", "i5")})
    for instance, outcome in (("i0", "correct"), ("i1", "correct"), ("i2", "correct"), ("i3", "wrong"), ("i4", "correct")):
        _run(tmp_path, instance, outcome)
    group = score_corpus(tmp_path, resamples=0)["groups"][0]
    m = group["metrics"]
    assert m["P_state"]["value"] is None
    assert (m["P_state.lower"]["num"], m["P_state.lower"]["den"]) == (1, 3)
    assert (m["P_state.upper"]["num"], m["P_state.upper"]["den"]) == (2, 3)
    assert group["coverage"]["P_state_unresolved_pairs"] == 1


@given(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20))
def test_bounds_are_ordered_and_inside_unit_range(s, u, extra):
    n = s + u + extra
    lower, upper = pair_bounds(s, u, n)
    if n == 0:
        assert lower is None and upper is None
    else:
        assert 0 <= lower <= upper <= 1 and abs((upper - lower) - u / n) < 1e-12


def test_a_pair_with_a_shared_legal_set_is_refused_and_reported(tmp_path):
    """b0's members both have legal set {add(w10, pan)}: not answer-changing.  It scored
    P_state 1/1; it is refused (not in N), named with the shared operation, and validate
    reports it.  b1 (w10 vs w20) stays: P_state = 1/1 over the one valid pair."""
    from click.testing import CliRunner

    from labrecord.cli import cli

    _population(tmp_path, {"b0": ("i0", "i1"), "b1": ("i2", "i3")})
    for instance, answer in (("i0", "w10"), ("i1", "w10"), ("i2", "w10"), ("i3", "w20")):
        write_rollout(tmp_path, RolloutSpec(f"r-{instance}", population=("B", instance),
                                            decisions=[DecisionSpec(answer=answer)]))
    group = score_corpus(tmp_path, resamples=0)["groups"][0]
    assert (group["metrics"]["P_state"]["num"], group["metrics"]["P_state"]["den"]) == (1, 1)
    (refused,) = group["coverage"]["refused_pairs"]
    assert refused["pair_id"] == "b0" and refused["shared"] == ["add(w10, pan)"]
    result = CliRunner().invoke(cli, ["validate", str(tmp_path), "-q"])
    assert result.exit_code == 1
    assert "pair 'b0' is not answer-changing" in result.output and "add(w10, pan)" in result.output
    assert "'b1'" not in result.output
