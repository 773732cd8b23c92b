"""Centrifuge loading: the bench (scene, env), its scripted baselines and its task."""
