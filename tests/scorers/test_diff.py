"""labrecord diff: episodes paired by identity, paired tables, unresolved pairs, attribution."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.scorers.diff import diff_paths, explain, pair_episodes
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout
from labrecord.store import connect, ingest_runs

POP = "pop"


def _diff(a: str, b: str, **options):
    """The constructed runs carry no measurements, so they are compared unaudited (an audit
    would mark every one unresolved: nothing to replay)."""
    options.setdefault("audit", False)
    options.setdefault("resamples", 0)
    return diff_paths(a, b, **options)


def _registry(root: Path, instances: list[str]) -> None:
    write_population(root, POP, [r for i in instances for r in (
        {"type": "instance", "instance_id": i}, {"type": "checkpoint", "instance_id": i, "decision": "select_weight"})])


def _run(root: Path, run_id: str, system: str, instance: str, correct: bool, physical: bool, **more) -> None:
    write_rollout(root, RolloutSpec(run_id, system=system, population=(POP, instance), physical=physical,
                                    decisions=[DecisionSpec("select_weight", "correct" if correct else "wrong")], **more))


def _two_policies(root: Path) -> None:
    """8 registered instances; A right at i0–i6, B right at i0, i1 (B_next); both complete
    at i0–i3 (completion); B's i7 ends in a service fault, B has no run of i6."""
    instances = [f"i{k}" for k in range(8)]
    _registry(root, instances)
    for k, inst in enumerate(instances):
        _run(root, f"a{k}", "a", inst, correct=k <= 6, physical=k <= 3)
        if k == 6:
            continue
        _run(root, f"b{k}", "b", inst, correct=k <= 1, physical=k <= 3, validity_fault=k == 7)


def test_two_policies_by_hand(tmp_path):
    """B_next over the 6 resolved pairs i0–i5: both right i0, i1; A only i2–i5 → table
    (2, 4, 0, 0).  Unresolved: i6 (B missing, A right) and i7 (B faulted, A wrong).
    Bounds of B − A over N = 8: resolved sum −4; i6 adds −1 or 0, i7 adds 0 or +1 →
    [−5/8, −3/8].  McNemar range: a_only 4 + (0 or 1) against b_only 0 + (0 or 1):
    (4, 0) 2/16 = 0.125, (5, 0) 2/32 = 0.0625, (4, 1) 2·6/32 = 0.375, (5, 1) 2·7/64 = 0.21875."""
    _two_policies(tmp_path)
    result = _diff(f"a@{tmp_path}", f"b@{tmp_path}")
    assert result["compared"] == ["system_name"]
    b_next = result["binary"]["B_next"]
    assert (b_next["both"], b_next["a_only"], b_next["b_only"], b_next["neither"], b_next["unresolved"]) == (2, 4, 0, 0, 2)
    assert b_next["difference"] is None and b_next["mcnemar_p"] is None
    assert (b_next["lower"], b_next["upper"]) == pytest.approx((-5 / 8, -3 / 8))
    assert b_next["mcnemar_p_range"] == pytest.approx([0.0625, 0.375])
    physical = result["binary"]["completion.physical"]
    assert (physical["both"], physical["a_only"], physical["b_only"], physical["neither"]) == (4, 0, 0, 2)
    reasons = {entry["episode"]: entry["reason"] for entry in result["unresolved_pairs"]}
    assert reasons["pop/i6#0"] == "B: registered, no run"
    assert "service_fault" in reasons["pop/i7#0"]
    assert result["one_sided"] == []
    row = result["attribution"][0]
    assert row["field"] == "system_name" and row["pairs_differing"] == 6 and row["flips"] == 4
    # clean completion needs the legal choice too: it flips at i2, i3 (complete in both, B chose wrong)
    assert row["flips_by_outcome"] == {"B_next": 4, "completion.clean": 2}
    assert result["explanation"]["verdict"] == "attributed" and result["explanation"]["cause"] == "system_name"


def test_resolved_pairs_give_mcnemar_and_newcombe(tmp_path):
    """Without the missing and faulted instances: table (2, 4, 0, 0), n = 6, B − A = −4/6,
    exact McNemar 2·(1/16) = 0.125."""
    instances = [f"i{k}" for k in range(6)]
    _registry(tmp_path, instances)
    for k, inst in enumerate(instances):
        _run(tmp_path, f"a{k}", "a", inst, correct=True, physical=True)
        _run(tmp_path, f"b{k}", "b", inst, correct=k <= 1, physical=True)
    result = _diff(f"a@{tmp_path}", f"b@{tmp_path}")
    b_next = result["binary"]["B_next"]
    assert b_next["difference"] == pytest.approx(-4 / 6)
    assert b_next["mcnemar_p"] == 0.125
    lo, hi = b_next["ci"]
    assert -1 <= lo < -4 / 6 < hi < 0


