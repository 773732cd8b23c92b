"""Served policies drive whole weighing episodes against real servers on 127.0.0.1.

Episodes are short (1 s of simulated time, 32 px renders letterboxed to the profile's
224 px) except the tool-call episode, which lets the reference executor carry a standard.
"""
import json
from pathlib import Path

import pytest

from labrecord.cli import main
from labrecord.errors import LabrecordError
from labrecord.models import (
    Choice, EpisodeEnd, Failure, Geometry, InterventionEvent, Opportunity, StateReport, Validity,
)
from labrecord.rundir import read_events, read_manifest
from labrecord.scorers.audit import audit_run
from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.reference import eval_valid, load_reference
from labrecord.sim import run_episodes
from labrecord.validation import validate_run
from tests.recorders.adapters.servers import HttpAgentStandIn, OpenPIStandIn, chunk

LIBERO_KEYS = ["observation/image", "observation/state", "observation/wrist_image", "prompt"]


def check_run(run: Path) -> None:
    report, _ = validate_run(run)
    assert report.ok, [str(f) for f in report.errors]
    audit = audit_run(run)
    assert audit.ok, [str(f) for f in audit.findings]


def receipts(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "observations.jsonl").read_text().splitlines()]


@pytest.fixture
def servers():
    started = []

    def start(cls, behaviour):
        started.append(cls(behaviour))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def test_openpi_libero_episode_validates_audits_and_scores(servers, tmp_path) -> None:
    """1 s at 20 Hz = 20 control periods; the first settles the scene, then a query every 5
    executed rows: 19 / 5 → 4 queries.  The server receives only native channels: two
    224² images, the 8-D proprioceptive state and the prompt — no display reading."""
    srv = servers(OpenPIStandIn, lambda i, request: chunk(10, 7))
    (run,) = run_episodes("weighing", tmp_path, "basic", "openpi", episodes=1, seed=0, size=32, max_time_s=1.0,
                          url=srv.url, profile="libero")
    check_run(run)
    assert len(srv.requests) == 4
    for request in srv.requests:
        assert sorted(request) == LIBERO_KEYS
        assert request["observation/image"].shape == request["observation/wrist_image"].shape == (224, 224, 3)
        assert request["observation/state"].shape == (8,)
        assert request["prompt"].startswith("Bring the balance reading to")
    manifest = read_manifest(run).manifest
    assert manifest.status == "complete" and manifest.system.kind == "vla"
    assert manifest.system.revision == "stand-in-1" and manifest.system.observation.channels == ["front", "robot", "wrist"]
    assert manifest.system.action_spec.max_chunk == 5 and manifest.system.action_spec.control_hz == 20.0
    preflight = manifest.system.preflight
    assert preflight.protocol == "openpi-websocket" and preflight.profile == "libero"
    assert preflight.announced == {"revision": "stand-in-1"} and preflight.action_convention == "eef_delta"
    first = receipts(run)[0]
    assert first["chunk_len"] == 5 and first["exchange"]["reply_shape"] == [10, 7]
    assert first["exchange"]["request"]["observation/state"] == "float32[8]"
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    assert group["coverage"]["valid_runs"] == 1 and group["identity"]["system_name"] == "openpi-libero"


def test_killing_the_server_mid_episode_leaves_an_unresolved_run(servers, tmp_path) -> None:
    """The server drops the connection at its third request: a transport_fault validity
    event, episode_end reason service_fault, run status service_fault, no evaluated outcome."""
    def behaviour(i, request):
        return "close" if i == 2 else chunk(10, 7)

    srv = servers(OpenPIStandIn, behaviour)
    (run,) = run_episodes("weighing", tmp_path, "basic", "openpi", episodes=1, seed=0, size=32, max_time_s=2.0,
                          url=srv.url, profile="libero")
    check_run(run)
    events = read_events(run)
    (fault,) = [e for e in events if isinstance(e, Validity)]
    assert fault.kind == "transport_fault" and fault.source == srv.url
    end = next(e for e in events if isinstance(e, EpisodeEnd))
    assert end.reason == "service_fault" and not end.valid_complete
    assert end.t < 2.0  # the episode stopped at the fault
    assert read_manifest(run).manifest.status == "service_fault"
    assert json.loads((run / "scores.json").read_text())["status"] == "service_fault"
    (ref,) = load_reference(tmp_path).runs
    assert not eval_valid(ref)
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    assert group["coverage"]["valid_runs"] == 0 and group["coverage"]["invalid_runs"] == [run.name]


