"""Feedback weighing: the bench (scene, env), its scripted baselines and reference executor, and its task."""
