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


# -- J as the paper defines it (sec. 7.1) ----------------------------------------------------

def _j_corpus(root: Path) -> None:
    """Seven registered checkpoints at select_weight:

    i0 correct, i1 wrong (both in J), i2 correct but its handoff is recorded unverified,
    i3 never delivered (its opportunity names no delivered observation), i4 chose at
    +0.5 s but its evidence was delivered at +1.0 s (not delivered in time), i5 Wait/Stop
    only (not a physical-choice checkpoint), i6 has no run (missing).
    """
    ids = [f"i{k}" for k in range(7)]
    write_population(root, "J", [{"type": "checkpoint", "instance_id": i, "decision": "select_weight"} for i in ids])
    specs = {
        "i0": RolloutSpec("r0", decisions=[DecisionSpec()]),
        "i1": RolloutSpec("r1", decisions=[DecisionSpec(outcome="wrong")]),
        "i2": RolloutSpec("r2", decisions=[DecisionSpec()], handoffs=[{"decision": "select_weight", "verified": False}]),
        "i3": RolloutSpec("r3", decisions=[DecisionSpec(delivered=False)]),
        "i4": RolloutSpec("r4", decisions=[DecisionSpec(delivery_delay_s=1.0)]),
        "i5": RolloutSpec("r5", decisions=[DecisionSpec(terminal=True)]),
    }
    for instance, spec in specs.items():
        spec.population = ("J", instance)
        write_rollout(root, spec)


def test_J_counts_only_verified_delivered_physical_checkpoints(tmp_path):
    """J (sec. 7.1) holds 6 members (i5 is outside J); 2 are scored (1 correct) and 4 are
    unresolved — unverified, not delivered, not delivered in time, missing — never failures:
    B_next in [1/6, (1+4)/6] = [0.167, 0.833], C_id in [2/6, 6/6]; coverage counts each reason."""
    _j_corpus(tmp_path)
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    m, cov = group["metrics"], group["coverage"]
    assert m["B_next"]["value"] is None
    assert (m["B_next.lower"]["num"], m["B_next.lower"]["den"], m["B_next.upper"]["num"]) == (1, 6, 5)
    assert (m["C_id.lower"]["num"], m["C_id.upper"]["num"], m["C_id.upper"]["den"]) == (2, 6, 6)
    assert cov["J"] == {"registered": 7, "scored": 2, "unverified": 1, "not_delivered": 1, "not_delivered_in_time": 1,
                        "no_physical_choice": 1, "missing": 1}
    assert cov["B_next"] == {"resolved": 2, "registered": 6}


def test_an_unverified_checkpoint_is_never_scored_as_correct(tmp_path):
    """One registered checkpoint with a correct first choice: verified, B_next = 1/1;
    the same record marked unverified, B_next is unresolved in [0, 1] — not 1.0."""
    write_population(tmp_path / "a", "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "select_weight"}])
    write_population(tmp_path / "b", "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "select_weight"}])
    write_rollout(tmp_path / "a", RolloutSpec("r0", population=("J", "i0"),
                                              handoffs=[{"decision": "select_weight", "verified": True}]))
    write_rollout(tmp_path / "b", RolloutSpec("r0", population=("J", "i0"),
                                              handoffs=[{"decision": "select_weight", "verified": False}]))
    assert score_corpus(tmp_path / "a", resamples=0)["groups"][0]["metrics"]["B_next"]["value"] == 1.0
    m = score_corpus(tmp_path / "b", resamples=0)["groups"][0]["metrics"]
    assert (m["B_next"]["value"], m["B_next.lower"]["value"], m["B_next.upper"]["value"]) == (None, 0.0, 1.0)


_STATUS = st.sampled_from(["correct", "wrong", "unverified", "undelivered", "late", "terminal", "missing"])


@settings(max_examples=15, deadline=None)
@given(st.lists(_STATUS, min_size=1, max_size=6))
def test_J_bounds_follow_the_statuses(statuses):
    """For any mix: |J| excludes Wait/Stop-only members; lower = correct/|J|, upper =
    (correct + unresolved)/|J| where unresolved = unverified + undelivered + late + missing."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = [{"type": "checkpoint", "instance_id": f"i{k}", "decision": "select_weight"} for k in range(len(statuses))]
        write_population(root, "J", records)
        for k, status in enumerate(statuses):
            if status == "missing":
                continue
            decision = {"wrong": DecisionSpec(outcome="wrong"), "undelivered": DecisionSpec(delivered=False),
                        "late": DecisionSpec(delivery_delay_s=1.0), "terminal": DecisionSpec(terminal=True)}.get(status, DecisionSpec())
            handoffs = [{"decision": "select_weight", "verified": False}] if status == "unverified" else []
            write_rollout(root, RolloutSpec(f"r{k}", population=("J", f"i{k}"), decisions=[decision], handoffs=handoffs))
        groups = score_corpus(root, resamples=0)["groups"]
        if not groups:
            return  # no run at all: no result group to report
        in_j = [s for s in statuses if s != "terminal"]
        correct = in_j.count("correct")
        unresolved = sum(in_j.count(s) for s in ("unverified", "undelivered", "late", "missing"))
        metrics = groups[0]["metrics"]
        if not in_j:
            assert "B_next" not in metrics
        elif unresolved:
            assert metrics["B_next.lower"]["value"] == correct / len(in_j)
            assert metrics["B_next.upper"]["value"] == (correct + unresolved) / len(in_j)
        else:
            assert metrics["B_next"]["value"] == correct / len(in_j)