def test_episodes_without_a_partner_say_why(tmp_path):
    """An instance only A ran and B never registered: missing on B.  A run of one instance
    whose layout differs: identity differs in layout_hash."""
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    write_rollout(a_dir, RolloutSpec("r0", system="s", population=("p", "i0"), physical=True))
    write_rollout(a_dir, RolloutSpec("r1", system="s", population=("p", "i1"), physical=True))
    write_rollout(b_dir, RolloutSpec("r0", system="s", population=("p", "i0"), physical=False))
    result = _diff(str(a_dir), str(b_dir))
    assert [(e["side"], e["episode"]) for e in result["one_sided"]] == [("A", "p/i1#0")]
    assert result["one_sided"][0]["reason"].startswith("missing on side B")
    assert result["binary"]["completion.physical"]["a_only"] == 1
    assert result["explanation"]["verdict"] == "unexplained"  # nothing recorded differs, yet an outcome flips


def test_a_differing_instance_field_is_named(tmp_path):
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    write_rollout(a_dir, RolloutSpec("r0", population=("p", "i0"), physical=True))
    write_rollout(b_dir, RolloutSpec("r0", population=("p", "i0"), physical=True))
    import json

    manifest = json.loads((b_dir / "r0" / "run.json").read_text())
    manifest["assets"]["layout_hash"] = "sha256:other"
    (b_dir / "r0" / "run.json").write_text(json.dumps(manifest))
    result = _diff(str(a_dir), str(b_dir))
    assert {e["side"] for e in result["one_sided"]} == {"A", "B"}
    assert "identity differs in layout_hash (None vs 'sha256:other')" in result["one_sided"][0]["reason"].replace(
        "unknown", "None")


def _harness_pair(root: Path, a: dict, b: dict, flips: int, n: int = 6) -> tuple[str, str]:
    a_dir, b_dir = root / "a", root / "b"
    for side, harness in ((a_dir, a), (b_dir, b)):
        _registry(side, [f"i{k}" for k in range(n)])
        for k in range(n):
            physical = not (side == b_dir and k < flips)
            _run(side, f"r{k}", "pi05", f"i{k}", correct=True, physical=physical, harness=harness)
    return str(a_dir), str(b_dir)


def test_explain_attributes_the_one_differing_setting(tmp_path):
    a, b = _harness_pair(tmp_path, {"actions_per_query": 8, "chunk_length": 8}, {"actions_per_query": 1, "chunk_length": 8},
                         flips=3)
    result = _diff(a, b)
    assert result["compared"] == ["actions_per_query"]
    verdict = result["explanation"]
    assert verdict["verdict"] == "attributed" and verdict["cause"] == "actions_per_query"
    assert verdict["flipped_pairs"] == 3 and verdict["resolved_pairs"] == 6
    assert "renderer" in verdict["unknown_fields"]  # not recorded: cannot be ruled out


def test_explain_refuses_to_pick_between_settings_that_changed_together(tmp_path):
    a, b = _harness_pair(tmp_path, {"actions_per_query": 8, "renderer": "egl"}, {"actions_per_query": 1, "renderer": "osmesa"},
                         flips=2)
    verdict = _diff(a, b)["explanation"]
    assert verdict["verdict"] == "confounded" and verdict["cause"] is None
    assert set(verdict["candidates"]) == {"actions_per_query", "renderer"}


def test_explain_without_flips(tmp_path):
    a, b = _harness_pair(tmp_path, {"actions_per_query": 8}, {"actions_per_query": 4}, flips=0)
    verdict = _diff(a, b)["explanation"]
    assert verdict["verdict"] == "no_flips" and verdict["differing"] == ["actions_per_query"]


def test_unknown_fields_never_match_a_known_value(tmp_path):
    """An old run without a harness record leaves actions_per_query unknown (null), so it is
    compared with, not paired as equal to, a run that records 1."""
    a, b = _harness_pair(tmp_path, {}, {"actions_per_query": 1}, flips=1)
    result = _diff(a, b)
    assert result["compared"] == ["actions_per_query"]
    assert result["attribution"][0]["a_values"] == ["unknown"] and result["attribution"][0]["unknown_pairs"] == 6


