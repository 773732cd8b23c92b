"""B_next, C_id, accuracy among identified (eq. 4, 5) and the reach triple."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout


def _checkpoint_corpus(root: Path, outcomes: dict[str, str | None]) -> None:
    """One checkpoint per instance; outcome None means the instance has no run."""
    records = [{"type": "checkpoint", "instance_id": i, "decision": "select_weight"} for i in outcomes]
    write_population(root, "J", records)
    for index, (instance, outcome) in enumerate(outcomes.items()):
        if outcome is not None:
            write_rollout(root, RolloutSpec(f"r{index}", population=("J", instance),
                                            decisions=[DecisionSpec("select_weight", outcome)]))


def test_hand_checked_checkpoint_metrics(tmp_path):
    # correct, wrong, no choice, a correct choice after the 5 s window, and a missing run
    _checkpoint_corpus(tmp_path, {"i0": "correct", "i1": "wrong", "i2": "none", "i3": "late", "i4": None})
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    m = group["metrics"]
    # i4 is unresolved: B_next in [1/5, 2/5], C_id in [2/5, 3/5]; accuracy|identified is
    # 1/2 over the resolved ones and lies in [1/3 (i4 identified, wrong), 2/3 (identified, right)]
    assert (m["B_next"]["num"], m["B_next"]["den"], m["B_next"]["value"]) == (1, 4, None)
    assert (m["B_next.lower"]["value"], m["B_next.upper"]["value"]) == (0.2, 0.4)
    assert (m["C_id.lower"]["num"], m["C_id.lower"]["den"], m["C_id.upper"]["num"]) == (2, 5, 3)
    assert (m["accuracy_identified"]["num"], m["accuracy_identified"]["den"], m["accuracy_identified"]["value"]) == (1, 2, None)
    assert (m["accuracy_identified.lower"]["value"], m["accuracy_identified.upper"]["value"]) == (1 / 3, 2 / 3)
    assert group["coverage"]["missing"] == [{"population": "J", "instance_id": "i4"}]
    assert group["coverage"]["B_next"] == {"resolved": 4, "registered": 5}


def test_hand_checked_resolved_checkpoints(tmp_path):
    _checkpoint_corpus(tmp_path, {"i0": "correct", "i1": "wrong", "i2": "none", "i3": "late"})
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    assert (m["B_next"]["num"], m["B_next"]["den"], m["B_next"]["value"]) == (1, 4, 0.25)
    assert (m["accuracy_identified"]["num"], m["accuracy_identified"]["den"], m["accuracy_identified"]["value"]) == (1, 2, 0.5)
    assert "B_next.lower" not in m


def test_accuracy_is_unavailable_without_identified_choices(tmp_path):
    _checkpoint_corpus(tmp_path, {"i0": "none"})
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    assert m["accuracy_identified"]["value"] is None and m["accuracy_identified"]["den"] == 0


def test_reach_triple_separates_not_reaching_from_wrong_choice(tmp_path):
    specs = [RolloutSpec("r0", decisions=[DecisionSpec("d1"), DecisionSpec("d2", "correct")]),
             RolloutSpec("r1", decisions=[DecisionSpec("d1"), DecisionSpec("d2", "wrong")]),
             RolloutSpec("r2", decisions=[DecisionSpec("d1")]),
             RolloutSpec("r3", decisions=[DecisionSpec("d1", "wrong")])]
    for spec in specs:
        write_rollout(tmp_path, spec)
    m = score_corpus(tmp_path, resamples=0, decisions=["d2"])["groups"][0]["metrics"]
    assert (m["reach.d2"]["num"], m["reach.d2"]["den"]) == (2, 4)
    assert (m["correct_given_reach.d2"]["num"], m["correct_given_reach.d2"]["den"]) == (1, 2)
    assert (m["correct.d2"]["num"], m["correct.d2"]["den"]) == (1, 4)
    assert "reach.d1" not in m


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(["correct", "wrong", "none", "late", None]), min_size=1, max_size=6))
def test_b_next_never_exceeds_c_id_and_equals_accuracy_times_coverage(outcomes):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _checkpoint_corpus(root, {f"i{k}": o for k, o in enumerate(outcomes)})
        if all(o is None for o in outcomes):
            write_rollout(root, RolloutSpec("other", population=("J", "i0")))
        m = score_corpus(root, resamples=0)["groups"][0]["metrics"]
        resolved = sum(o is not None for o in outcomes) + (all(o is None for o in outcomes))
        unresolved = sum(o is None for o in outcomes) - (all(o is None for o in outcomes))
        assert m["B_next"]["num"] <= m["C_id"]["num"] and m["B_next"]["den"] == m["C_id"]["den"] == resolved
        if unresolved:
            assert m["B_next"]["value"] is None and m["B_next.upper"]["num"] - m["B_next.lower"]["num"] == unresolved
            assert m["B_next.lower"]["den"] == len(outcomes)
        elif m["C_id"]["num"]:
            assert abs(m["accuracy_identified"]["value"] * m["C_id"]["value"] - m["B_next"]["value"]) < 1e-12


def _terminal_corpus(root: Path) -> None:
    """Weighing-like rollouts: d0 selects a standard, d1 opens with only wait/stop legal."""
    write_population(root, "J", [{"type": "checkpoint", "instance_id": i, "decision": "d0"} for i in ("i0", "i1", "i2")])
    outcomes = {"i0": ("correct", "none"), "i1": ("wrong", "none"), "i2": ("correct", "correct")}
    for index, (instance, (first, last)) in enumerate(outcomes.items()):
        write_rollout(root, RolloutSpec(f"r{index}", population=("J", instance),
                                        decisions=[DecisionSpec("d0", first), DecisionSpec("d1", last, terminal=True)]))


def test_wait_stop_only_opportunities_are_not_native_choices(tmp_path):
    # d1's legal set is {stop, wait}: an action-only policy never shows it, so it is no
    # eligible opportunity; d0 alone carries the choice metrics (2 of 3 correct)
    _terminal_corpus(tmp_path)
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    assert (m["B_next"]["num"], m["B_next"]["den"]) == (2, 3)
    assert (m["C_id"]["num"], m["C_id"]["den"]) == (3, 3)
    assert (m["identified_given_reach.d0"]["num"], m["identified_given_reach.d0"]["den"]) == (3, 3)
    assert not [name for name in m if name.endswith(".d1")]


def test_eligible_column_of_first_choices(tmp_path):
    from labrecord.store import open_source

    _terminal_corpus(tmp_path)
    con, _, _ = open_source(tmp_path)
    rows = con.execute("SELECT decision, eligible, count(*) FROM first_choices GROUP BY ALL ORDER BY ALL").fetchall()
    assert rows == [("d0", True, 3), ("d1", False, 3)]


def test_a_checkpoint_on_a_wait_stop_only_decision_is_outside_J(tmp_path):
    """A checkpoint whose legal set holds only Wait/Stop is no physical-choice checkpoint
    (sec. 7.1): it is not in J at all — not a failure, not unresolved — and J's coverage
    counts it under ``no_physical_choice`` (1 registered, 0 scored)."""
    write_population(tmp_path, "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "d1"}])
    write_rollout(tmp_path, RolloutSpec("r0", population=("J", "i0"), decisions=[DecisionSpec("d1", "correct", terminal=True)]))
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    assert "C_id" not in group["metrics"] and "B_next" not in group["metrics"]
    assert group["coverage"]["J"] == {"registered": 1, "no_physical_choice": 1}
