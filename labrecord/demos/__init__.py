"""Demonstrations: the robomimic-layout HDF5 file of a run (``demo.hdf5``), written by the
recorder and read by the exporters (:mod:`labrecord.demos.hdf5`).

"demo" alone names the ``labrecord demo`` command (``labrecord/cli/demo.py``,
``sim/demo.py``); this package is the demonstration data.
"""
from labrecord.demos.hdf5 import (
    DEMO_FORMAT, RULES, Attempt, Demo, DemoReader, DemoWriter, demo_index, demo_name, finish_file, read_demos,
    split_masks, split_names,
)

__all__ = ["DEMO_FORMAT", "RULES", "Attempt", "Demo", "DemoReader", "DemoWriter", "demo_index", "demo_name",
           "finish_file", "read_demos", "split_masks", "split_names"]