def test_compare_names_must_be_identity_fields(tmp_path):
    _two_policies(tmp_path)
    with pytest.raises(LabrecordError, match="not an episode identity field"):
        _diff(f"a@{tmp_path}", f"b@{tmp_path}", compare=["colour"])
    with pytest.raises(LabrecordError, match="no such runs folder"):
        _diff(str(tmp_path / "nope"), str(tmp_path))


def test_episode_identity_view_leaves_unrecorded_fields_null(tmp_path):
    write_rollout(tmp_path, RolloutSpec("old", population=("p", "i0")))
    write_rollout(tmp_path, RolloutSpec("new", population=("p", "i0"), harness={"actions_per_query": 2, "cameras": ["front"],
                                                                                 "image_size": [224, 224]}))
    con = connect(None)
    ingest_runs(tmp_path, con)
    rows = dict((r[0], r[1:]) for r in con.execute(
        "SELECT run_id, actions_per_query, cameras, image_size, control_hz, simulator, asset_revision "
        "FROM episode_identity").fetchall())
    assert rows["old"] == (None, None, None, 10.0, "mujoco", None)
    assert rows["new"] == (2, ["front"], [224, 224], 10.0, "mujoco", None)


def test_continuous_metric_paired_bootstrap_follows_the_seed(tmp_path):
    """Episode duration differs per pair; same seed same interval, another seed another."""
    instances = [f"i{k}" for k in range(5)]
    _registry(tmp_path, instances)
    for k, inst in enumerate(instances):
        _run(tmp_path, f"a{k}", "a", inst, correct=True, physical=True)
        write_rollout(tmp_path, RolloutSpec(f"b{k}", system="b", population=(POP, inst), physical=True,
                                            decisions=[DecisionSpec("select_weight", "correct")] + [DecisionSpec("later")] * k))
    one = _diff(f"a@{tmp_path}", f"b@{tmp_path}", seed=1, resamples=300)["continuous"]["duration_s"]
    again = _diff(f"a@{tmp_path}", f"b@{tmp_path}", seed=1, resamples=300)["continuous"]["duration_s"]
    other = _diff(f"a@{tmp_path}", f"b@{tmp_path}", seed=2, resamples=300)["continuous"]["duration_s"]
    assert one == again and one["ci"] != other["ci"]
    # each extra decision adds 1.5 s (0.5 s to choose, 1 s to the next): mean extra (0+1+2+3+4)/5 · 1.5 = 3 s
    assert one["difference"] == pytest.approx(3.0)
    assert one["ci"][0] <= 3.0 <= one["ci"][1]


def _evaluation(name: str, system: str, outcomes: list[bool | None]):
    """Episodes built in memory (no files): instance k has B_next ``outcomes[k]``, None
    for an unresolved run."""
    from labrecord.scorers.diff import IDENTITY_KEY, Episode, Evaluation

    episodes = []
    for k, y in enumerate(outcomes):
        identity = dict.fromkeys(IDENTITY_KEY)
        identity.update(population_name=POP, instance_id=f"i{k}", episode=0, system_name=system)
        episodes.append(Episode(f"{system}{k}", identity, {"B_next": y} if y is not None else {},
                                unresolved="status aborted" if y is None else None))
    return Evaluation(name, episodes)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([True, False, None]), st.sampled_from([True, False, None])),
                min_size=1, max_size=12))
def test_paired_table_counts_every_pair_once(outcomes):
    """Random paired outcomes (None: unresolved run): the table equals the hand count over
    resolved pairs, every other pair is unresolved, and swapping the sides swaps A only /
    B only and mirrors the difference and its bounds."""
    from labrecord.scorers.diff import diff_evaluations

    a = _evaluation("A", "a", [ya for ya, _ in outcomes])
    b = _evaluation("B", "b", [yb for _, yb in outcomes])
    forward = diff_evaluations(a, b, resamples=0)["binary"].get("B_next")
    backward = diff_evaluations(b, a, resamples=0)["binary"].get("B_next")
    if all(ya is None and yb is None for ya, yb in outcomes):
        return  # nothing measures B_next
    resolved = [(ya, yb) for ya, yb in outcomes if ya is not None and yb is not None]
    expected = [sum(1 for pair in resolved if pair == cell) for cell in
                ((True, True), (True, False), (False, True), (False, False))]
    assert [forward[k] for k in ("both", "a_only", "b_only", "neither")] == expected
    assert forward["unresolved"] == len(outcomes) - len(resolved)
    assert (backward["a_only"], backward["b_only"]) == (forward["b_only"], forward["a_only"])
    assert backward["lower"] == pytest.approx(-forward["upper"]) and backward["upper"] == pytest.approx(-forward["lower"])
    if forward["unresolved"] == 0:
        assert forward["difference"] == pytest.approx(-backward["difference"])
        assert backward["mcnemar_p"] == forward["mcnemar_p"]
    else:
        assert forward["difference"] is None and forward["lower"] <= forward["upper"]


