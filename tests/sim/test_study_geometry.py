"""Geometry supports of a matched Oracle study (sim/study.py, Labference sec. 6.2).

Hand count (seed 0, basic condition, the first 2 instances, ``noisy-localizer``): at the
checkpoint ``d0`` the system selects ``add(w100)`` (i000) and ``add(w10)`` (i001), the
reference choice.  Its own localization of that target (the true position plus its
seeded N(0, 12 mm²) table-plane error) is

* i000, w100: (0.26565, 0.06136) against the true (0.25, 0.05):
  e_p = √(15.65² + 11.36²) mm = √(244.9 + 129.0) mm = 19.3 mm — the fingers close
  beside the standard, and the retry does not complete before the 20 s budget ends;
* i001, w10: (0.25415, 0.05986) against (0.25, 0.05): e_p = √(4.15² + 9.86²) mm =
  10.7 mm — the grasp holds and the task completes.

Under geometry:replace the target identity is kept (the first choice is the same
operation) and only its frame is replaced by the true one, so both supported branches
complete: gain.completion = ((1 − 0) + (1 − 1)) / 2 = 0.5, gain.correct = 0 (the choice
does not change), substitution share 2/2 (every estimate was off).  The reference
system localizes exactly: its original equals the substituted frame (share 0/1) and
every gain is 0.
"""
from __future__ import annotations

import json

import pytest

from labrecord.scorers.corpus import score_corpus
from labrecord.sim.study import run_oracle_study
from labrecord.validation import validate_folder

N = 2


def _events(folder, run):
    return [json.loads(line) for line in (folder / run / "events.jsonl").read_text().splitlines()]


def _confirmed(folder, run) -> bool:
    return any(e["type"] == "confirm" for e in _events(folder, run))


def _groups(folder):
    return {g["identity"]["intervention_mode"]: g for g in score_corpus(folder, resamples=0)["groups"]}


@pytest.fixture(scope="module")
def noisy_study(tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle-geometry")
    summary = run_oracle_study(out, "noisy-localizer", [("geometry", "replace"), ("geometry", "assist")], N, 0)
    return out, summary


def test_geometry_replace_gain_equals_hand_count(noisy_study):
    out, summary = noisy_study
    entry = summary["supports"]["geometry:replace"]
    assert entry["started"] == entry["delivered"] == N
    assert entry["substitution_share"] == 1.0
    assert entry["localization_error_m"] == pytest.approx([0.0193, 0.0107], abs=5e-5)
    results = summary["results"]
    records = [r["branches"]["geometry:replace"]["supports"][0] for r in results]
    assert [r["original"] for r in records] == [{"w100": [0.26565, 0.06136, 0.02]}, {"w10": [0.25415, 0.05986, 0.01]}]
    assert [r["substituted"] for r in records] == [{"w100": [0.25, 0.05, 0.02]}, {"w10": [0.25, 0.05, 0.01]}]
    for record in records:  # the selected target is kept: the first choice is that target's transfer
        (target,) = record["substituted"]
        assert record["first_choice"] == {"kind": "add", "object": target, "dest": "pan"}
        assert record["opp"] == "o0" and record["evidence_version"] == 0 and record["receipt"].startswith("obs")
    # the hand count, read off the runs: i000's base misses, i001's completes; both replace branches complete
    assert [_confirmed(out, r["base"]) for r in results] == [False, True]
    assert all(_confirmed(out, r["branches"]["geometry:replace"]["run"]) for r in results)
    group = _groups(out)["replace"]
    assert group["metrics"]["gain.completion"]["value"] == pytest.approx(0.5)
    assert group["metrics"]["gain.correct"]["value"] == 0
    assert group["metrics"]["delivery"]["value"] == 1
    # the intervention event carries the original and substituted frames
    (event,) = [e for e in _events(out, results[0]["branches"]["geometry:replace"]["run"]) if e["type"] == "intervention"]
    assert event["site"] == "geometry" and event["original"] == records[0]["original"]
    # the replaced estimate stays scorable as the system's geometry report: mean e_p (19.3 + 10.7) / 2 mm
    assert group["metrics"]["e_p"]["value"] == pytest.approx((0.019338 + 0.010698) / 2, abs=1e-6)
    assert not validate_folder(out).errors


def test_geometry_assist_delivers_every_authorized_frame_and_nothing_else(noisy_study):
    out, summary = noisy_study
    assert summary["supports"]["geometry:assist"]["delivered"] == N
    for result in summary["results"]:
        (record,) = result["branches"]["geometry:assist"]["supports"]
        assert sorted(record["payload"]) == ["pan", "w10", "w100", "w20", "w50"]  # never the sample box
        assert record["payload"]["pan"] == [0.0, 0.0, 0.066]
        assert record["receipt"].startswith("obs") and record["delivered"]
        run = result["branches"]["geometry:assist"]["run"]
        lines = [json.loads(line) for line in (out / run / "observations.jsonl").read_text().splitlines()]
        (receipt,) = [o for o in lines if o["obs_id"] == record["receipt"]]
        assert "oracle" in receipt["channels"]
        assert _confirmed(out, run)  # the frames reach the executor: the d0 transfer holds
    assert _groups(out)["assist"]["metrics"]["gain.completion"]["value"] == pytest.approx(0.5)


def test_reference_geometry_replace_gain_is_zero(tmp_path):
    summary = run_oracle_study(tmp_path, "reference", [("geometry", "replace")], 1, 0)
    (record,) = summary["results"][0]["branches"]["geometry:replace"]["supports"]
    assert record["delivered"] and record["original"] == record["substituted"]
    assert summary["supports"]["geometry:replace"]["substitution_share"] == 0
    gains = {k: v["value"] for k, v in _groups(tmp_path)["replace"]["metrics"].items() if k.startswith("gain.")}
    assert gains and all(v == 0 for v in gains.values()), gains


@pytest.mark.parametrize("policy", ["fixed-preference", "random"])
def test_a_system_without_a_localization_interface_is_not_compatible(policy, tmp_path):
    summary = run_oracle_study(tmp_path, policy, [("geometry", "replace"), ("geometry", "assist")], 1, 0)
    for key in ("geometry:replace", "geometry:assist"):
        assert summary["supports"][key]["status"] == "not compatible"
        assert f"system {policy!r} declares no input for {key}" == summary["supports"][key]["reason"]
    lines = (tmp_path / "populations" / f"{summary['population']}.jsonl").read_text().splitlines()
    assert not any(json.loads(line)["type"] == "oracle_pair" for line in lines)
    assert summary["results"][0]["branches"] == {}  # only the base run: never a failure
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("oracle-")] == [summary["results"][0]["base"]]
