"""Build and save a tiny ACT policy (random weights, no downloads) for the adapter test.

Run with the LeRobot environment's Python: ``python build_tiny_act.py OUT_DIR``.  The
backbone is built without pretrained weights (``pretrained_backbone_weights=None``); the
policy reads the ``front`` camera at 32² and the 23-D proprioception and returns 7-D
end-effector deltas, 4 per chunk.
"""
import sys
import torch
from lerobot.configs.types import FeatureType, PolicyFeature
from lerobot.policies.act.configuration_act import ACTConfig
from lerobot.policies.act.modeling_act import ACTPolicy
torch.manual_seed(0)
config = ACTConfig(
    input_features={"observation.state": PolicyFeature(FeatureType.STATE, (23,)),
                    "observation.images.front": PolicyFeature(FeatureType.VISUAL, (3, 32, 32))},
    output_features={"action": PolicyFeature(FeatureType.ACTION, (7,))},
    chunk_size=4, n_action_steps=4, dim_model=16, n_heads=2, dim_feedforward=32, n_encoder_layers=1,
    n_decoder_layers=1, use_vae=False, pretrained_backbone_weights=None, device="cpu")
policy = ACTPolicy(config)
policy.save_pretrained(sys.argv[1])
