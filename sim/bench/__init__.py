"""The shared bench base: arm, model assembly, stepping, reset, checkpoints and rendering of every bench, and the scripted baselines' machinery (no family)."""
