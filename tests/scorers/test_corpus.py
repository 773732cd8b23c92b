"""The SQL scorers and the Python reference agree; groups, missing members, refusals."""
from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.scorers.corpus_strategies import corpus
from labrecord.errors import LabrecordError
from labrecord.scorers.corpus import ReferenceSource, SqlSource, score_corpus, score_reference
from labrecord.scorers.metrics import UNIT_KINDS
from labrecord.scorers.reference import load_reference
from labrecord.scorers.synthetic import DecisionSpec, GeometrySpec, RolloutSpec, write_population, write_rollout
from labrecord.store import connect, ingest_runs


def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _sorted_units(units):
    return sorted(units, key=lambda u: tuple("" if x is None else str(round(x, 9) if isinstance(x, float) else x) for x in u))




@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(corpus())
def test_sql_and_reference_agree(spec):
    rollouts, population, cut = spec
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "runs"
        for rollout in rollouts:
            write_rollout(root, rollout)
        for run_id in cut:
            _cut_events(root / run_id)
        write_population(root, "pop", population)
        con = connect(None)
        ingest_runs(root, con)
        sql, ref = SqlSource(con), ReferenceSource(load_reference(root))
        for kind in UNIT_KINDS:
            assert _close(_sorted_units(sql.units(kind)), _sorted_units(ref.units(kind))), kind
        assert sql.unresolved() == ref.unresolved()
        assert sql.whole_run() == ref.whole_run()
        assert sql.unverified() == ref.unverified()
        assert sql.episode_reasons() == ref.episode_reasons()
        assert sql.invalid_runs() == ref.invalid_runs()
        try:
            # repeated runs of a member are averaged, so random registries score instead of refusing
            expected = score_reference(root, seed=5, resamples=30, repeats="mean")
        except LabrecordError as error:
            with pytest.raises(LabrecordError, match=str(error).split(":")[0]):
                score_corpus(con, seed=5, resamples=30, repeats="mean")
            return
        assert _close(score_corpus(con, seed=5, resamples=30, repeats="mean"), expected)


def _write(root: Path, *specs: RolloutSpec) -> None:
    for spec in specs:
        write_rollout(root, spec)


def _bounds(metrics, name):
    return ((metrics[f"{name}.lower"]["num"], metrics[f"{name}.lower"]["den"]),
            (metrics[f"{name}.upper"]["num"], metrics[f"{name}.upper"]["den"]))


def test_missing_member_is_unresolved_not_a_failure(tmp_path):
    """3 registered instances, 2 run and complete, 1 missing: completion is not 2/3 but
    unresolved, bounded by 2/3 (the missing one would fail) and 3/3 (it would succeed)."""
    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": i} for i in ("i0", "i1", "i2")])
    _write(root, RolloutSpec("r0", population=("pop", "i0"), physical=True),
           RolloutSpec("r1", population=("pop", "i1"), physical=True))
    group = score_corpus(root, resamples=0)["groups"][0]
    assert group["coverage"]["missing"] == [{"population": "pop", "instance_id": "i2"}]
    m = group["metrics"]
    assert m["completion.valid"]["value"] is None and m["completion.valid"]["ci"] is None
    assert _bounds(m, "completion.valid") == ((2, 3), (3, 3))
    assert _bounds(m, "reach.select_weight") == ((2, 3), (3, 3))
    assert group["coverage"]["completion.valid"] == {"resolved": 2, "registered": 3}


def _retask(run: Path, task_id: str) -> None:
    import json

    manifest = json.loads((run / "run.json").read_text())
    manifest["task"]["task_id"] = task_id
    (run / "run.json").write_text(json.dumps(manifest))


