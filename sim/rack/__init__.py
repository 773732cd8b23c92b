"""Placement recall: the rack bench (scene, env with its occluded transition), its scripted baselines and its task."""
