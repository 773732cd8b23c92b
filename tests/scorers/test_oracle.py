"""Oracle gains Δ_{m,o}(Y) (eq. 3), error reversal, bounds, interaction contrast, refusal."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.scorers.corpus import score_corpus, score_reference
from labrecord.scorers.oracle import gain_bounds, interaction, paired_gain
from labrecord.scorers.synthetic import DecisionSpec, GeometrySpec, RolloutSpec, write_population, write_rollout


def _support(oracle: str) -> dict:
    return {"mode": "assist", "site": "decision", "oracle": oracle, "branch": "supported"}


def _pair(pair_id: str, base: str, supported: str, oracle: str = "o1") -> dict:
    return {"type": "oracle_pair", "pair_id": pair_id, "base": base, "supported": supported, "mode": "assist",
            "oracle": oracle, "site": "decision"}


def _geom(error: float) -> list[GeometrySpec]:
    return [GeometrySpec(p_hat=[error, 0.0, 1.0], p_ref=[0.0, 0.0, 1.0])]


def _instances(*names: str) -> list[dict]:
    return [{"type": "instance", "instance_id": n} for n in names]


def _supported_group(result: dict) -> dict:
    return next(g for g in result["groups"] if g["identity"]["intervention_mode"] == "assist")


def test_hand_checked_gain_with_error_reversal(tmp_path):
    write_population(tmp_path, "O", _instances("b0", "b1", "s0", "s1") + [_pair("p0", "b0", "s0"), _pair("p1", "b1", "s1")])
    write_rollout(tmp_path, RolloutSpec("base0", population=("O", "b0"), physical=False, geometry=_geom(2.0)))
    write_rollout(tmp_path, RolloutSpec("sup0", population=("O", "s0"), physical=True, geometry=_geom(1.0), intervention=_support("o1")))
    write_rollout(tmp_path, RolloutSpec("base1", population=("O", "b1"), physical=True, geometry=_geom(1.0)))
    write_rollout(tmp_path, RolloutSpec("sup1", population=("O", "s1"), physical=True, geometry=_geom(1.0), intervention=_support("o1")))
    result = score_corpus(tmp_path, resamples=0)
    gains = _supported_group(result)["metrics"]
    assert (gains["gain.completion"]["num"], gains["gain.completion"]["den"], gains["gain.completion"]["value"]) == (1, 2, 0.5)
    assert gains["gain.e_p"]["value"] == 0.5  # error fell by 1 in one pair: positive means improvement
    base = next(g for g in result["groups"] if g["identity"]["intervention_mode"] == "none")
    assert base["coverage"]["missing"] == []  # supported instances are not expected of the base branch


def test_unresolved_pair_gives_bounds(tmp_path):
    write_population(tmp_path, "O", _instances("b0", "b1", "s0", "s1") + [_pair("p0", "b0", "s0"), _pair("p1", "b1", "s1")])
    write_rollout(tmp_path, RolloutSpec("base0", population=("O", "b0")))
    write_rollout(tmp_path, RolloutSpec("sup0", population=("O", "s0"), physical=True, intervention=_support("o1")))
    write_rollout(tmp_path, RolloutSpec("base1", population=("O", "b1")))
    group = _supported_group(score_corpus(tmp_path, resamples=0))
    m = group["metrics"]
    # p0: 1 − 0 = 1; p1: base1 did not complete, s1 is missing, so its gain is in [0, 1]
    # (not [−1, 1]: the known base bounds it).  Δ lies in [(1+0)/2, (1+1)/2].
    assert m["gain.completion"]["value"] is None
    assert (m["gain.completion.lower"]["num"], m["gain.completion.upper"]["num"], m["gain.completion.upper"]["den"]) == (1, 2, 2)
    assert group["coverage"]["missing"] == [{"population": "O", "instance_id": "s1"}]


def test_interaction_contrast_of_joint_support(tmp_path):
    records = _instances("b", "s1", "s2", "s12") + [_pair("p1", "b", "s1", "o1"), _pair("p2", "b", "s2", "o2"),
                                                   _pair("p12", "b", "s12", "o1+o2")]
    write_population(tmp_path, "O", records)
    write_rollout(tmp_path, RolloutSpec("base", population=("O", "b")))
    write_rollout(tmp_path, RolloutSpec("one", population=("O", "s1"), intervention=_support("o1")))
    write_rollout(tmp_path, RolloutSpec("two", population=("O", "s2"), intervention=_support("o2")))
    write_rollout(tmp_path, RolloutSpec("joint", population=("O", "s12"), physical=True, intervention=_support("o1+o2")))
    joint = next(g for g in score_corpus(tmp_path, resamples=0)["groups"] if g["identity"]["oracle"] == "o1+o2")
    assert joint["metrics"]["interaction.completion"]["value"] == 1.0  # 1 - 0 - 0 + 0


def test_pairing_across_evaluation_versions_is_refused(tmp_path):
    write_population(tmp_path, "O", _instances("b0", "s0") + [_pair("p0", "b0", "s0")])
    write_rollout(tmp_path, RolloutSpec("base0", population=("O", "b0"), evaluation_version="2"))
    write_rollout(tmp_path, RolloutSpec("sup0", population=("O", "s0"), intervention=_support("o1")))
    with pytest.raises(LabrecordError, match="evaluation_version differs"):
        score_corpus(tmp_path, resamples=0)


outcome = st.one_of(st.none(), st.floats(0, 1))


@given(outcome, outcome)
def test_gain_is_antisymmetric_and_errors_reverse(a, b):
    forward = paired_gain("completion", {"completion": a}, {"completion": b})
    backward = paired_gain("completion", {"completion": b}, {"completion": a})
    if a is None or b is None:
        assert forward is None
    else:
        assert forward == -backward
        assert paired_gain("e_p", {"e_p": a}, {"e_p": b}) == -forward


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_additive_supports_have_zero_interaction(y0, g1, g2):
    value = interaction("completion", {"completion": y0}, {"completion": y0 + g1}, {"completion": y0 + g2},
                        {"completion": y0 + g1 + g2})
    assert abs(value) < 1e-9


@given(st.integers(0, 10), st.integers(0, 10), st.integers(1, 10))
def test_gain_bounds_contain_every_completion(resolved_total, unresolved, extra):
    planned = unresolved + extra
    lower, upper = gain_bounds(float(min(resolved_total, extra)), unresolved, planned)
    assert -1 <= lower <= upper <= 1


def _joint_corpus(root, sets: int, joint_missing: set[int], joint_complete: set[int]) -> None:
    """``sets`` registered matched sets (base b_k, o1 s1_k, o2 s2_k, o1+o2 s12_k); every base
    and single branch fails to complete; joint branches in ``joint_complete`` complete."""
    records = []
    for k in range(sets):
        records += _instances(f"b{k}", f"s1_{k}", f"s2_{k}", f"s12_{k}")
        records += [_pair(f"p1_{k}", f"b{k}", f"s1_{k}", "o1"), _pair(f"p2_{k}", f"b{k}", f"s2_{k}", "o2"),
                    _pair(f"p12_{k}", f"b{k}", f"s12_{k}", "o1+o2")]
    write_population(root, "O", records)
    for k in range(sets):
        write_rollout(root, RolloutSpec(f"base{k}", population=("O", f"b{k}")))
        write_rollout(root, RolloutSpec(f"one{k}", population=("O", f"s1_{k}"), intervention=_support("o1")))
        write_rollout(root, RolloutSpec(f"two{k}", population=("O", f"s2_{k}"), intervention=_support("o2")))
        if k not in joint_missing:
            write_rollout(root, RolloutSpec(f"joint{k}", population=("O", f"s12_{k}"), physical=k in joint_complete,
                                            intervention=_support("o1+o2")))


def test_interaction_waits_for_every_registered_set(tmp_path):
    """4 registered sets, the joint branch of set 3 missing; sets 0–2 have contrast
    0 − 0 − 0 + 0 = 0.  Computing over the 3 complete sets printed a final 0.0 although the
    truth over 4 may be 0.25; the contrast is null with bounds [(0+0+0+0)/4, (0+0+0+1)/4]."""
    _joint_corpus(tmp_path, 4, joint_missing={3}, joint_complete=set())
    joint = next(g for g in score_corpus(tmp_path, resamples=0)["groups"] if g["identity"]["oracle"] == "o1+o2")
    m = joint["metrics"]
    assert m["interaction.completion"]["value"] is None
    assert (m["interaction.completion.lower"]["value"], m["interaction.completion.upper"]["value"]) == (0.0, 0.25)
    assert joint["coverage"]["interaction.completion"] == {"resolved": 3, "registered": 4}


def test_interaction_of_complete_sets_is_final(tmp_path):
    """2 sets, both complete; set 0's joint branch completes: (1 + 0)/2 = 0.5."""
    _joint_corpus(tmp_path, 2, joint_missing=set(), joint_complete={0})
    joint = next(g for g in score_corpus(tmp_path, resamples=0)["groups"] if g["identity"]["oracle"] == "o1+o2")
    assert joint["metrics"]["interaction.completion"]["value"] == 0.5
    assert "interaction.completion.lower" not in joint["metrics"]