def test_a_two_task_population_expects_each_member_in_its_own_task(tmp_path):
    """Population pop registers i0, i1 for task A and i2 for task B; runs: i0 (A, complete)
    and i2 (B, complete).  Group A's members are i0, i1: i1 missing, completion bounded by
    1/2 and 2/2; group B's member is i2 alone: completion 1/1.  (Counting every member in
    every group would make group A miss i1, i2 (bounds 1/3, 3/3) and B miss i0, i1.)
    The same holds in the SQL scorer and the reference."""
    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": "i0", "task_id": "A"},
                                    {"type": "instance", "instance_id": "i1", "task_id": "A"},
                                    {"type": "instance", "instance_id": "i2", "task_id": "B"}])
    _retask(write_rollout(root, RolloutSpec("r0", population=("pop", "i0"), physical=True)), "A")
    _retask(write_rollout(root, RolloutSpec("r2", population=("pop", "i2"), physical=True)), "B")
    db = tmp_path / "c.duckdb"
    ingest_runs(root, db)
    con = connect(db)
    try:
        sql = score_corpus(con, resamples=0)
    finally:
        con.close()
    for scored in (sql, score_corpus(root, resamples=0)):
        groups = {g["identity"]["task_id"]: g for g in scored["groups"]}
        assert groups["A"]["coverage"]["missing"] == [{"population": "pop", "instance_id": "i1"}]
        assert _bounds(groups["A"]["metrics"], "completion.valid") == ((1, 2), (2, 2))
        assert groups["B"]["coverage"]["missing"] == []
        assert groups["B"]["metrics"]["completion.valid"]["value"] == 1.0


def test_members_with_no_task_named_belong_to_every_task(tmp_path):
    """i0, i1 registered with no task; one run of i0 under task A: group A still misses i1."""
    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": i} for i in ("i0", "i1")])
    _retask(write_rollout(root, RolloutSpec("r0", population=("pop", "i0"), physical=True)), "A")
    (group,) = score_corpus(root, resamples=0)["groups"]
    assert group["coverage"]["missing"] == [{"population": "pop", "instance_id": "i1"}]


def test_invalid_run_is_an_unresolved_member_with_its_reason(tmp_path):
    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": i} for i in ("i0", "i1")])
    _write(root, RolloutSpec("r0", population=("pop", "i0"), physical=True),
           RolloutSpec("r1", population=("pop", "i1"), physical=True))
    with open(root / "r1" / "events.jsonl", "ab") as fh:
        fh.write(b'{"seq": 0, "t": 99.0, "type": "episode_start", "episode": 1}\n')  # seq goes back
    group = score_corpus(root, resamples=0)["groups"][0]
    assert group["coverage"]["missing"] == []
    (entry,) = group["coverage"]["unresolved_runs"]
    assert entry["run_id"] == "r1" and "events.jsonl" in entry["reason"]
    assert _bounds(group["metrics"], "completion.valid") == ((1, 2), (2, 2))


def test_one_group_refuses_differing_evaluation_versions(tmp_path):
    root = tmp_path / "runs"
    _write(root, RolloutSpec("r0", evaluation_version="1"), RolloutSpec("r1", evaluation_version="2"))
    assert len(score_corpus(root, resamples=0)["groups"]) == 2
    with pytest.raises(LabrecordError, match="evaluation_version differs"):
        score_corpus(root, resamples=0, one_group=True)


def test_one_group_pools_equal_identities(tmp_path):
    root = tmp_path / "runs"
    _write(root, RolloutSpec("r0", physical=True), RolloutSpec("r1"))
    (group,) = score_corpus(root, resamples=0, one_group=True)["groups"]
    assert group["metrics"]["completion.valid"]["value"] == 0.5


def test_service_fault_is_unresolved_and_stays_registered(tmp_path):
    root = tmp_path / "runs"
    _write(root, RolloutSpec("r0", physical=True), RolloutSpec("r1", physical=True, validity_fault=True))
    (group,) = score_corpus(root, resamples=0)["groups"]
    assert group["coverage"]["invalid_runs"] == ["r1"]
    assert group["coverage"]["unresolved_runs"][0]["reason"].startswith("service_fault from policy-server")
    assert group["metrics"]["completion.valid"]["value"] is None
    assert _bounds(group["metrics"], "completion.valid") == ((1, 2), (2, 2))


def test_same_seed_same_numbers_other_seed_other_numbers(tmp_path):
    root = tmp_path / "runs"
    _write(root, *(RolloutSpec(f"r{i}", physical=i % 3 == 0, decisions=[DecisionSpec(outcome="correct" if i % 2 else "wrong")],
                               geometry=[GeometrySpec(p_hat=[0.1 * i, 0.0, 1.0], p_ref=[0.0, 0.0, 1.0])]) for i in range(30)))
    con = connect(None)
    ingest_runs(root, con)
    first = score_corpus(con, seed=1, resamples=200)
    assert score_corpus(con, seed=1, resamples=200) == first
    other = score_corpus(con, seed=2, resamples=200)
    assert other["groups"][0]["metrics"]["e_p"]["ci"] != first["groups"][0]["metrics"]["e_p"]["ci"]
    assert other["groups"][0]["metrics"]["completion.valid"]["value"] == first["groups"][0]["metrics"]["completion.valid"]["value"]