def agent_script():
    """Wait until 2.5 s (the first opportunity opens when the reading settles, about 2.2 s),
    then report the state and where w10 is, commit to add(w10, pan), let the executor carry
    it, and wait."""
    add = {"kind": "add", "object": "w10", "dest": "pan"}
    steps = iter([{"type": "report_state", "fields": {"reading_g": 60.0}},
                  {"type": "report_geometry", "target": "w10", "p_hat": [0.3, 0.1, 0.02]},
                  {"type": "commit_operation", "op": add}, {"type": "call_skill", "op": add}])

    def behaviour(i, request):
        reply = {"type": "wait", "seconds": 0.5} if request["t"] < 2.5 else next(steps, {"type": "wait", "seconds": 1.0})
        return 200, json.dumps(reply).encode()

    return behaviour


def test_agent_tool_calls_become_report_events_and_an_execution_supported_run(servers, tmp_path) -> None:
    srv = servers(HttpAgentStandIn, agent_script())
    (run,) = run_episodes("weighing", tmp_path, "basic", "http", episodes=1, seed=0, size=32, max_time_s=12.0, url=srv.url)
    check_run(run)
    assert all(sorted(r["state"]) == ["robot"] for r in srv.requests)  # proprioception only, natively
    assert sorted(srv.requests[0]["images"]) == ["display", "front", "wrist"]
    events = read_events(run)
    opp = next(e for e in events if isinstance(e, Opportunity))
    (report,) = [e for e in events if isinstance(e, StateReport)]
    assert report.opp == opp.opp and report.fields == {"reading_g": 60.0} and report.reference["stable"] is True
    (geometry,) = [e for e in events if isinstance(e, Geometry)]
    assert geometry.opp == opp.opp and geometry.p_hat == [0.3, 0.1, 0.02]
    assert len(geometry.p_ref) == 3 and 0.0 < geometry.p_ref[2] < 0.1  # w10's measured position, on the table
    (committed,) = [e for e in events if isinstance(e, Choice) and e.track == "report"]
    assert str(committed.op) == "add(w10, pan)" and committed.opp == opp.opp
    (skill,) = [e for e in events if isinstance(e, InterventionEvent)]
    assert skill.site == "skill" and skill.mode == "replace" and skill.opp == opp.opp
    # the executor carried the standard: the contract recognized the grasp as the native choice
    native = [e for e in events if isinstance(e, Choice) and e.track == "native" and e.first]
    assert [str(e.op) for e in native] == ["add(w10, pan)"] and native[0].t > skill.t
    manifest = read_manifest(run).manifest
    assert (manifest.intervention.mode, manifest.intervention.site) == ("replace", "skill")
    assert manifest.system.tools == ["report_state", "commit_operation", "report_geometry", "call_skill", "wait"]
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    assert group["identity"]["intervention_site"] == "skill"  # never pooled with native runs


def test_interface_violation_is_a_measured_failure_and_a_server_error_a_fault(servers, tmp_path) -> None:
    """Reply 0 names an unknown tool: a failure event (reason interface) and a receipt naming
    the field 'type'; the robot holds and is asked again.  Reply 3 is HTTP 500: service fault."""
    def behaviour(i, request):
        if i == 0:
            return 200, b'{"type": "dance"}'
        if i == 3:
            return 500, b"{}"
        return 200, json.dumps({"type": "actions", "actions": [[0.0] * 7]}).encode()

    srv = servers(HttpAgentStandIn, behaviour)
    (run,) = run_episodes("weighing", tmp_path, "basic", "http", episodes=1, seed=0, size=32, max_time_s=1.0, url=srv.url,
                          tools=("wait",))
    check_run(run)
    events = read_events(run)
    (failure,) = [e for e in events if isinstance(e, Failure)]
    assert failure.reason == "interface" and failure.op is None
    first = receipts(run)[0]
    assert first["interface_field"] == "type" and "dance" in first["rejected"] and first["chunk_len"] == 0
    assert [e.kind for e in events if isinstance(e, Validity)] == ["service_fault"]
    assert read_manifest(run).manifest.status == "service_fault"
    scores = json.loads((run / "scores.json").read_text())
    assert scores["episodes"][0]["policy"]["interface_failures"] == 1