def test_oracle_correct_is_the_choice_at_the_supported_checkpoint(tmp_path):
    """The base branch chose wrong at the checkpoint (d0) and right at two later decisions;
    the supported branch chose right at d0.  Averaging all choices gave 1 − 2/3 = 0.333; the
    outcome is the choice at the shared checkpoint, so the gain is 1 − 0 = 1.0."""
    from labrecord.scorers.synthetic import DecisionSpec

    write_population(tmp_path, "O", _instances("b0", "s0") + [_pair("p0", "b0", "s0"),
                                                           {"type": "checkpoint", "instance_id": "b0", "decision": "d0"},
                                                           {"type": "checkpoint", "instance_id": "s0", "decision": "d0"}])
    write_rollout(tmp_path, RolloutSpec("base0", population=("O", "b0"), decisions=[
        DecisionSpec("d0", "wrong"), DecisionSpec("d1", "correct"), DecisionSpec("d2", "correct")]))
    write_rollout(tmp_path, RolloutSpec("sup0", population=("O", "s0"), intervention=_support("o1"),
                                        decisions=[DecisionSpec("d0", "correct")]))
    gains = _supported_group(score_corpus(tmp_path, resamples=0))["metrics"]
    assert gains["gain.correct"]["value"] == 1.0


def test_a_self_correction_does_not_change_the_scored_choice(tmp_path):
    from labrecord.scorers.synthetic import DecisionSpec

    write_population(tmp_path, "O", _instances("b0", "s0") + [_pair("p0", "b0", "s0")])
    write_rollout(tmp_path, RolloutSpec("base0", population=("O", "b0"), decisions=[DecisionSpec(outcome="wrong", then="correct")]))
    write_rollout(tmp_path, RolloutSpec("sup0", population=("O", "s0"), intervention=_support("o1"), decisions=[DecisionSpec()]))
    assert _supported_group(score_corpus(tmp_path, resamples=0))["metrics"]["gain.correct"]["value"] == 1.0


