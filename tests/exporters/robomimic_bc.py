"""Train robomimic's BC for a few gradient steps on an HDF5 export with robomimic's own
``train``, load the saved checkpoint and run it on the first observation (JSON on stdout).

Run by tests/exporters/test_training.py with the Python 3.12 environment that
scripts/install-lerobot-venv.sh builds (it has robomimic 0.3.0 next to a torch and
torchvision that load together): ``python robomimic_bc.py DATA OUT LOW_DIM_KEYS RGB_KEYS``
(keys comma-separated, RGB_KEYS may be empty).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

STEPS = 3


def main(data: str, out: str, low_dim: str, rgb: str) -> None:
    import h5py
    import numpy as np
    import torch
    import robomimic.utils.file_utils as file_utils
    from robomimic.config import config_factory
    from robomimic.scripts.train import train

    low_dim_keys = [k for k in low_dim.split(",") if k]
    rgb_keys = [k for k in rgb.split(",") if k]
    config = config_factory("bc")
    with config.values_unlocked():
        config.train.data = data
        config.train.output_dir = out
        config.train.hdf5_filter_key = "train"
        config.train.batch_size = 4
        config.train.num_epochs = 1
        config.train.num_data_workers = 0
        config.train.seq_length = 1
        config.experiment.name = "bc"
        config.experiment.epoch_every_n_steps = STEPS
        config.experiment.validate = False
        config.experiment.rollout.enabled = False
        config.experiment.logging.log_tb = False
        config.experiment.save.enabled = True
        config.experiment.save.every_n_epochs = 1
        config.observation.modalities.obs.low_dim = low_dim_keys
        config.observation.modalities.obs.rgb = rgb_keys
        config.algo.actor_layer_dims = (32, 32)
    train(config, device=torch.device("cpu"))
    checkpoints = sorted(Path(out).rglob("model_epoch_1.pth"))
    policy, _ = file_utils.policy_from_checkpoint(ckpt_path=str(checkpoints[0]), device="cpu")
    with h5py.File(data, "r") as handle:
        group = handle["data/demo_0/obs"]
        obs = {key: group[key][0] for key in low_dim_keys}
        for key in rgb_keys:  # robomimic's rollout convention: channels first, floats in [0, 1]
            obs[key] = group[key][0].transpose(2, 0, 1).astype(np.float32) / 255.0
    policy.start_episode()
    action = policy(ob=obs)
    print(json.dumps({"checkpoints": [str(c) for c in checkpoints], "action_shape": list(action.shape),
                      "finite": bool(np.all(np.isfinite(action)))}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
