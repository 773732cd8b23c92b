"""A client for OpenPI policy servers (π0 / π0.5 checkpoints served over websocket).

The protocol is the one openpi's client library defines: on connect the server sends its
metadata as one msgpack-numpy frame; each query sends the observation dictionary and
receives ``{"actions": (H, D) array, ...}``.  A :class:`Profile` fixes how a labrecord
:class:`~labrecord.recorders.policy.Observation` becomes that dictionary and how the
returned chunk is executed, following openpi's own example clients:

* ``libero`` — third-person and wrist images rendered at 256², rotated 180° and
  letterboxed to 224²; an 8-D state (tool position, axis-angle orientation, two finger
  positions); 7-D end-effector-delta actions (translation, axis-angle rotation, gripper
  −1 open … +1 closed) in robosuite's normalized units, scaled to ±0.05 m and ±0.5 rad
  per row as its OSC_POSE controller does; the first 5 rows of each chunk are executed,
  then it replans.
* ``droid`` — an exterior and a wrist image letterboxed to 224²; 7 joint positions and
  the gripper position as state; (10, 8) chunks of 7 joint velocities + gripper position
  at 15 Hz; the first 8 rows are executed (DROID's open-loop horizon).

The execution contract (rows executed per query, control rate) is the ActionSpec's
``max_chunk`` and ``control_hz``, so it is recorded in ``run.json`` with the system.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from labrecord.models import ActionSpec
from labrecord.recorders.adapters.codec import FrameError, packb, unpackb
from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault
from labrecord.recorders.policy import ORACLE_CHANNEL, ActionChunk, Capabilities, Observation

#: longest instruction sent; openpi tokenizers truncate silently, we refuse instead
MAX_PROMPT_CHARS = 512


@dataclass(frozen=True)
class Profile:
    """How one family of OpenPI checkpoints is fed and how its chunks are executed."""

    name: str
    convention: str          # the bench's action convention the chunk rows are in
    images: dict[str, str]   # request key -> image role ("third_person" | "wrist")
    state: str               # "eef_axisangle_fingers" | "joints_gripper"
    action_dim: int
    execute_rows: int        # rows executed per query before replanning
    control_hz: float
    render_size: int
    send_size: int
    rotate_180: bool
    gripper: str             # how the last action column reads: "pm1" (-1 open, +1 closed) | "unit"
    #: per-column factor from the checkpoint's action units to the bench's (None: same units)
    scale: tuple[float, ...] | None = None

    def request(self, observation: Observation, cameras: dict[str, str], prompt: str | None = None) -> dict[str, Any]:
        """The request dictionary for ``observation``; ``cameras`` maps role -> camera name;
        ``prompt`` replaces the instruction (an Oracle assist serialized after it)."""
        out: dict[str, Any] = {}
        for key, role in self.images.items():
            camera = cameras.get(role)
            frame = observation.images.get(camera) if camera else None
            if frame is None:
                raise InterfaceViolation(self.name, f"images[{role}]", sorted(observation.images),
                                         f"a registered {role} camera (mapped to {camera!r})")
            out[key] = self.prepare_image(frame)
        out.update(self.state_fields(observation))
        text = observation.instruction if prompt is None else prompt
        if len(text) > MAX_PROMPT_CHARS:
            raise InterfaceViolation(self.name, "prompt", text[:40], f"at most {MAX_PROMPT_CHARS} characters")
        out["prompt"] = text
        return out

    def prepare_image(self, frame: np.ndarray) -> np.ndarray:
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise InterfaceViolation(self.name, "image", f"{frame.dtype}{frame.shape}", "(H, W, 3) uint8 RGB")
        if self.rotate_180:
            frame = frame[::-1, ::-1]
        return letterbox(np.ascontiguousarray(frame), self.send_size)

    def state_fields(self, observation: Observation) -> dict[str, np.ndarray]:
        robot = observation.state.get("robot")
        if not isinstance(robot, dict):
            raise InterfaceViolation(self.name, "state.robot", None, "proprioception (declare the 'robot' channel)")
        try:
            if self.state == "eef_axisangle_fingers":
                # the bench reports x, y, z, w (robosuite's order, which LIBERO's state uses too)
                quat = np.asarray(robot["eef_quat"], dtype=np.float64)[[3, 0, 1, 2]]
                fingers = np.asarray(robot["gripper_qpos"], dtype=np.float64).reshape(-1)
                fingers = np.resize(fingers, 2) if fingers.size else np.zeros(2)
                vec = np.concatenate([np.asarray(robot["eef_pos"], dtype=np.float64), quat_to_axisangle(quat), fingers])
                return {"observation/state": vec.astype(np.float32)}
            joints = np.asarray(robot["joint_pos"], dtype=np.float64).reshape(-1)
            grip = np.asarray(robot["gripper_qpos"], dtype=np.float64).reshape(-1)
        except KeyError as missing:
            raise InterfaceViolation(self.name, f"state.robot.{missing.args[0]}", sorted(robot), "that field") from None
        # DROID's gripper position is 0 open … 1 closed; the bench reports finger travel
        return {"observation/joint_position": joints.astype(np.float32),
                "observation/gripper_position": np.asarray([gripper_closure(grip)], dtype=np.float32)}

    def executed_rows(self, reply: Any) -> np.ndarray:
        """The rows of a reply that are executed, in the bench convention; refuses a reply that
        breaks the interface, naming the field."""
        if not isinstance(reply, dict) or "actions" not in reply:
            shown = sorted(reply) if isinstance(reply, dict) else type(reply).__name__
            raise InterfaceViolation(self.name, "actions", shown, "a reply with an 'actions' array")
        actions = np.asarray(reply["actions"])
        if actions.ndim == 1:
            actions = actions[None, :]
        if actions.ndim != 2 or actions.shape[1] < self.action_dim or actions.shape[0] < 1 \
                or not np.issubdtype(actions.dtype, np.number):
            raise InterfaceViolation(self.name, "actions", f"{actions.dtype}{actions.shape}",
                                     f"(H, {self.action_dim}) numbers")
        rows = np.array(actions[: self.execute_rows, : self.action_dim], dtype=np.float64)
        if not np.all(np.isfinite(rows)):
            raise InterfaceViolation(self.name, "actions", "non-finite values", "finite numbers")
        if self.scale is not None:
            rows[:, : len(self.scale)] *= np.asarray(self.scale)
        if self.gripper == "pm1":
            rows[:, -1] = (np.clip(rows[:, -1], -1.0, 1.0) + 1.0) / 2.0
        return rows


PROFILES: dict[str, Profile] = {
    "libero": Profile(name="libero", convention="eef_delta",
                      images={"observation/image": "third_person", "observation/wrist_image": "wrist"},
                      state="eef_axisangle_fingers", action_dim=7, execute_rows=5, control_hz=20.0,
                      render_size=256, send_size=224, rotate_180=True, gripper="pm1",
                      # robosuite's OSC_POSE maps [-1, 1] to ±0.05 m and ±0.5 rad per step
                      scale=(0.05, 0.05, 0.05, 0.5, 0.5, 0.5)),
    "droid": Profile(name="droid", convention="joint_vel",
                     images={"observation/exterior_image_1_left": "third_person",
                             "observation/wrist_image_left": "wrist"},
                     state="joints_gripper", action_dim=8, execute_rows=8, control_hz=15.0,
                     render_size=224, send_size=224, rotate_180=False, gripper="unit"),
}


def profile(name: str) -> Profile:
    from labrecord.errors import LabrecordError

    if name not in PROFILES:
        raise LabrecordError(f"--profile {name!r}: expected one of {', '.join(sorted(PROFILES))}")
    return PROFILES[name]


def letterbox(frame: np.ndarray, size: int) -> np.ndarray:
    """Resize keeping the aspect ratio into a ``size``² frame, padding with black (as
    openpi's ``resize_with_pad``)."""
    from PIL import Image

    h, w = frame.shape[:2]
    if (h, w) == (size, size):
        return frame
    scale = size / max(h, w)
    nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
    resized = np.asarray(Image.fromarray(frame).resize((nw, nh), resample=Image.Resampling.BILINEAR))
    out = np.zeros((size, size, 3), dtype=np.uint8)
    top, left = (size - nh) // 2, (size - nw) // 2
    out[top:top + nh, left:left + nw] = resized
    return out


def quat_to_axisangle(quat_wxyz: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) to axis-angle (3,), angle in [0, π]."""
    q = np.asarray(quat_wxyz, dtype=np.float64)
    q = q / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    s = float(np.linalg.norm(q[1:]))
    if s < 1e-12:
        return np.zeros(3)
    angle = 2.0 * np.arctan2(s, q[0])
    return q[1:] / s * angle


def gripper_closure(finger_qpos: np.ndarray, open_m: float = 0.04) -> float:
    """Gripper closure in [0, 1] (0 open, 1 closed) from the fingers' travel (m each)."""
    travel = float(np.mean(np.abs(finger_qpos))) if np.size(finger_qpos) else 0.0
    return float(np.clip(1.0 - travel / open_m, 0.0, 1.0))


@dataclass
class Exchange:
    """What one query sent and received, for the delivery receipt."""

    request_keys: dict[str, str]          # key -> dtype+shape (never the pixel data)
    prompt_chars: int
    reply_keys: list[str]
    reply_shape: list[int]
    server_timing: dict[str, Any] = field(default_factory=dict)
    round_trip_s: float = 0.0


class OpenPIConnection:
    """One websocket session with an OpenPI server; every failure to get an answer is a
    :class:`PolicyServiceFault`."""

    def __init__(self, url: str, *, timeout_s: float = 60.0, api_key: str | None = None) -> None:
        import websockets.sync.client

        self.url = url if url.startswith(("ws://", "wss://")) else f"ws://{url}"
        self.timeout_s = timeout_s
        headers = {"Authorization": f"Api-Key {api_key}"} if api_key else None
        options: dict[str, Any] = {}
        accepted = inspect.signature(websockets.sync.client.connect).parameters
        if "legacy" in accepted:  # websockets >= 17.1: a connection held open outside a with-block
            options["legacy"] = True
        try:
            self._ws = websockets.sync.client.connect(self.url, compression=None, max_size=None, open_timeout=timeout_s,
                                                      additional_headers=headers, **options)
        except (OSError, TimeoutError) as error:
            raise PolicyServiceFault("transport_fault", self.url, f"cannot connect: {error}") from error
        except Exception as error:  # the handshake was answered but refused (HTTP status, bad upgrade)
            raise PolicyServiceFault("service_fault", self.url, f"handshake refused: {error}") from error
        self.metadata = self._receive()

    def infer(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            self._ws.send(packb(request))
        except FrameError as error:
            raise InterfaceViolation(self.url, "request", str(error), "msgpack-numpy encodable data") from error
        except Exception as error:
            raise self._lost(error) from error
        reply = self._receive()
        if not isinstance(reply, dict):
            raise InterfaceViolation(self.url, "reply", type(reply).__name__, "a map")
        return reply

    def _receive(self) -> Any:
        try:
            frame = self._ws.recv(timeout=self.timeout_s)
        except TimeoutError as error:
            raise PolicyServiceFault("transport_fault", self.url, f"no reply within {self.timeout_s:g} s") from error
        except Exception as error:
            raise self._lost(error) from error
        if isinstance(frame, str):  # openpi servers send the traceback as text when inference fails
            raise PolicyServiceFault("service_fault", self.url, f"server error: {frame.strip()[:200]}")
        try:
            return unpackb(frame)
        except FrameError as error:
            raise PolicyServiceFault("service_fault", self.url, str(error)) from error

    def _lost(self, error: Exception) -> PolicyServiceFault:
        return PolicyServiceFault("transport_fault", self.url, f"connection lost: {type(error).__name__}: {error}")

    def close(self) -> None:
        try:
            self._ws.close()
        except Exception:  # closing a dead socket has nothing left to report
            pass


def server_revision(metadata: Any) -> str:
    """The revision a server announces in its metadata, if any."""
    return str(metadata.get("revision", "")) if isinstance(metadata, dict) else ""


def oracle_text(context: dict[str, Any]) -> str:
    """The fixed text serialization of an Oracle assist context (Labference sec. 6.2: an
    end-to-end policy receives assistance through a compatible input channel; for an
    OpenPI server that is its prompt): one ``Oracle <site>: <JSON>`` clause per site in
    sorted order, the JSON with sorted keys and no spaces, the payload id left out.

    >>> oracle_text({"decision": {"payload_id": "r/o0/legal[0]", "recommended": {"kind": "add", "object": "w20"}}})
    'Oracle decision: {"recommended":{"kind":"add","object":"w20"}}'
    """
    import msgspec

    clauses = []
    for site in sorted(context):
        entry = {k: v for k, v in context[site].items() if k != "payload_id"}
        clauses.append(f"Oracle {site}: " + msgspec.json.encode(entry, order="sorted").decode())
    return " ".join(clauses)


class OpenPIPolicy:
    """An OpenPI server behind the :class:`~labrecord.recorders.policy.Policy` interface.

    ``action_spec`` is the bench's ActionSpec for the profile's convention (the simulator
    supplies it, with ``max_chunk`` = rows executed per query); ``cameras`` maps the
    profile's image roles to registered camera names.

    The server keeps nothing between queries; the client side of the session is the chunk
    of the last reply (its executed rows wait in the step owner's queue) and the query
    count — :meth:`session_state` and :meth:`restore_session`, what a checkpoint holds so
    a branch continues the same client session and asks the server for new chunks.  An
    Oracle assist in the observation's ``oracle`` channel reaches the server as text after
    the instruction (:func:`oracle_text`); those are the supports it declares.
    """

    #: the Oracle supports this adapter carries (sec. 6.2): assist payloads as prompt text
    oracle_inputs: frozenset[tuple[str, str]] = frozenset({("decision", "assist"), ("semantic", "assist")})

    def __init__(self, connection: OpenPIConnection, profile: Profile, action_spec: ActionSpec, *,
                 cameras: dict[str, str], name: str = "openpi", revision: str = "") -> None:
        self.connection, self.profile, self.cameras = connection, profile, cameras
        self.capabilities = Capabilities(
            name=name, kind="vla", action_spec=action_spec,
            channels=tuple(sorted({cameras[role] for role in profile.images.values()} | {"robot"})),
            revision=revision or server_revision(connection.metadata))
        self.last: Exchange | None = None
        #: the last reply's whole chunk (H, D) and the queries of this episode: the client session
        self.chunk: np.ndarray | None = None
        self.queries = 0

    def reset(self, episode: int) -> None:
        self.last, self.chunk, self.queries = None, None, 0

    def session_state(self) -> dict[str, Any]:
        """A copy of the client session (the last reply's chunk and the query count): what
        the adapter carries from one query to the next (the receipt summary of the last
        exchange is rebuilt by the next query)."""
        return {"chunk": None if self.chunk is None else self.chunk.copy(), "queries": self.queries}

    def restore_session(self, state: dict[str, Any]) -> None:
        """Continue the client session :meth:`session_state` captured."""
        chunk = state["chunk"]
        self.chunk, self.queries, self.last = None if chunk is None else np.array(chunk), int(state["queries"]), None

    def exchange(self) -> dict[str, Any]:
        """The request and transformed-input summary of the last query (delivery receipt)."""
        if self.last is None:
            return {}
        last = self.last
        return {"request": last.request_keys, "prompt_chars": last.prompt_chars, "reply": last.reply_keys,
                "reply_shape": last.reply_shape, "round_trip_s": last.round_trip_s,
                "transform": {"render": self.profile.render_size, "sent": self.profile.send_size,
                              "rotate_180": self.profile.rotate_180},
                **({"server_timing": last.server_timing} if last.server_timing else {})}

    def act(self, observation: Observation) -> ActionChunk:
        self.last = None
        context = observation.state.get(ORACLE_CHANNEL)
        prompt = f"{observation.instruction} {oracle_text(context)}" if context else None
        request = self.profile.request(observation, self.cameras, prompt)
        started = time.perf_counter()
        reply = self.connection.infer(request)
        rows = self.profile.executed_rows(reply)
        actions = np.asarray(reply["actions"])
        self.chunk, self.queries = np.array(actions), self.queries + 1
        self.last = Exchange(
            request_keys={k: (f"{v.dtype}{list(v.shape)}" if isinstance(v, np.ndarray) else type(v).__name__)
                          for k, v in request.items()},
            prompt_chars=len(request["prompt"]), reply_keys=sorted(str(k) for k in reply),
            reply_shape=list(actions.shape),
            server_timing=dict(reply.get("server_timing", {})) if isinstance(reply.get("server_timing"), dict) else {},
            round_trip_s=round(time.perf_counter() - started, 6))
        return ActionChunk(actions=rows)