# -- delivery, agreement and substitution share (sec. 6.3) -------------------------------------

def _units(agreed=None, substituted=None, mode="assist"):
    from labrecord.scorers.oracle import SupportUnit

    return [SupportUnit("r", "decision", mode, agreed, substituted)]


def test_hand_checked_agreement_and_substitution():
    """Four assist branches: agree, disagree, agree, never delivered (no unit) → agreement
    2/4, delivery 3/4.  Two replace branches, one substituted → 1/2, agreement null."""
    from labrecord.scorers.metrics import measure, support_metrics

    assist = [("a", _units(True)), ("b", _units(False)), ("c", _units(True)), ("d", [])]
    m = support_metrics(assist, [("decision", "assist")])
    assert (measure(m["agreement"].units).num, measure(m["agreement"].units).den) == (2, 4)
    assert measure(m["delivery"].units).value == 3 / 4
    assert "substitution_share" not in m
    replace = [("a", _units(substituted=True, mode="replace")), ("b", _units(substituted=False, mode="replace"))]
    m = support_metrics(replace, [("decision", "replace")])
    assert measure(m["substitution_share"].units).value == 1 / 2
    assert measure(m["agreement"].units).value is None


@given(st.lists(st.one_of(st.none(), st.booleans()), min_size=1, max_size=30))
def test_substitution_share_is_the_count_over_branches(flags):
    """None marks an unresolved branch: the share is s/N once every branch is resolved,
    else null with bounds [s/N, (s+u)/N]."""
    from labrecord.scorers.metrics import measure, support_metrics

    rows = [(f"p{i}", None if f is None else _units(substituted=f, mode="replace")) for i, f in enumerate(flags)]
    estimate = measure(support_metrics(rows, [("decision", "replace")])["substitution_share"].units)
    s, u, n = sum(1 for f in flags if f), sum(1 for f in flags if f is None), len(flags)
    assert (estimate.lower, estimate.upper) == pytest.approx((s / n, (s + u) / n))
    assert estimate.value == (None if u else pytest.approx(s / n))