def test_snapshot_scores_like_the_corpus(tmp_path):
    from labrecord.store import write_snapshot

    root = tmp_path / "runs"
    write_population(root, "pop", [{"type": "instance", "instance_id": "i0"}, {"type": "checkpoint", "instance_id": "i0", "decision": "select_weight"}])
    _write(root, RolloutSpec("r0", population=("pop", "i0"), physical=True), RolloutSpec("r1", system="groot"))
    con = connect(tmp_path / "c.duckdb")
    ingest_runs(root, con)
    write_snapshot(con, tmp_path / "snap")
    assert score_corpus(tmp_path / "snap", seed=3, resamples=50, parquet=True) == score_corpus(con, seed=3, resamples=50)


def _cut_events(run_dir: Path) -> None:
    """Cut the events log mid-line, as a crashed writer leaves it."""
    data = (run_dir / "events.jsonl").read_bytes()
    (run_dir / "events.jsonl").write_bytes(data[: len(data) // 2])


def test_without_a_registry_invalid_runs_stay_members(tmp_path):
    """6 runs of one system, no populations/; r1..r5 have a cut events log.  Dropping them
    printed completion.valid 100 % (1/1); they are 5 unresolved members of 6: null, with
    bounds 1/6 (all five would fail) and 6/6."""
    root = tmp_path / "runs"
    for k in range(6):
        write_rollout(root, RolloutSpec(f"r{k}", physical=True))
    for k in range(1, 6):
        _cut_events(root / f"r{k}")
    for source in (root, _ingested(root, tmp_path / "c.duckdb")):
        result = score_corpus(source, resamples=0)
        (group,) = result["groups"]
        m = group["metrics"]
        assert m["completion.valid"]["value"] is None
        assert (m["completion.valid.lower"]["num"], m["completion.valid.lower"]["den"]) == (1, 6)
        assert (m["completion.valid.upper"]["num"], m["completion.valid.upper"]["den"]) == (6, 6)
        assert group["coverage"]["invalid_runs"] == ["r1", "r2", "r3", "r4", "r5"]
        assert all("events.jsonl" in r["reason"] for r in group["coverage"]["unresolved_runs"])
        assert result["unassigned_invalid_runs"] == []


def _ingested(root: Path, db: Path) -> Path:
    con = connect(db)
    ingest_runs(root, con)
    con.close()
    return db


def test_unreadable_run_json_is_listed_outside_every_group(tmp_path):
    root = tmp_path / "runs"
    _write(root, RolloutSpec("r0", physical=True), RolloutSpec("r1"))
    (root / "r1" / "run.json").write_bytes(b"{not json")
    result = score_corpus(root, resamples=0)
    (group,) = result["groups"]
    assert group["coverage"]["runs"] == 1 and group["metrics"]["completion.valid"]["value"] == 1.0
    (entry,) = result["unassigned_invalid_runs"]
    assert entry["run_id"] is None and entry["run_dir"].endswith("r1") and "run.json" in entry["reason"]


# -- resolution per episode (sec. 7.4) ---------------------------------------------------------

def _two_episodes(root: Path, run_id: str, *, second: str, status: str) -> Path:
    """A run whose episode 0 completes; episode 1 is ``complete`` too, carries a service
    ``fault``, or is ``cut`` (no episode_end: the log stops inside it)."""
    from labrecord.examples import example_manifest
    from labrecord.models import EpisodeEnd, EpisodeStart, Validity
    from labrecord.rundir import RunWriter

    run = RunWriter.create(root, example_manifest(run_id))
    for episode in (0, 1):
        run.emit(EpisodeStart, t=10.0 * episode, episode=episode)
        if episode == 1 and second == "fault":
            run.append(Validity(seq=run.next_seq, t=10.0 * episode + 1, kind="service_fault", source="policy-server"))
        if episode == 0 or second != "cut":
            run.emit(EpisodeEnd, t=10.0 * episode + 2, episode=episode, reason="success", physical_complete=True,
                     valid_complete=True)
    run.close(status)
    return run.dir


@pytest.mark.parametrize("second, status", [("fault", "service_fault"), ("cut", "running"), ("cut", "aborted")])
def test_a_fault_or_a_cut_leaves_only_that_episode_unresolved(tmp_path, second, status):
    """Episode 0 completed, episode 1 faulted or was cut: completion.valid keeps episode 0
    (1 of 1 resolved success) and bounds the run at [1/2, 2/2] — the run's completed
    episode is no longer thrown away with it."""
    _two_episodes(tmp_path, "r0", second=second, status=status)
    for result in (score_corpus(tmp_path, resamples=0), score_reference(tmp_path, resamples=0)):
        (group,) = result["groups"]
        m = group["metrics"]
        assert (m["completion.valid"]["num"], m["completion.valid"]["den"], m["completion.valid"]["value"]) == (1, 1, None)
        assert (m["completion.valid.lower"]["value"], m["completion.valid.upper"]["value"]) == (0.5, 1.0)
        assert group["coverage"]["completion.valid"] == {"resolved": 1, "registered": 2}


def test_a_run_not_marked_complete_keeps_its_finished_episodes(tmp_path):
    """Both episodes ended; the run was left ``running`` (the writer never closed it):
    completion.valid = 2/2, final."""
    _two_episodes(tmp_path, "r0", second="complete", status="running")
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    assert group["metrics"]["completion.valid"]["value"] == 1.0


# -- one rule for repeats ------------------------------------------------------------------------

def _repeated(root: Path) -> None:
    """Checkpoint member i0 ran twice (correct, wrong), i1 once (correct)."""
    write_population(root, "J", [{"type": "checkpoint", "instance_id": i, "decision": "select_weight"} for i in ("i0", "i1")])
    _write(root, RolloutSpec("a", population=("J", "i0")), RolloutSpec("b", population=("J", "i0"),
                                                                        decisions=[DecisionSpec(outcome="wrong")]),
           RolloutSpec("c", population=("J", "i1")))


def test_repeated_runs_of_one_member_are_refused_naming_both(tmp_path):
    _repeated(tmp_path)
    with pytest.raises(LabrecordError, match=r"runs 'a' and 'b' both ran member 'i0' of population 'J'.*--repeats mean"):
        score_corpus(tmp_path, resamples=0)


def test_repeats_mean_averages_within_the_member_first(tmp_path):
    """i0 averages (1 + 0)/2 = 0.5, i1 is 1: B_next = (0.5 + 1)/2 = 0.75 over 2 members
    (not 2/3 over 3 runs); the interval is a bootstrap over the 2 members."""
    _repeated(tmp_path)
    (group,) = score_corpus(tmp_path, resamples=200, repeats="mean")["groups"]
    b = group["metrics"]["B_next"]
    assert (b["value"], b["num"], b["den"], b["n"]) == (0.75, 1.5, 2, 2)
    lo, hi = b["ci"]
    assert 0.5 <= lo <= 0.75 <= hi <= 1.0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=1, max_size=3), min_size=1, max_size=4))
