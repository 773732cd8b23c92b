"""Oracle studies of a served policy (OpenPI protocol) on the weighing bench.

Stand-in servers on 127.0.0.1 (tests/recorders/adapters/servers.py).  Hand count, 2
instances, decision:assist (the only supports an OpenPI client carries are assist
payloads as prompt text):

* deterministic server (zeros): each instance's base branch checkpoints d0 and re-queries
  the server over the 4-period window: 2 checkpoints verified of 2, 2 branches started,
  2 deliveries (the recommendation rides in the prompt of the first query of d0);
* noisy server (zeros plus a fresh 1e-4 jitter per query): the arm moves as under the
  deterministic server, so each base branch still reaches d0 and checkpoints it, but the
  re-queried rows differ bitwise from the recorded ones in the first period, so 0 of 2
  checkpoints verify, 0 branches start, and each base run's manifest records the handoff
  unverified with the reason.  (Uniform noise of 0.5 would let the decision never open in
  some seeds, and the test would then check nothing about verification.)
"""
from __future__ import annotations

import numpy as np
import pytest

from labrecord.cli import main
from labrecord.errors import LabrecordError
from labrecord.recorders.checkpoint import read_header
from labrecord.rundir import read_manifest
from labrecord.sim.study import run_oracle_study
from tests.recorders.adapters.servers import HttpAgentStandIn, OpenPIStandIn, chunk

N = 2
OPTIONS = dict(max_time_s=4.0, verify_periods=4)


@pytest.fixture
def server():
    started = []

    def start(behaviour, **kw):
        started.append(OpenPIStandIn(behaviour, **kw))
        return started[-1]

    yield start
    for s in started:
        s.stop()


def test_a_deterministic_server_gives_verified_checkpoints_and_continuations(server, tmp_path):
    srv = server(lambda i, request: chunk(10, 7))
    summary = run_oracle_study(tmp_path, "openpi", [("decision", "assist")], N, 0,
                               served={"url": srv.url, "profile": "libero"}, **OPTIONS)
    assert summary["checkpoints_verified"] == N
    entry = summary["supports"]["decision:assist"]
    assert entry["status"] == "compatible" and entry["started"] == entry["delivered"] == N
    prompts = [r["prompt"] for r in srv.requests if "Oracle decision:" in r["prompt"]]
    assert prompts and all('"recommended"' in p for p in prompts)
    for result in summary["results"]:
        header = read_header(result["checkpoint"])
        assert header.verified and header.verification.actions_equal is True
        assert header.verification.requeried >= 1
        manifest = read_manifest(tmp_path / result["base"]).manifest
        assert [c.verified for c in manifest.evaluation.checkpoints] == [True]


def test_a_noisy_server_leaves_checkpoints_unverified_with_the_reason(server, tmp_path):
    rng = np.random.default_rng()

    def jittered(i, request):
        return {"actions": (chunk(10, 7)["actions"] + rng.uniform(-1e-4, 1e-4, (10, 7))).astype(np.float32)}

    srv = server(jittered)
    summary = run_oracle_study(tmp_path, "openpi", [("decision", "assist")], N, 0,
                               served={"url": srv.url, "profile": "libero"}, **OPTIONS)
    assert summary["checkpoints_verified"] == 0
    assert summary["supports"]["decision:assist"]["started"] == 0
    assert len(summary["results"]) == N
    for result in summary["results"]:
        assert result["checkpoint"] is not None, result.get("reason")
        header = read_header(result["checkpoint"])
        assert header.verification.actions_equal is False and header.verification.first_action_mismatch_period == 0
        (check,) = read_manifest(tmp_path / result["base"]).manifest.evaluation.checkpoints
        assert not check.verified and "nondeterministic server" in check.reason


def test_a_stateful_openpi_server_is_refused_in_one_line(server, tmp_path, capsys):
    srv = server(lambda i, request: chunk(10, 7), metadata={"stateful": True})
    with pytest.raises(SystemExit) as exit_info:
        main(["study", "oracle", "weighing", "--policy", "openpi", "--policy-url", srv.url,
              "--support", "decision:assist", "--instances", "1", "--out", str(tmp_path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: --policy openpi: a study branches from checkpoints") and err.count("\n") == 1
    assert "stateful" in err and not (tmp_path / "populations").exists()


def test_an_http_agent_declares_its_session_and_is_refused(tmp_path):
    agent = HttpAgentStandIn(lambda i, request: (200, b'{"type": "actions", "actions": [[0,0,0,0,0,0,0]]}'))
    try:
        with pytest.raises(LabrecordError, match="stateless between queries; its preflight declares stateful"):
            run_oracle_study(tmp_path, "http", [("decision", "assist")], 1, 0, served={"url": agent.url})
    finally:
        agent.stop()