def test_scorer_agreement_and_substitution_from_stored_runs(tmp_path):
    """Stored runs: two decision:assist pairs, recommendation add(w10) (the answer), first
    native choices add(w10) and add(w100) → agreement 1/2; two decision:replace pairs,
    the committed add(w100) replaced by add(w10) in one, add(w10) by add(w10) in the other
    → substitution share 1/2, agreement null.  SQL and the Python reference agree."""
    from labrecord.scorers.corpus import score_reference
    from labrecord.scorers.synthetic import DecisionSpec

    w10, w100 = {"kind": "add", "object": "w10", "dest": "pan"}, {"kind": "add", "object": "w100", "dest": "pan"}
    records = _instances("b0", "b1", "s0", "s1", "r0", "r1")
    records += [_pair("p0", "b0", "s0"), _pair("p1", "b1", "s1")]
    records += [{**_pair(f"q{i}", f"b{i}", f"r{i}", "o2"), "mode": "replace"} for i in (0, 1)]
    write_population(tmp_path, "O", records)
    for i in (0, 1):
        write_rollout(tmp_path, RolloutSpec(f"base{i}", population=("O", f"b{i}")))
    assist = {"mode": "assist", "site": "decision", "payload": w10}
    for i, outcome in enumerate(("correct", "wrong")):
        write_rollout(tmp_path, RolloutSpec(f"sup{i}", population=("O", f"s{i}"), intervention=_support("o1"),
                                            decisions=[DecisionSpec(outcome=outcome, oracle=assist)]))
    for i, original in enumerate((w100, w10)):
        oracle = {"mode": "replace", "site": "decision", "original": original, "substituted": w10}
        write_rollout(tmp_path, RolloutSpec(f"rep{i}", population=("O", f"r{i}"),
                                            intervention={**_support("o2"), "mode": "replace"},
                                            decisions=[DecisionSpec(oracle=oracle)]))
    for result in (score_corpus(tmp_path, resamples=0), score_reference(tmp_path, resamples=0)):
        groups = {g["identity"]["intervention_mode"]: g["metrics"] for g in result["groups"]}
        assert groups["assist"]["agreement"]["value"] == 1 / 2
        assert groups["assist"]["delivery"]["value"] == 1
        assert groups["replace"]["substitution_share"]["value"] == 1 / 2
        assert groups["replace"]["agreement"]["value"] is None


# -- Replace scores the system's own output (sec. 6.2); support timing (sec. 6.3) -----------

W10 = {"kind": "add", "object": "w10", "dest": "pan"}
W100 = {"kind": "add", "object": "w100", "dest": "pan"}


def _replace_corpus(root, late: set[int] = frozenset()) -> None:
    """Three decision:replace pairs.  The system proposes (original) add(w100), add(w10),
    add(w100); the legal set is [add(w10)] and the Oracle substitutes add(w10) every time.
    Base branches choose wrong, right, wrong and complete only in pair 1; every supported
    branch completes.  ``late``: pairs whose support arrives after the first choice."""
    records = _instances("b0", "b1", "b2", "s0", "s1", "s2")
    records += [{"type": "oracle_pair", "pair_id": f"p{k}", "base": f"b{k}", "supported": f"s{k}", "mode": "replace",
                 "oracle": "contract-legal", "site": "decision"} for k in range(3)]
    write_population(root, "O", records)
    support = {"mode": "replace", "site": "decision", "oracle": "contract-legal", "branch": "supported"}
    for k, (own, base_outcome) in enumerate(((W100, "wrong"), (W10, "correct"), (W100, "wrong"))):
        write_rollout(root, RolloutSpec(f"base{k}", population=("O", f"b{k}"), physical=k == 1,
                                        decisions=[DecisionSpec(outcome=base_outcome)]))
        oracle = {"mode": "replace", "site": "decision", "original": own, "substituted": W10}
        write_rollout(root, RolloutSpec(f"sup{k}", population=("O", f"s{k}"), physical=True, intervention=support,
                                        decisions=[DecisionSpec(oracle=oracle, oracle_late=k in late)]))


def _replace_group(result: dict) -> dict:
    return next(g for g in result["groups"] if g["identity"]["intervention_mode"] == "replace")