def test_member_mean_is_the_mean_of_member_means(members):
    from labrecord.scorers.metrics import Unit, average_within_members, measure

    units = [Unit(f"member:J/i{k}", float(x), 1.0) for k, runs in enumerate(members) for x in runs]
    expected = sum(sum(runs) / len(runs) for runs in members) / len(members)
    assert math.isclose(measure(average_within_members(units)).value, expected)


# -- intervals --------------------------------------------------------------------------------

def test_one_cluster_gets_no_interval_and_says_why(tmp_path):
    """One run: completion.valid 1/1 is final, but one cluster says nothing of its spread —
    ci null with a reason, not [1, 1] or a Wilson band around one run."""
    _write(tmp_path, RolloutSpec("r0", physical=True))
    (group,) = score_corpus(tmp_path, resamples=100)["groups"]
    metric = group["metrics"]["completion.valid"]
    assert metric["value"] == 1.0 and metric["ci"] is None
    assert "one cluster" in metric["ci_reason"]


def test_wilson_fallback_uses_integer_counts(tmp_path):
    """Two runs of two failed episodes each: every cluster has share 0, the bootstrap
    collapses, and the interval is Wilson over 0 of 2 runs: [0, z²/(2+z²)] = [0, 0.658]."""
    from labrecord.scorers.metric import wilson

    for run_id in ("r0", "r1"):
        _two_episodes(tmp_path, run_id, second="complete", status="complete")
    # rewrite both episode ends as failures
    for run_dir in tmp_path.iterdir():
        path = run_dir / "events.jsonl"
        path.write_text(path.read_text().replace('"physical_complete":true', '"physical_complete":false'))
    (group,) = score_corpus(tmp_path, resamples=200)["groups"]
    assert group["metrics"]["completion.physical"]["ci"] == wilson(0, 2)


