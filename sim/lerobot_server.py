"""Serve a saved LeRobot policy over the agent bridge (``labrecord.agent/1``).

Run by :mod:`labrecord.sim.lerobot_policy` with the Python of the LeRobot environment
(lerobot 0.6 needs Python >= 3.12; labrecord's recorder runs on 3.11), as a script::

    python lerobot_server.py --path DIR [--port 0] [--device cpu]

It imports only the standard library, numpy, Pillow, PyAV, torch and lerobot (never labrecord,
which that environment need not have).  After loading it prints one line
``LABRECORD-LEROBOT {json}`` with the port and the policy's declared features, then
answers each ``POST`` with ``{"type": "actions", "actions": [[...]]}`` — one row from
``select_action`` (the policy keeps its own action queue, e.g. ACT's chunk).

Observation mapping: a visual input feature ``observation.images.<camera>`` (or
``<camera>_image``, as demo keys name cameras) takes that camera's frame, resized to the
feature's (C, H, W) (by swscale's area filter through PyAV, as ``export --image-size``
resizes the training frames) and scaled to [0, 1]; ``observation.state`` is the concatenation of
the ``robot`` channel's proprioception in the sorted order of the robomimic keys a demo
export uses (eef_pos 3, eef_quat 4, gripper_qpos 2, joint_pos 7, joint_vel 7 = 23).
When the directory holds LeRobot's processor pipelines (``policy_preprocessor.json``),
they normalize inputs and unnormalize actions.  The first request of an episode
(``first``) resets the policy.
"""
from __future__ import annotations

import argparse
import base64
import io
import json
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

#: robomimic key order of a demo export's observation.state (sorted key names)
STATE_FIELDS = (("eef_pos", 3), ("eef_quat", 4), ("gripper_qpos", 2), ("joint_pos", 7), ("joint_vel", 7))


def load(path: str, device: str) -> tuple[Any, Any, Any]:
    from lerobot.configs.policies import PreTrainedConfig
    from lerobot.policies.factory import get_policy_class, make_pre_post_processors

    config = PreTrainedConfig.from_pretrained(path)
    config.device = device
    policy = get_policy_class(config.type).from_pretrained(path, config=config)
    policy.eval()
    pre = post = None
    if (Path(path) / "policy_preprocessor.json").exists():
        pre, post = make_pre_post_processors(config, pretrained_path=path)
    return policy, pre, post


def features(policy: Any, processors: bool) -> dict[str, Any]:
    """What the ready line announces: the policy type, its input and output features, and
    whether the checkpoint's own processors normalize inputs and unnormalize actions (a
    ``lerobot-train`` checkpoint has them; without them a trained policy sees raw values)."""
    config = policy.config
    return {"type": config.type, "processors": processors,
            "inputs": {name: {"type": str(f.type.name), "shape": list(f.shape)} for name, f in config.input_features.items()},
            "outputs": {name: {"type": str(f.type.name), "shape": list(f.shape)} for name, f in config.output_features.items()}}


def resized(image: Any, height: int, width: int) -> Any:
    """An (H, W, 3) uint8 frame at (height, width) by swscale's area filter, the filter
    ``labrecord export --image-size`` shrinks training frames with (PIL's filters differ
    from it by 2-4/255 on average on the bench's frames; swscale on RGB by about 1.3)."""
    import av

    frame = av.VideoFrame.from_ndarray(image, format="rgb24")
    return frame.reformat(width=width, height=height, format="rgb24", interpolation="AREA").to_ndarray()


def batch(policy: Any, request: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import torch
    from PIL import Image

    out: dict[str, Any] = {}
    for name, feature in policy.config.input_features.items():
        if name.startswith("observation.images."):
            camera = name.removeprefix("observation.images.").removesuffix("_image")
            url = request["images"].get(camera)
            if url is None:
                raise KeyError(f"camera {camera!r} for {name} not in the request ({sorted(request['images'])})")
            c, h, w = feature.shape
            image = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))
            if image.shape[:2] != (h, w):
                image = resized(image, h, w)
            pixels = torch.from_numpy(image.astype(np.float32) / 255.0).permute(2, 0, 1)
            out[name] = pixels.unsqueeze(0)
        elif name == "observation.state":
            robot = request["state"]["robot"]
            state = np.concatenate([np.asarray(robot[field], dtype=np.float32).reshape(n) for field, n in STATE_FIELDS])
            out[name] = torch.from_numpy(state).unsqueeze(0)
        else:
            raise KeyError(f"input feature {name} has no labrecord source")
    out["task"] = [request.get("instruction", "")]
    return out


def main(argv: list[str] | None = None) -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    policy, pre, post = load(args.path, args.device)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                if request.get("first"):
                    policy.reset()
                observation = batch(policy, request)
                if pre is not None:
                    observation = pre(observation)
                with torch.inference_mode():
                    action = policy.select_action(observation)
                if post is not None:
                    action = post(action)
                status, body = 200, {"type": "actions", "actions": action.reshape(1, -1).cpu().double().tolist()}
            except Exception as error:  # the bridge reports it as a service fault (HTTP 500)
                status, body = 500, {"error": f"{type(error).__name__}: {error}"}
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", args.port), Handler)
    print("LABRECORD-LEROBOT " + json.dumps({"port": server.server_address[1], **features(policy, pre is not None)}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