def test_preflight_failure_is_one_error_line(tmp_path, capsys) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(SystemExit) as exit_info:
        main(["sim", "weighing", "--policy", "openpi", "--policy-url", f"ws://127.0.0.1:{port}", "--episodes", "1",
              "--out", str(tmp_path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and "preflight failed" in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # nothing registered, nothing written
    with pytest.raises(LabrecordError, match="--policy-url"):
        run_episodes("weighing", tmp_path, "basic", "http", episodes=1)
    with pytest.raises(LabrecordError, match="--workers 1"):
        run_episodes("weighing", tmp_path, "basic", "http", episodes=2, workers=2, url="http://127.0.0.1:1/act")


def test_call_skill_needs_the_end_effector_convention() -> None:
    from labrecord.sim.serving import connect
    from labrecord.sim.weighing.task import TASK

    with pytest.raises(LabrecordError, match="call_skill"):
        connect("http", cameras=TASK.cameras, skill=TASK.reference_executor(), url="http://127.0.0.1:1/act",
                convention="joint_pos")


def test_call_skill_needs_a_bench_with_a_reference_executor() -> None:
    """A tube bench has no reference executor: call_skill is refused when asked for and
    left out of the default tools."""
    from labrecord.sim.serving import connect

    with pytest.raises(LabrecordError, match="call_skill: this bench has no reference executor"):
        connect("http", cameras=("front", "wrist"), url="http://127.0.0.1:1/act", tools=("call_skill",))
    with pytest.raises(LabrecordError, match="preflight failed"):  # no server: the default tools pass the check
        connect("http", cameras=("front", "wrist"), url="http://127.0.0.1:1/act", timeout_s=0.5)


def test_cli_reports_runs_left_unresolved(servers, tmp_path, capsys) -> None:
    """An agent that answers HTTP 500 at once: the episode ends at its first query."""
    srv = servers(HttpAgentStandIn, lambda i, request: (500, b"{}"))
    with pytest.raises(SystemExit) as exit_info:
        main(["sim", "weighing", "--policy", "http", "--policy-url", srv.url, "--episodes", "1", "--no-cameras",
              "--size", "16", "--out", str(tmp_path)])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "wrote 1 run(s)" in out and "1 with a service fault: unresolved" in out
    (run,) = [p for p in tmp_path.iterdir() if p.name.startswith("weighing-")]
    assert read_manifest(run).manifest.status == "service_fault"
    check_run(run)


def test_openpi_droid_episode_executes_joint_velocity_chunks(servers, tmp_path) -> None:
    """DROID at 15 Hz: (10, 8) chunks, 8 rows executed per query; 1 s = 15 periods, the
    first settles, 14 / 8 → 2 queries."""
    srv = servers(OpenPIStandIn, lambda i, request: chunk(10, 8))
    (run,) = run_episodes("weighing", tmp_path, "basic", "openpi", episodes=1, seed=0, size=32, max_time_s=1.0,
                          url=srv.url, profile="droid")
    check_run(run)
    assert len(srv.requests) == 2
    assert sorted(srv.requests[0]) == ["observation/exterior_image_1_left", "observation/gripper_position",
                                       "observation/joint_position", "observation/wrist_image_left", "prompt"]
    spec = read_manifest(run).manifest.system.action_spec
    assert (spec.representation, spec.mode, spec.dim, spec.max_chunk, spec.control_hz) == ("joint", "delta", 8, 8, 15.0)
    assert [r["chunk_len"] for r in receipts(run)] == [8, 8]


def test_an_agent_works_the_rack_bench_through_the_same_pipeline(servers, tmp_path) -> None:
    """An http agent on placement recall: it sees the rack bench's two cameras and
    proprioception, is offered the four report tools (no reference executor there), and
    the run validates and audits as the rack family's."""
    srv = servers(HttpAgentStandIn, lambda i, request: (200, json.dumps({"type": "wait", "seconds": 0.5}).encode()))
    (run,) = run_episodes("rack", tmp_path, "basic", "http", episodes=1, seed=0, size=32, max_time_s=2.0, url=srv.url)
    check_run(run)
    assert sorted(srv.requests[0]["images"]) == ["front", "wrist"]
    assert all(sorted(r["state"]) == ["robot"] for r in srv.requests)
    manifest = read_manifest(run).manifest
    assert manifest.run_id == "rack-basic-http-s0-e000" and manifest.task.family == "rack"
    assert "call_skill" not in manifest.system.tools and manifest.intervention.mode == "none"
    assert (tmp_path / "populations" / "rack-basic-s0.jsonl").is_file()