# -- unaudited is not unresolved (sec. 7.4, 8.4) ------------------------------------------------

def test_events_only_runs_are_scored_unaudited_and_missing_streams_stay_refused(tmp_path):
    """r0 declares no measurement stream: the audit replays nothing, the run is scored from
    its events (completion 1/1 of it) and counted unaudited.  r1 declares a stream but has no
    measurements.parquet (as if deleted): the audit refuses it, so it stays unresolved —
    deleting a file never turns a refused run into a scored one.  Totals: [1/2, 2/2]."""
    from labrecord.store import open_source
    from labrecord.scorers.corpus import audit_corpus

    _write(tmp_path, RolloutSpec("r0", physical=True, measurements="none"), RolloutSpec("r1", physical=True))
    con, _, _ = open_source(tmp_path)
    verdicts = {v["run_id"]: v for v in audit_corpus(con)}
    assert verdicts["r0"]["ok"] and not verdicts["r0"]["audited"]
    assert not verdicts["r1"]["ok"] and verdicts["r1"]["audited"]
    (group,) = score_corpus(con, resamples=0)["groups"]
    m = group["metrics"]
    assert (m["completion.valid.lower"]["value"], m["completion.valid.upper"]["value"]) == (0.5, 1.0)
    assert group["coverage"]["audited"] == {"audited": 0, "runs": 2}
    assert [r["run_id"] for r in group["coverage"]["unresolved_runs"]] == ["r1"]


def test_the_corpus_audit_on_worker_processes_gives_the_same_verdicts(tmp_path, monkeypatch):
    """The verdicts (ok, audited, reason, in order) do not depend on ``jobs``: r0 replays
    nothing (no stream), r1 lacks its declared measurements (refused)."""
    import duckdb

    from labrecord import parallel
    from labrecord.scorers import corpus as corpus_module
    from labrecord.store import open_source

    _write(tmp_path, RolloutSpec("r0", physical=True, measurements="none"), RolloutSpec("r1", physical=True))
    monkeypatch.setattr(parallel, "POOL_THRESHOLD", 1)
    verdicts = []
    for jobs in (1, 2):
        con, _, _ = open_source(tmp_path)
        assert isinstance(con, duckdb.DuckDBPyConnection)
        verdicts.append([(v["run_id"], v["ok"], v["audited"], v["reason"]) for v in corpus_module.audit_corpus(con, jobs=jobs)])
        con.close()
    assert verdicts[0] == verdicts[1]
    assert [v[:3] for v in verdicts[0]] == [("r0", True, False), ("r1", False, True)]


# -- identity includes the bench revisions and the contract (sec. 7.4) ---------------------------

@pytest.mark.parametrize("path, value", [(("assets", "revision"), "sha256:other"), (("assets", "layout_hash"), "sha256:other"),
                                         (("task", "contract_hash"), "sha256:other")])
def test_runs_on_another_bench_revision_never_pool(tmp_path, path, value):
    import json

    _write(tmp_path, RolloutSpec("r0", physical=True), RolloutSpec("r1", physical=True))
    manifest = tmp_path / "r1" / "run.json"
    raw = json.loads(manifest.read_text())
    raw[path[0]][path[1]] = value
    manifest.write_text(json.dumps(raw))
    assert len(score_corpus(tmp_path, resamples=0)["groups"]) == 2
    with pytest.raises(LabrecordError, match=("asset_revision" if path[1] == "revision" else path[1]) + " differs"):
        score_corpus(tmp_path, resamples=0, one_group=True)
