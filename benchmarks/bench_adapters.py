"""Per-query overhead of each policy adapter over the same policy called in process.

One scripted policy (a constant 7-D chunk of ``--rows`` rows) answers every query; it is
called four ways, on the same observation (two ``--size``² RGB images, proprioception,
the instruction), in one process and one run:

* in process: ``policy.act(observation)`` — the baseline;
* OpenPI: :class:`OpenPIPolicy` (LIBERO profile: rotate, letterbox to 224², msgpack-numpy
  over a websocket) against a local server that decodes the request and runs the policy;
* HTTP agent: :class:`HttpAgentPolicy` (PNG + base64 + JSON over HTTP/1.1) against a local
  ``http.server`` that decodes the request and runs the policy;
* push mode: the step owner's ``push`` (chunk check + delivery receipt) of the baseline's
  chunk — what a Gymnasium or vla-eval step adds before physics.

Prints the mean wall time per query and each adapter's ratio to the baseline.  A LeRobot
policy uses the HTTP agent bridge, so its transport overhead is the HTTP row.

Example:
    python benchmarks/bench_adapters.py --queries 200
"""
from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def constant_policy(rows: int) -> Any:
    from labrecord.recorders.policy import ActionChunk, Capabilities
    from labrecord.sim.bench.control import action_spec

    class Constant:
        capabilities = Capabilities(name="constant", kind="scripted", action_spec=action_spec("eef_delta", 20.0, rows),
                                    channels=("front", "wrist", "robot"))

        def reset(self, episode: int) -> None:
            pass

        def act(self, observation: Any) -> Any:
            return ActionChunk(np.zeros((rows, 7)))

    return Constant()


def observation(size: int) -> Any:
    from labrecord.recorders.policy import Observation

    # smooth gradients with a few flat blocks, compressible like a rendered scene (random
    # noise would make the PNG encoding of the HTTP bridge its worst case)
    y, x = np.mgrid[0:size, 0:size]
    frame = np.stack([x * 255 // size, y * 255 // size, (x + y) * 127 // size], axis=-1).astype(np.uint8)
    frame[size // 4: size // 2, size // 4: size // 2] = (200, 40, 40)
    frames = {"front": frame, "wrist": frame[::-1].copy()}
    robot = {"joint_pos": [0.1] * 7, "joint_vel": [0.0] * 7, "gripper_qpos": [0.04, 0.04], "eef_pos": [0.1, 0.0, 0.3],
             "eef_quat": [1.0, 0.0, 0.0, 0.0]}
    return Observation(obs_id="obs00001", step=0, t=0.0, evidence_version=0,
                       instruction="Bring the balance reading to 180 g using the labeled standards, then stop.",
                       images=frames, state={"robot": robot})


def openpi_server(policy: Any, obs: Any) -> tuple[Any, threading.Thread, str]:
    from websockets.sync.server import serve

    from labrecord.recorders.adapters.codec import packb, unpackb

    def handle(ws: Any) -> None:
        ws.send(packb({"revision": "bench"}))
        for frame in ws:
            unpackb(frame)
            ws.send(packb({"actions": policy.act(obs).actions.astype(np.float32)}))

    server = serve(handle, "127.0.0.1", 0, compression=None, max_size=None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread, f"ws://127.0.0.1:{server.socket.getsockname()[1]}"


def http_server(policy: Any, obs: Any) -> tuple[Any, threading.Thread, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps({"type": "actions", "actions": policy.act(obs).actions.tolist()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server, thread, f"http://127.0.0.1:{server.server_address[1]}/act"


class _NullEnv:
    """Enough of an environment for the step owner's push path (no physics)."""

    physics_hz, control_hz, cameras, time = 500.0, 20.0, (), 0.0


class _NullScorer:
    evidence_version = 0

    def reported(self, op: Any, t: float) -> None:
        pass


def push_owner(policy: Any, root: str) -> Any:
    from labrecord.examples import example_manifest
    from labrecord.recorders.loop import EpisodeLog, StepOwner
    from labrecord.rundir import RunWriter

    writer = RunWriter.create(root, example_manifest("bench-push"))
    owner = StepOwner.__new__(StepOwner)  # the push path only: no simulator behind it
    owner.env, owner.policy, owner.scorer, owner.writer = _NullEnv(), policy, _NullScorer(), writer
    owner.caps, owner.tools, owner._log = policy.capabilities, None, EpisodeLog()
    from collections import deque

    owner._queue = deque()
    return owner, writer


def timed(fn: Any, queries: int) -> float:
    fn()  # warm up (connection, first encode)
    start = time.perf_counter()
    for _ in range(queries):
        fn()
    return (time.perf_counter() - start) / queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--size", type=int, default=256, help="rendered image side (px)")
    parser.add_argument("--rows", type=int, default=10, help="rows per returned chunk")
    args = parser.parse_args()

    from labrecord.recorders.adapters.agent import HttpAgentPolicy
    from labrecord.recorders.adapters.openpi import PROFILES, OpenPIConnection, OpenPIPolicy
    from labrecord.sim.bench.control import action_spec

    policy = constant_policy(args.rows)
    obs = observation(args.size)
    results: dict[str, float] = {"in process": timed(lambda: policy.act(obs), args.queries)}

    server, thread, url = openpi_server(policy, obs)
    connection = OpenPIConnection(url, timeout_s=30)
    openpi = OpenPIPolicy(connection, PROFILES["libero"], action_spec("eef_delta", 20.0, 5),
                          cameras={"third_person": "front", "wrist": "wrist"})
    results["OpenPI (websocket)"] = timed(lambda: openpi.act(obs), args.queries)
    connection.close()
    server.shutdown()
    thread.join(5)

    server, thread, url = http_server(policy, obs)
    agent = HttpAgentPolicy(url, action_spec("eef_delta", 20.0, args.rows), channels=("front", "wrist", "robot"),
                            timeout_s=30)
    results["HTTP agent"] = timed(lambda: agent.act(obs), args.queries)
    server.shutdown()
    server.server_close()
    thread.join(5)

    with tempfile.TemporaryDirectory() as root:
        owner, writer = push_owner(policy, root)

        def push() -> None:
            owner.push(obs, policy.act(obs))
            owner._queue.clear()

        results["push mode (in process + push)"] = timed(push, args.queries)
        writer.close()

    base = results["in process"]
    print(f"{args.queries} queries, images {args.size}², chunks of {args.rows} rows")
    print(f"{'adapter':32s} {'ms/query':>10s} {'overhead ms':>12s} {'ratio':>10s}")
    for name, seconds in results.items():
        print(f"{name:32s} {seconds * 1e3:10.3f} {(seconds - base) * 1e3:12.3f} {seconds / base:10.1f}")


if __name__ == "__main__":
    main()
