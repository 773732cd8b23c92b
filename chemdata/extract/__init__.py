"""Extraction runner: figures -> reaction records with provenance and trajectories.

Modules: :mod:`.runner` (stages and executors), :mod:`.osra` and :mod:`.tesseract` (tool
wrappers), :mod:`.layout` (ink components, shapes, rows), :mod:`.associate` (rule-based entry
plan), :mod:`.endpoint` (OpenAI-compatible model client), :mod:`.assemble` (plan ->
records through the R-group engine), :mod:`.trajectory` (events and the budget clock), :mod:`.devset` (the real-figure
development set and its gold).
"""
