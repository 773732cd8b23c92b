"""Completion (physical, valid, clean, recovered; sec. 7.2) and E_fixed (eq. 6)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.synthetic import DecisionSpec, FailureSpec, RolloutSpec, write_population, write_rollout


def _counts(metrics: dict, name: str) -> tuple:
    return metrics[name]["num"], metrics[name]["den"]


def test_hand_checked_completion_levels(tmp_path):
    specs = [
        RolloutSpec("clean", physical=True),
        RolloutSpec("recovered", physical=True, failures=[FailureSpec(recoverable=True, resolved=True)]),
        RolloutSpec("unresolved", physical=True, failures=[FailureSpec(recoverable=True, resolved=None)]),
        RolloutSpec("irreversible", physical=True, violations=[True]),  # restored arrangement, still invalid
        RolloutSpec("protocol", physical=True, valid=False),
        RolloutSpec("wrong-choice", physical=True, decisions=[DecisionSpec(outcome="wrong")]),
        RolloutSpec("failed"),
    ]
    for spec in specs:
        write_rollout(tmp_path, spec)
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    assert _counts(m, "completion.physical") == (6, 7)
    assert _counts(m, "completion.valid") == (4, 7)  # clean, recovered, unresolved, wrong-choice
    assert _counts(m, "completion.clean") == (1, 7)
    assert _counts(m, "completion.recovered") == (1, 7)


def test_hand_checked_e_fixed(tmp_path):
    write_population(tmp_path, "K", [{"type": "fixed_start", "instance_id": i, "subgoal": "s1"} for i in ("k0", "k1", "k2")])
    write_rollout(tmp_path, RolloutSpec("r0", population=("K", "k0"), confirms=["s1"]))
    write_rollout(tmp_path, RolloutSpec("r1", population=("K", "k1"), confirms=["s2"]))
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    m = group["metrics"]
    # k0 confirmed, k1 confirmed another subgoal, k2 never ran: unresolved, so E_fixed is
    # null with bounds 1/3 (k2 would fail) and 2/3 (k2 would succeed)
    assert m["E_fixed"]["value"] is None and (m["E_fixed"]["num"], m["E_fixed"]["den"]) == (1, 2)
    assert (m["E_fixed.lower"]["value"], m["E_fixed.upper"]["value"]) == (1 / 3, 2 / 3)
    assert group["coverage"]["E_fixed"] == {"resolved": 2, "registered": 3}
    assert group["coverage"]["missing"] == [{"population": "K", "instance_id": "k2"}]


failures = st.lists(st.builds(FailureSpec, recoverable=st.booleans(), resolved=st.sampled_from([True, False, None])), max_size=2)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans(), failures, st.lists(st.booleans(), max_size=1)), min_size=1, max_size=5))
def test_levels_nest_and_clean_excludes_recovered(rows):
    with tempfile.TemporaryDirectory() as folder:
        for index, (physical, valid, fails, violations) in enumerate(rows):
            write_rollout(folder, RolloutSpec(f"r{index}", physical=physical, valid=valid and physical,
                                              failures=fails, violations=violations))
        m = score_corpus(Path(folder), resamples=0)["groups"][0]["metrics"]
        physical, valid = m["completion.physical"]["num"], m["completion.valid"]["num"]
        clean, recovered = m["completion.clean"]["num"], m["completion.recovered"]["num"]
        assert physical >= valid >= clean + recovered


def test_clean_completion_needs_choices_only_at_eligible_opportunities(tmp_path):
    # the terminal Wait/Stop-only opportunity has no native choice in either run; only the
    # unidentified choice at an eligible opportunity keeps the second run from being clean
    terminal = DecisionSpec("d1", "none", terminal=True)
    write_rollout(tmp_path, RolloutSpec("done", physical=True, decisions=[DecisionSpec("d0"), terminal]))
    write_rollout(tmp_path, RolloutSpec("silent", physical=True, decisions=[DecisionSpec("d0", "none"), terminal]))
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    assert _counts(m, "completion.valid") == (2, 2)
    assert _counts(m, "completion.clean") == (1, 2)
