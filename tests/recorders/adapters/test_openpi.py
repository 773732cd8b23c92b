"""The OpenPI client against a real websocket server on 127.0.0.1."""
from __future__ import annotations

import numpy as np
import pytest

from labrecord.models import ActionSpec
from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault
from labrecord.recorders.adapters.openpi import (
    PROFILES,
    OpenPIConnection,
    OpenPIPolicy,
    gripper_closure,
    letterbox,
    quat_to_axisangle,
)
from labrecord.recorders.policy import Observation
from tests.recorders.adapters.servers import OpenPIStandIn, chunk

CAMERAS = {"third_person": "front", "wrist": "wrist"}
EEF = ActionSpec(representation="eef", dim=7, mode="delta", control_hz=20.0, max_chunk=5)
JOINT_VEL = ActionSpec(representation="joint", dim=8, mode="delta", units="rad/s", control_hz=15.0, max_chunk=8)


def observation(size: int = 256, **robot: object) -> Observation:
    frame = np.zeros((size, size, 3), np.uint8)
    frame[0, 0] = (255, 0, 0)  # a marker in the top-left corner, to check the 180° rotation
    state = {"robot": {"joint_pos": [0.1] * 7, "gripper_qpos": [0.04, 0.04], "eef_pos": [0.5, 0.0, 0.3],
                       "eef_quat": [0.0, 0.0, 0.0, 1.0], **robot}}
    return Observation(obs_id="obs00001", step=0, t=0.0, evidence_version=1, instruction="weigh 180 g",
                       images={"front": frame, "wrist": frame.copy()}, state=state)


@pytest.fixture
def server():
    servers: list[OpenPIStandIn] = []

    def start(behaviour, **kw):
        servers.append(OpenPIStandIn(behaviour, **kw))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def test_libero_profile_request_and_chunk(server) -> None:
    """LIBERO: images 256² → rotated 180° → 224²; state 8-D = eef_pos (3) + axis-angle (3) +
    fingers (2) = [0.5, 0, 0.3, 0, 0, 0, 0.04, 0.04]; a (10, 7) chunk → 5 rows executed,
    gripper −1 → 0 (open) and +1 → 1 (closed); translation 1.0 → 0.05 m, rotation −0.5 →
    −0.25 rad (robosuite's OSC_POSE output limits 0.05 m, 0.5 rad)."""
    def reply(i, request):
        out = chunk(10, 7)
        out["actions"][:, 6] = [-1, 1, -1, 1, 0, 0, 0, 0, 0, 0]
        out["actions"][:, 0] = 1.0
        out["actions"][:, 5] = -0.5
        return out

    srv = server(reply)
    policy = OpenPIPolicy(OpenPIConnection(srv.url, timeout_s=10), PROFILES["libero"], EEF, cameras=CAMERAS)
    assert policy.capabilities.revision == "stand-in-1"
    assert policy.capabilities.channels == ("front", "robot", "wrist")
    result = policy.act(observation())
    request = srv.requests[0]
    assert sorted(request) == ["observation/image", "observation/state", "observation/wrist_image", "prompt"]
    image = request["observation/image"]
    assert image.shape == (224, 224, 3) and image.dtype == np.uint8
    assert image[-1, -1, 0] > 0 and image[0, 0, 0] == 0  # the marker moved to the bottom-right
    np.testing.assert_allclose(request["observation/state"], [0.5, 0, 0.3, 0, 0, 0, 0.04, 0.04], atol=1e-6)
    assert request["prompt"] == "weigh 180 g"
    assert result.actions.shape == (5, 7)
    np.testing.assert_allclose(result.actions[:, 6], [0, 1, 0, 1, 0.5])
    np.testing.assert_allclose(result.actions[:, 0], 0.05)
    np.testing.assert_allclose(result.actions[:, 5], -0.25)
    assert policy.exchange()["reply_shape"] == [10, 7]
    assert policy.last is not None and policy.last.reply_shape == [10, 7]
    assert "data" not in str(policy.last.request_keys)  # the receipt names shapes, never pixels


def test_droid_profile_sends_only_native_channels(server) -> None:
    """DROID: the server sees 2 images, 7 joints, gripper position 0 (fingers 4 cm each =
    open), the prompt — and nothing else (no display reading, no object pose), even when
    the observation carries evaluator channels the policy did not declare."""
    srv = server(lambda i, r: chunk(10, 8, 0.1))
    policy = OpenPIPolicy(OpenPIConnection(srv.url, timeout_s=10), PROFILES["droid"], JOINT_VEL, cameras=CAMERAS)
    obs = observation(224)
    obs.state["display_reading"] = {"reading_g": 180.0, "stable": True}
    obs.state["object_poses"] = {"w50": [0, 0, 0]}
    result = policy.act(obs)
    request = srv.requests[0]
    assert sorted(request) == ["observation/exterior_image_1_left", "observation/gripper_position",
                               "observation/joint_position", "observation/wrist_image_left", "prompt"]
    assert request["observation/joint_position"].shape == (7,)
    assert float(request["observation/gripper_position"][0]) == 0.0
    assert result.actions.shape == (8, 8)


