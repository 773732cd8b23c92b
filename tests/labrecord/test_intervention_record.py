"""The run's intervention record (``labrecord.run/1.1``): a list of supports; a 1.0
single-support record stays readable by validate, ingest and score."""
from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.models import Intervention, OraclePair, Support, condition_of
from labrecord.rundir import read_manifest
from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout
from labrecord.store import connect, ingest_runs
from labrecord.validation import validate_folder

W10 = {"kind": "add", "object": "w10", "dest": "pan"}
W100 = {"kind": "add", "object": "w100", "dest": "pan"}


def _old_form_study(root) -> None:
    """One matched decision:replace pair whose supported run is rewritten in the 1.0 form:
    ``schema`` labrecord.run/1, ``intervention`` {mode, site, oracle, pair_id, branch}, and
    an intervention event without payload or receipt.  The committed add(w100) was
    substituted by add(w10): substitution share 1/1; the system's own add(w100) is not legal:
    own_correct 0/1; no gain.correct (the executed choice is the Oracle's)."""
    write_population(root, "O", [{"type": "instance", "instance_id": "b0"}, {"type": "instance", "instance_id": "s0"},
                                 {"type": "oracle_pair", "pair_id": "p0", "base": "b0", "supported": "s0",
                                  "mode": "replace", "oracle": "contract-legal", "site": "decision"}])
    write_rollout(root, RolloutSpec("base0", population=("O", "b0"), decisions=[DecisionSpec(outcome="wrong")]))
    oracle = {"mode": "replace", "site": "decision", "original": W100, "substituted": W10}
    path = write_rollout(root, RolloutSpec("sup0", population=("O", "s0"), decisions=[DecisionSpec(oracle=oracle)],
                                           intervention={"mode": "replace", "site": "decision"}))
    raw = json.loads((path / "run.json").read_text())
    raw["schema"] = "labrecord.run/1"
    raw["intervention"] = {"mode": "replace", "site": "decision", "oracle": "contract-legal", "pair_id": "p0",
                           "branch": "supported"}
    (path / "run.json").write_text(json.dumps(raw))
    events = [json.loads(line) for line in (path / "events.jsonl").read_text().splitlines()]
    for event in events:
        if event["type"] == "intervention":
            event.pop("obs_id"), event.pop("payload_id")
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_old_form_record_reads_as_one_support(tmp_path):
    _old_form_study(tmp_path)
    document = read_manifest(tmp_path / "sup0")
    intervention = document.manifest.intervention
    assert intervention.supports == [Support(mode="replace", site="decision", oracle="contract-legal")]
    assert (intervention.mode, intervention.site, intervention.oracle) == ("replace", "decision", "contract-legal")
    assert document.manifest.schema == "labrecord.run/1"


def test_old_form_record_validates_ingests_and_scores(tmp_path):
    _old_form_study(tmp_path / "runs")
    assert not validate_folder(tmp_path / "runs").errors
    con = connect(tmp_path / "c.duckdb")
    ingest_runs(tmp_path / "runs", con)
    row = con.execute("SELECT intervention_mode, intervention_site, oracle FROM runs WHERE run_id = 'sup0'").fetchone()
    assert row == ("replace", "decision", "contract-legal")
    for result in (score_corpus(con, resamples=0), score_corpus(tmp_path / "runs", resamples=0)):
        (group,) = [g for g in result["groups"] if g["identity"]["intervention_mode"] == "replace"]
        assert "gain.correct" not in group["metrics"]
        assert group["metrics"]["own_correct"]["value"] == 0
        assert group["metrics"]["substitution_share"]["value"] == 1
        assert group["metrics"]["agreement"]["value"] is None
    con.close()


def test_read_only_corpus_without_the_payload_column_scores(tmp_path):
    """A corpus written before events.payload existed opens read-only and still scores."""
    _old_form_study(tmp_path / "runs")
    con = connect(tmp_path / "c.duckdb")
    ingest_runs(tmp_path / "runs", con)
    con.execute("ALTER TABLE events DROP COLUMN payload")
    con.close()
    old = connect(tmp_path / "c.duckdb", read_only=True)
    (group,) = [g for g in score_corpus(old, resamples=0)["groups"] if g["identity"]["intervention_mode"] == "replace"]
    assert group["metrics"]["substitution_share"]["value"] == 1
    old.close()
    migrated = connect(tmp_path / "c.duckdb")  # a writable open adds the column back
    assert "payload" in {r[0] for r in migrated.execute("DESCRIBE events").fetchall()}
    migrated.close()


SUPPORTS = st.lists(st.tuples(st.sampled_from(["semantic", "decision", "geometry", "skill"]),
                              st.sampled_from(["assist", "replace"])), min_size=1, max_size=2, unique=True)


@given(SUPPORTS)
def test_list_form_round_trip_and_joined_condition(supports):
    """Write-then-read: the supports survive; mode/site/oracle are their '+'-joins."""
    record = Intervention(supports=[Support(site=s, mode=m, oracle=f"o-{s}") for s, m in supports],  # type: ignore[arg-type]
                          pair_id="i0/x", branch="supported")
    back = msgspec.json.decode(msgspec.json.encode(record), type=Intervention)
    assert back.supports == record.supports
    assert back.mode == "+".join(m for _, m in supports) and back.site == "+".join(s for s, _ in supports)
    assert (back.mode, back.site, back.oracle) == condition_of(record.supports)


def test_bad_old_form_and_joint_pair_are_refused():
    with pytest.raises(msgspec.ValidationError, match="expected mode"):
        msgspec.convert({"mode": "swap", "site": "decision"}, Intervention)
    with pytest.raises(msgspec.ValidationError, match="'\\+'-joined"):
        msgspec.convert({"pair_id": "p", "base": "b", "supported": "s", "mode": "assist+replace", "oracle": "a+b",
                         "site": "semantic"}, OraclePair)
    pair = msgspec.convert({"pair_id": "p", "base": "b", "supported": "s", "mode": "assist+replace",
                            "oracle": "a+b", "site": "semantic+decision"}, OraclePair)
    assert pair.mode == "assist+replace"
