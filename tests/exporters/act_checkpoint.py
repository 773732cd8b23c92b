"""Load an ACT checkpoint written by ``lerobot-train`` and run it on one frame of its dataset
(JSON on stdout).  Run by tests/exporters/test_training.py with the Python 3.12 interpreter
that has lerobot: ``python act_checkpoint.py CHECKPOINT REPO_ID ROOT``.
"""
from __future__ import annotations

import json
import sys


def main(checkpoint: str, repo_id: str, root: str) -> None:
    import torch
    from lerobot.datasets import LeRobotDataset
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    policy = ACTPolicy.from_pretrained(checkpoint)
    policy.eval()
    preprocess, postprocess = make_pre_post_processors(policy.config, pretrained_path=checkpoint)
    dataset = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    with torch.no_grad():
        action = postprocess(policy.select_action(preprocess(dataset[0])))
    features = {name: list(feature.shape) for name, feature in policy.config.input_features.items()}
    print(json.dumps({"inputs": features, "action_shape": list(action.shape),
                      "finite": bool(torch.isfinite(action).all())}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