@pytest.mark.parametrize(("reply", "field"), [
    ({"no_actions": 1}, "actions"),
    ({"actions": np.zeros((10, 3), np.float32)}, "actions"),
    ({"actions": np.full((10, 7), np.nan, np.float32)}, "actions"),
])
def test_interface_violation_names_field(server, reply, field) -> None:
    srv = server(lambda i, r: reply)
    policy = OpenPIPolicy(OpenPIConnection(srv.url, timeout_s=10), PROFILES["libero"], EEF, cameras=CAMERAS)
    with pytest.raises(InterfaceViolation, match=field) as info:
        policy.act(observation())
    assert info.value.field == field


def test_missing_camera_is_interface_violation(server) -> None:
    srv = server(lambda i, r: chunk(10, 7))
    policy = OpenPIPolicy(OpenPIConnection(srv.url, timeout_s=10), PROFILES["libero"], EEF,
                          cameras={"third_person": "front", "wrist": "hand"})
    with pytest.raises(InterfaceViolation, match=r"images\[wrist\]"):
        policy.act(observation())
    assert srv.requests == []  # refused before anything was sent


@pytest.mark.parametrize(("behaviour", "kind"), [
    (lambda i, r: "Traceback: CUDA out of memory", "service_fault"),
    (lambda i, r: b"\xc1\xc1", "service_fault"),
    (lambda i, r: "close", "transport_fault"),
])
def test_service_faults_classified(server, behaviour, kind) -> None:
    srv = server(behaviour)
    policy = OpenPIPolicy(OpenPIConnection(srv.url, timeout_s=10), PROFILES["libero"], EEF, cameras=CAMERAS)
    with pytest.raises(PolicyServiceFault) as info:
        policy.act(observation())
    assert info.value.kind == kind


def test_timeout_and_refused_connection_are_transport_faults(server) -> None:
    import threading

    release = threading.Event()
    srv = server(lambda i, r: (release.wait(5), chunk(10, 7))[1])
    connection = OpenPIConnection(srv.url, timeout_s=0.3)
    with pytest.raises(PolicyServiceFault, match="no reply within") as info:
        connection.infer({"prompt": "x"})
    assert info.value.kind == "transport_fault"
    release.set()
    port = srv.port
    srv.stop()
    with pytest.raises(PolicyServiceFault, match="cannot connect") as refused:
        OpenPIConnection(f"ws://127.0.0.1:{port}", timeout_s=2)
    assert refused.value.kind == "transport_fault"


def test_server_killed_mid_episode(server) -> None:
    srv = server(lambda i, r: chunk(10, 7))
    policy = OpenPIPolicy(OpenPIConnection(srv.url, timeout_s=5), PROFILES["libero"], EEF, cameras=CAMERAS)
    policy.act(observation())
    srv.stop()
    with pytest.raises(PolicyServiceFault) as info:
        policy.act(observation())
    assert info.value.kind == "transport_fault"


def test_quat_to_axisangle_hand_cases() -> None:
    """Identity → 0; 90° about z: q = (cos 45°, 0, 0, sin 45°) → (0, 0, π/2); q and −q agree."""
    np.testing.assert_allclose(quat_to_axisangle(np.array([1.0, 0, 0, 0])), 0)
    half = np.sqrt(0.5)
    np.testing.assert_allclose(quat_to_axisangle(np.array([half, 0, 0, half])), [0, 0, np.pi / 2])
    np.testing.assert_allclose(quat_to_axisangle(-np.array([half, 0, 0, half])), [0, 0, np.pi / 2])


def test_gripper_closure_and_letterbox() -> None:
    """Fingers 4 cm apart each → 0 (open); 0 → 1 (closed); 2 cm → 0.5.  A 100×200 frame
    letterboxes into 224² as a 112×224 band with 56 black rows above and below."""
    assert gripper_closure(np.array([0.04, 0.04])) == 0.0
    assert gripper_closure(np.array([0.0, 0.0])) == 1.0
    assert gripper_closure(np.array([0.02, 0.02])) == pytest.approx(0.5)
    out = letterbox(np.full((100, 200, 3), 200, np.uint8), 224)
    assert out.shape == (224, 224, 3)
    assert out[:56].max() == 0 and out[-56:].max() == 0 and out[112, 112, 0] == 200
