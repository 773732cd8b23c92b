"""``labrecord import`` of an HDF5 demonstration file against reading it with its own library.

One file of ``--episodes`` demos in Isaac Lab's recorder layout (``--steps`` steps each:
actions, two observation streams, ``initial_state`` and ``states`` of a rigid object and
an articulation) is written once; then, in the same process and run:

* baseline: Isaac Lab's own loading pattern — every demo group read into memory with
  h5py, attributes ``seed`` and ``success`` included (what ``HDF5DatasetFileHandler.load_episode``
  does, minus the torch tensors), followed by robomimic's ``SequenceDataset`` index over
  the same file (robomimic 0.3.0);
* import: :func:`labrecord.imports.import_source` of the whole file into a fresh folder
  (a run directory per demo, its record copied, the population registered).

Prints both wall times and the ratio baseline / import of each ``--repeat``, then their
ranges and whether the ratio reaches the target, 0.5 (benchmarks/side_by_side.py).

Example:
    python benchmarks/bench_import.py --episodes 1000 --steps 50
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def read_with_own_library(path: Path) -> int:
    import h5py

    rows = 0
    with h5py.File(path, "r") as f:
        data = f["data"]
        json.loads(data.attrs["env_args"])

        def load(group: Any) -> dict[str, Any]:
            return {k: load(v) if isinstance(v, h5py.Group) else v[()] for k, v in group.items()}

        for name in data:
            episode = load(data[name])
            _ = (data[name].attrs.get("seed"), data[name].attrs.get("success"))
            rows += len(episode["actions"])
    try:
        import robomimic.utils.obs_utils as obs_utils
        from robomimic.utils.dataset import SequenceDataset
    except ImportError:
        return rows
    obs_utils.initialize_obs_utils_with_obs_specs({"obs": {"low_dim": ["joint_pos", "eef_pos"]}})
    dataset = SequenceDataset(hdf5_path=str(path), obs_keys=("joint_pos", "eef_pos"), dataset_keys=("actions",),
                              load_next_obs=False, hdf5_cache_mode=None)
    dataset.close_and_delete_hdf5_handle()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from benchmarks.side_by_side import compare
    from labrecord.imports import import_source
    from tests.labrecord.imports.layouts import write_isaaclab

    with tempfile.TemporaryDirectory() as tmp:
        source = write_isaaclab(Path(tmp) / "bench.hdf5", [(args.steps, i % 3 != 0) for i in range(args.episodes)])

        def baseline(index: int) -> None:
            assert read_with_own_library(source) == args.episodes * args.steps

        def run_import(index: int) -> None:
            summary = import_source("isaaclab", source, Path(tmp) / f"runs{index}")
            assert summary.counts()["imported"] == args.episodes, summary.counts()
        compare({"own_library": baseline}, run_import, repeat=args.repeat, target="own_library",
                extra={"episodes": args.episodes, "steps": args.steps})


if __name__ == "__main__":
    main()