def test_explain_over_a_pairing_without_resolved_pairs():
    from labrecord.scorers.diff import Evaluation

    pairing = pair_episodes(Evaluation("a", []), Evaluation("b", []))
    assert explain(pairing, [])["verdict"] == "no_flips"


def test_an_invalid_run_makes_its_pair_unresolved(tmp_path):
    """B's run of i1 has a cut events log: it fails validation, keeps its invalid_runs row and
    its pair is unresolved with the validation reason (never a policy failure, never dropped)."""
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    for side in (a_dir, b_dir):
        _registry(side, ["i0", "i1"])
        for k in range(2):
            _run(side, f"r{k}", "pi05", f"i{k}", correct=True, physical=True)
    with open(b_dir / "r1" / "events.jsonl", "ab") as fh:
        fh.write(b'{"seq": 0, "t": 99.0, "type": "episode_start", "episode": 1}\n')  # seq goes back
    result = _diff(str(a_dir), str(b_dir))
    assert result["pairs"] == {"resolved": 1, "unresolved": 1}
    (entry,) = result["unresolved_pairs"]
    assert entry["episode"] == "pop/i1#0" and entry["reason"].startswith("B: invalid run: ")
    b_next = result["binary"]["B_next"]
    assert (b_next["both"], b_next["unresolved"], b_next["lower"], b_next["upper"]) == (1, 1, -0.5, 0.0)


def test_a_snapshot_is_a_side(tmp_path):
    from labrecord.store import write_snapshot

    runs = tmp_path / "runs"
    _two_policies(runs)
    con = connect(None)
    ingest_runs(runs, con)
    write_snapshot(con, tmp_path / "snap")
    from_snapshot = _diff(f"a@{tmp_path / 'snap'}", f"b@{tmp_path / 'snap'}")
    from_runs = _diff(f"a@{runs}", f"b@{runs}")
    assert from_snapshot["binary"] == from_runs["binary"] and from_snapshot["attribution"] == from_runs["attribution"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["egl", "osmesa", None]), st.booleans()), max_size=8),
       st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["egl", "osmesa", None]), st.booleans()), max_size=8))
def test_every_episode_is_paired_or_listed_once(side_a, side_b):
    """Random instances, renderers and unresolved runs on each side: every episode is in
    exactly one pair or in the one-sided list, and paired sides agree on every field
    that is paired on (the resolving fields at least, for unresolved pairs)."""
    from labrecord.scorers.diff import IDENTITY_KEY, RESOLVING_FIELDS, Episode, Evaluation

    def evaluation(name: str, rows: list) -> Evaluation:
        episodes = []
        for k, (instance, renderer, unresolved) in enumerate(rows):
            identity = dict.fromkeys(IDENTITY_KEY)
            identity.update(population_name=POP, instance_id=f"i{instance}", episode=0, renderer=renderer)
            episodes.append(Episode(f"{name}{k}", identity, {"B_next": True},
                                    unresolved="status aborted" if unresolved else None))
        return Evaluation(name, episodes)

    a, b = evaluation("a", side_a), evaluation("b", side_b)
    pairing = pair_episodes(a, b)
    seen_a = [p.a.run_id for p in pairing.pairs if p.a is not None] + [e["run_id"] for e in pairing.one_sided if e["side"] == "A"]
    seen_b = [p.b.run_id for p in pairing.pairs if p.b is not None] + [e["run_id"] for e in pairing.one_sided if e["side"] == "B"]
    assert sorted(seen_a) == sorted(e.run_id for e in a.episodes)
    assert sorted(seen_b) == sorted(e.run_id for e in b.episodes)
    for pair in pairing.pairs:
        if pair.a is None or pair.b is None:
            continue
        fields = pairing.paired_on if pair.resolved else [f for f in RESOLVING_FIELDS if f in pairing.paired_on]
        assert all(not pair.differs(f) for f in fields)
