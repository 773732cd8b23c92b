"""A saved LeRobot policy on a bench (``--policy lerobot --policy-path DIR``).

lerobot 0.6 needs Python >= 3.12 and its own torch; the recorder runs on 3.11 with
numpy 2.  Rather than import both into one process, the policy runs in a child process of
the LeRobot environment's Python (:mod:`labrecord.sim.lerobot_server`, run as a script)
and answers over the agent bridge on 127.0.0.1 — the same HTTP protocol, fault
classification and receipts as any served agent, and a crash of the policy process is a
service fault, never a recorder crash.  The child is started and stopped by
:func:`serve_lerobot` (one process for all episodes of a command).

The Python is ``$LABRECORD_LEROBOT_PYTHON``, else ``bin/python`` of
``$LABRECORD_LEROBOT_VENV`` or ``~/.cache/labrecord/lerobot-venv``
(``scripts/install-lerobot-venv.sh`` builds it).  The policy acts in the bench's
``eef_delta`` convention at 10 Hz — the convention of the demonstrations ``labrecord
export lerobot`` writes — one action per control step; its own queue (ACT's chunk) is
its business.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError

READY = "LABRECORD-LEROBOT "
CONTROL_HZ = 10.0
STATE_DIM = 23
ACTION_DIM = 7
#: seconds to wait for the child to load the policy and report its port
START_TIMEOUT_S = 300.0


def lerobot_python() -> str:
    explicit = os.environ.get("LABRECORD_LEROBOT_PYTHON")
    if explicit:
        return explicit
    venv = os.environ.get("LABRECORD_LEROBOT_VENV") or str(Path.home() / ".cache/labrecord/lerobot-venv")
    return str(Path(venv) / "bin" / "python")


def revision_of(path: Path) -> str:
    """``sha256:`` of the saved weights (first 16 hex digits): the policy's revision."""
    weights = sorted(path.glob("*.safetensors")) or sorted(path.glob("*.bin"))
    digest = hashlib.sha256()
    for file in weights:
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()[:16] if weights else ""


class LeRobotProcess:
    """The child process serving one saved policy; ``info`` is what it reported."""

    def __init__(self, path: Path, python: str, timeout_s: float = START_TIMEOUT_S) -> None:
        if not Path(python).exists():
            raise LabrecordError(f"LeRobot Python {python} not found; build it with scripts/install-lerobot-venv.sh "
                                 "or set LABRECORD_LEROBOT_PYTHON")
        script = Path(__file__).with_name("lerobot_server.py")
        # the child runs in a temporary folder: a relative path would name another folder there
        # (and lerobot would then take it for a Hub repo id)
        path = Path(path).resolve()
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([python, str(script), "--path", str(path), "--port", "0"], stdout=subprocess.PIPE,
                                     stderr=self._log, text=True, cwd=tempfile.gettempdir())
        line: list[str] = []
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._await_ready, args=(line,), daemon=True)
        self._reader.start()
        self._ready.wait(timeout_s)
        if not line:
            self.close()
            raise LabrecordError(f"{path}: the LeRobot policy did not start: {self.why or 'no output'}")
        self.info: dict[str, Any] = json.loads(line[0][len(READY):])
        self.url = f"http://127.0.0.1:{self.info['port']}/act"

    def _await_ready(self, found: list[str]) -> None:
        """Skip what lerobot prints while loading, up to the ready line; then keep draining
        the pipe so a chatty policy never blocks on a full buffer."""
        assert self.proc.stdout is not None
        try:
            for text in self.proc.stdout:
                if not found and text.startswith(READY):
                    found.append(text)
                    self._ready.set()
        except (OSError, ValueError):  # the pipe was closed by close()
            pass
        self._ready.set()  # the child stopped: nothing more will come

    @property
    def why(self) -> str:
        """The last line the child wrote to stderr (read once it has stopped)."""
        return getattr(self, "_why", "")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=10)  # the child is gone: the reader sees the end of its output
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if not self._log.closed:
            self._log.seek(0)
            lines = [text for text in self._log.read().decode(errors="replace").splitlines() if text.strip()]
            self._why = lines[-1] if lines else ""
            self._log.close()


def serve_lerobot(path: str | os.PathLike[str], bench_cameras: tuple[str, ...], *, timeout_s: float = 60.0,
                  python: str | None = None) -> tuple[Any, Any, Callable[[], None]]:
    """Start the policy process and check its features against the bench (its
    ``bench_cameras``, proprioception, the action row); returns the
    policy, its preflight record and the function that stops the process (wrapped into a
    ``Served`` by :func:`labrecord.sim.serving.connect`)."""
    from labrecord.models import Preflight
    from labrecord.models.agent import AGENT_PROTOCOL
    from labrecord.recorders.adapters.agent import HttpAgentPolicy
    from labrecord.sim.bench.control import action_spec
    directory = Path(path)
    if not (directory / "config.json").is_file():
        raise LabrecordError(f"{directory}: no config.json; expected a directory saved by PreTrainedPolicy.save_pretrained")
    child = LeRobotProcess(directory, python or lerobot_python())
    try:
        info = child.info
        cameras: list[str] = []
        problems: list[str] = []
        for name, feature in info["inputs"].items():
            if name.startswith("observation.images."):
                camera = name.removeprefix("observation.images.").removesuffix("_image")
                (cameras if camera in bench_cameras else problems).append(camera if camera in bench_cameras else
                                                                     f"{name}: no camera {camera!r} (have {list(bench_cameras)})")
            elif name == "observation.state" and feature["shape"] != [STATE_DIM]:
                problems.append(f"{name} shape {feature['shape']}: the bench's proprioception is [{STATE_DIM}] "
                                "(eef_pos, eef_quat, gripper_qpos, joint_pos, joint_vel)")
            elif name not in ("observation.state",) and not name.startswith("observation.images."):
                problems.append(f"{name}: no labrecord source for this input")
        action = info["outputs"].get("action", {}).get("shape")
        if action != [ACTION_DIM]:
            problems.append(f"action shape {action}: the bench executes eef_delta rows of {ACTION_DIM}")
        if problems:
            raise LabrecordError(f"{directory}: preflight failed: " + "; ".join(problems))
        spec = action_spec("eef_delta", CONTROL_HZ, max_chunk=1)
        channels = tuple(sorted(set(cameras))) + ("robot",)
        policy = HttpAgentPolicy(child.url, spec, channels=channels, tools=(), name=f"lerobot-{info['type']}",
                                 timeout_s=timeout_s, kind="vla", revision=revision_of(directory))
        preflight = Preflight(protocol=f"lerobot via {AGENT_PROTOCOL}", endpoint=str(directory.resolve()),
                              channels=list(channels), action_convention="eef_delta", session="stateful",
                              session_reason="select_action keeps the policy's own action queue in the serving "
                                             "process, which no checkpoint holds",
                              announced={k: info[k] for k in ("type", "inputs", "outputs", "processors")},
                              checks=["policy loaded in the LeRobot environment", "input features mapped to cameras "
                                      "and proprioception", f"action shape [{ACTION_DIM}] (eef_delta, {CONTROL_HZ:g} Hz)",
                                      "inputs normalized and actions unnormalized by the checkpoint's own processors"
                                      if info["processors"] else "no processors saved: inputs and actions pass raw"])
    except BaseException:
        child.close()
        raise
    return policy, preflight, child.close