def test_replace_reports_own_correctness_substitution_and_completion_gain(tmp_path):
    """own_correct = 1/3 (only pair 1's original add(w10) is legal); substitution share =
    2/3 (originals differing from the substitute); gain.completion = ((1−0) + (1−1) +
    (1−0))/3 = 2/3; gain.correct is not reported (the executed choice is the Oracle's:
    it would be 1 − base B_next = 2/3 by construction)."""
    _replace_corpus(tmp_path)
    m = _replace_group(score_corpus(tmp_path, resamples=0))["metrics"]
    assert (m["own_correct"]["num"], m["own_correct"]["den"]) == (1, 3)
    assert (m["substitution_share"]["num"], m["substitution_share"]["den"]) == (2, 3)
    assert m["gain.completion"]["value"] == pytest.approx(2 / 3)
    assert "gain.correct" not in m
    assert m["agreement"]["value"] is None


def test_support_delivered_after_the_choice_is_not_in_time(tmp_path):
    """Pair 2's substitution is recorded after its first choice: that pair is unresolved
    ("not delivered in time") — gain.completion lies in [(1 + 0 + 0)/3, (1 + 0 + 1)/3] —
    and the coverage counts it; the system's own output stays scorable (own_correct 1/3)."""
    _replace_corpus(tmp_path, late={2})
    group = _replace_group(score_corpus(tmp_path, resamples=0))
    m = group["metrics"]
    assert m["gain.completion"]["value"] is None
    assert (m["gain.completion.lower"]["num"], m["gain.completion.upper"]["num"]) == (1, 2)
    assert group["coverage"]["supports_not_delivered_in_time"] == 1
    assert m["own_correct"]["value"] == pytest.approx(1 / 3)


def test_assist_after_the_choice_does_not_count_as_agreement(tmp_path):
    """One decision:assist pair whose recommendation add(w10) came after the system had
    already chosen add(w10): agreement is unresolved [0, 1], not 1/1."""
    write_population(tmp_path, "O", _instances("b0", "s0") + [_pair("p0", "b0", "s0")])
    write_rollout(tmp_path, RolloutSpec("base0", population=("O", "b0")))
    oracle = {"mode": "assist", "site": "decision", "payload": W10}
    write_rollout(tmp_path, RolloutSpec("sup0", population=("O", "s0"), intervention=_support("o1"),
                                        decisions=[DecisionSpec(oracle=oracle, oracle_late=True)]))
    m = _supported_group(score_corpus(tmp_path, resamples=0))["metrics"]
    assert (m["agreement"]["value"], m["agreement.lower"]["value"], m["agreement.upper"]["value"]) == (None, 0.0, 1.0)


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=5))
def test_own_correct_is_the_share_of_legal_originals(originals):
    """own_correct counts the originals in the legal set, whatever was substituted."""
    from labrecord.scorers.metrics import measure, support_metrics
    from labrecord.scorers.oracle import SupportUnit

    rows = [(f"p{k}", [SupportUnit(f"r{k}", "decision", "replace", None, not legal, legal, in_time)])
            for k, (legal, in_time) in enumerate(originals)]
    estimate = measure(support_metrics(rows, [("decision", "replace")])["own_correct"].units)
    assert estimate.value == sum(legal for legal, _ in originals) / len(originals)


def test_a_branch_from_an_unverified_checkpoint_is_unresolved(tmp_path):
    """One decision:assist pair: base wrong, supported right (gain.correct 1 when verified).
    The supported branch's manifest records its d0 handoff as unverified: the pair is
    unresolved, gain.correct in [0, 1] — never 1.0 from an unverified start."""
    write_population(tmp_path, "O", _instances("b0", "s0") + [_pair("p0", "b0", "s0")])
    write_rollout(tmp_path, RolloutSpec("base0", population=("O", "b0"), decisions=[DecisionSpec(outcome="wrong")]))
    write_rollout(tmp_path, RolloutSpec("sup0", population=("O", "s0"), intervention=_support("o1"),
                                        handoffs=[{"decision": "select_weight", "verified": False}]))
    for result in (score_corpus(tmp_path, resamples=0), score_reference(tmp_path, resamples=0)):
        m = _supported_group(result)["metrics"]
        assert (m["gain.correct"]["value"], m["gain.correct.lower"]["value"], m["gain.correct.upper"]["value"]) == (None, 0.0, 1.0)
