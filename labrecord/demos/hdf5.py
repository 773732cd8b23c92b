"""Demonstration files in the robomimic layout (``demo.hdf5``), written and read.

Layout (docs/design.md, "HDF5 demonstrations")::

    data/                 attrs: total, env_args (JSON: env_name, type=2, env_kwargs, labrecord),
                                 format ("labrecord.demo/1")
      demo_<k>/           attrs: num_samples, run_id, episode, success, control_hz, action_units
        actions (N, A)    obs/<key> (N, ...)   next_obs/<key> (N, ...)   rewards (N,)   dones (N,)
        timestamps/<name> (N,) float64: step time, camera acquisition and delivery times
        control_mask (N,) bool, false where the environment, not the policy, was in control
    diagnostics/demo_<k>  attrs: run_id, episode, json (evaluator identities and scores)
    mask/train, mask/valid, mask/<filter>   demo names (bytes); attrs: rule, seed, valid_ratio
    manifest              one JSON document per attempt, failed and recovered ones included

Row ``i`` of a demo pairs the observation the policy saw *before* acting (``obs``), the
command that was applied (``actions``) and the observation that followed (``next_obs``),
which is what robomimic's ``SequenceDataset`` expects.

A recorder streams steps::

    with DemoWriter(run_dir / "demo.hdf5", {"env_name": "weighing-basic"}) as demo:
        demo.begin(run_id, episode=0, control_hz=10.0, action_units="m")
        for ...:
            demo.add_step(obs, action, next_obs, reward, done,
                          timestamps={"t": t, "front_acquired": ta}, control=True)
        demo.end(success=True, diagnostics={"scores": {...}})
    # closing writes mask/train, mask/valid, mask/success, mask/failed and the manifest
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError, SchemaVersionError
from labrecord.fileio import commit, discard, json_default, temp_beside

DEMO_FORMAT = "labrecord.demo/1"
SUPPORTED_MAJOR = 1
#: robomimic's EnvType.GYM_TYPE; our environments are not robosuite ones
ENV_TYPE = 2
#: acceptance rules a writer applies itself; richer rules live in ``labrecord export``
RULES = ("success", "all")
_FORMAT = re.compile(r"^labrecord\.demo/(\d+)$")
_DEMO = re.compile(r"^demo_(\d+)$")
_STR = None  # h5py string dtype, created lazily so importing this module stays light


def _h5py() -> Any:
    import h5py

    return h5py


def _str_dtype() -> Any:
    global _STR
    if _STR is None:
        _STR = _h5py().string_dtype("utf-8")
    return _STR


def demo_name(index: int) -> str:
    return f"demo_{index}"


def demo_index(name: str) -> int:
    match = _DEMO.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a demo name (demo_<k>)")
    return int(match.group(1))


# -- writing ------------------------------------------------------------------------------


class _Column:
    """One growing dataset: rows are buffered and appended in blocks (resizable, chunked)."""

    def __init__(self, group: Any, name: str, block: int, compression: str | None) -> None:
        self.group, self.name, self.block, self.compression = group, name, block, compression
        self.rows: list[np.ndarray] = []
        self.dataset: Any = None
        self.shape: tuple[int, ...] | None = None
        self.dtype: np.dtype | None = None

    def append(self, value: Any, where: str) -> None:
        row = np.asarray(value)
        if self.shape is None:
            self.shape, self.dtype = row.shape, row.dtype
        elif row.shape != self.shape:
            raise LabrecordError(f"{where}: {self.name} has shape {row.shape}, earlier steps had {self.shape}")
        self.rows.append(row)
        if len(self.rows) >= self.block:
            self.flush()

    def extend(self, values: np.ndarray, where: str) -> None:
        if self.shape is None:
            self.shape, self.dtype = values.shape[1:], values.dtype
        elif values.shape[1:] != self.shape:
            raise LabrecordError(f"{where}: {self.name} rows have shape {values.shape[1:]}, earlier steps had {self.shape}")
        self.flush()
        self._write(values)

    def flush(self) -> None:
        if self.rows:
            self._write(np.stack(self.rows).astype(self.dtype, copy=False))
            self.rows = []

    def _write(self, block: np.ndarray) -> None:
        if len(block) == 0:
            return
        if self.dataset is None:
            chunk_rows = max(1, min(self.block, len(block)))
            self.dataset = self.group.create_dataset(
                self.name, data=block, maxshape=(None, *block.shape[1:]),
                chunks=(chunk_rows, *block.shape[1:]) if block.ndim else None, compression=self.compression,
            )
            return
        start = self.dataset.shape[0]
        self.dataset.resize(start + len(block), axis=0)
        self.dataset[start:] = block


@dataclass
class Attempt:
    """One manifest entry: every episode the recorder began, whether or not it became a demo."""

    attempt: int
    run_id: str
    episode: int
    demo: str | None
    num_samples: int
    success: bool | None
    reason: str | None = None
    recovered: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        record = {"attempt": self.attempt, "run_id": self.run_id, "episode": self.episode, "demo": self.demo,
                  "num_samples": self.num_samples, "success": self.success, "reason": self.reason,
                  "recovered": self.recovered, **self.extra}
        return json.dumps(record, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> Attempt:
        try:
            record = json.loads(text)
            known = {name: record.pop(name) for name in ("attempt", "run_id", "episode", "demo", "num_samples", "success")}
            return cls(**known, reason=record.pop("reason", None), recovered=record.pop("recovered", False), extra=record)
        except (ValueError, KeyError, TypeError) as error:
            raise LabrecordError(f"{where}: bad manifest entry {text[:120]!r}: {error}") from error


class DemoWriter:
    """Writes one robomimic-layout file, episode by episode, step by step.

    ``env_args`` needs ``env_name``; ``type`` is set to 2 and anything else is kept.
    ``block`` is how many steps are buffered before they are appended to the file.
    The file is built under a temporary name and renamed on :meth:`close`, so a reader
    never sees a half-written file; an exception inside ``with`` removes it.
    ``durable=False`` leaves out the fsyncs (:func:`~labrecord.fileio.commit`), for a
    file whose caller makes it durable itself.
    """

    def __init__(self, path: str | os.PathLike[str], env_args: Mapping[str, Any], *, block: int = 64,
                 compression: str | None = None, overwrite: bool = False, durable: bool = True) -> None:
        self.path = Path(path)
        if "env_name" not in env_args:
            raise LabrecordError(f"{self.path}: env_args needs 'env_name', got keys {sorted(env_args)}")
        if self.path.exists() and not overwrite:
            raise LabrecordError(f"{self.path}: already exists; pass overwrite=True to replace it")
        self.env_args = {**dict(env_args), "type": ENV_TYPE}
        self.block, self.compression = block, compression
        self.durable = durable
        self._tmp = temp_beside(self.path)
        self._file = _h5py().File(self._tmp, "w")
        self._data = self._file.create_group("data")
        self._attempts: list[Attempt] = []
        self._episode: dict[str, Any] | None = None
        self._columns: dict[str, _Column] = {}
        self._steps = 0
        self.closed = False

    # -- episodes ------------------------------------------------------------------------
    def begin(self, run_id: str, episode: int, *, control_hz: float | None = None, action_units: str = "",
              **attrs: Any) -> str:
        """Open the next demo group; returns its name (``demo_<k>``)."""
        self._check_open()
        if self._episode is not None:
            raise LabrecordError(f"{self.path}: begin({run_id!r}, {episode}) before end() of the previous episode")
        name = demo_name(len(self._attempts))
        group = self._data.create_group(name)
        self._episode = {"name": name, "group": group, "run_id": run_id, "episode": int(episode),
                         "control_hz": control_hz, "action_units": action_units, "attrs": attrs}
        self._columns, self._steps = {}, 0
        return name

    def add_step(self, obs: Mapping[str, Any], action: Any, next_obs: Mapping[str, Any], reward: float = 0.0,
                 done: bool = False, timestamps: Mapping[str, float] | None = None, control: bool = True) -> None:
        """Append one step: the pre-action ``obs``, the applied ``action`` (A,), the following
        ``next_obs``, its reward and done flag, named times, and whether the policy was in control."""
        episode = self._require_episode()
        where = f"{self.path} {episode['name']} step {self._steps}"
        self._check_keys(obs, next_obs, timestamps or {}, where)
        self._column("actions").append(np.asarray(action), where)
        for key, value in obs.items():
            self._column(f"obs/{key}").append(value, where)
        for key, value in next_obs.items():
            self._column(f"next_obs/{key}").append(value, where)
        self._column("rewards").append(np.float64(reward), where)
        self._column("dones").append(np.uint8(bool(done)), where)
        self._column("control_mask").append(np.bool_(control), where)
        for key, value in (timestamps or {}).items():
            self._column(f"timestamps/{key}").append(np.float64(value), where)
        self._steps += 1

    def add_steps(self, obs: Mapping[str, np.ndarray], actions: np.ndarray, next_obs: Mapping[str, np.ndarray],
                  rewards: np.ndarray, dones: np.ndarray, timestamps: Mapping[str, np.ndarray] | None = None,
                  control_mask: np.ndarray | None = None) -> None:
        """Append N steps at once (arrays with a leading N axis); the bulk twin of :meth:`add_step`."""
        episode = self._require_episode()
        actions = np.asarray(actions)
        n = len(actions)
        where = f"{self.path} {episode['name']} steps {self._steps}..{self._steps + n - 1}"
        timestamps = timestamps or {}
        self._check_keys(obs, next_obs, timestamps, where)
        control_mask = np.ones(n, dtype=bool) if control_mask is None else np.asarray(control_mask, dtype=bool)
        columns = {"actions": actions, "rewards": np.asarray(rewards, dtype=np.float64),
                   "dones": np.asarray(dones).astype(np.uint8), "control_mask": control_mask}
        columns.update({f"obs/{k}": np.asarray(v) for k, v in obs.items()})
        columns.update({f"next_obs/{k}": np.asarray(v) for k, v in next_obs.items()})
        columns.update({f"timestamps/{k}": np.asarray(v, dtype=np.float64) for k, v in timestamps.items()})
        for name, values in columns.items():
            if len(values) != n:
                raise LabrecordError(f"{where}: {name} has {len(values)} rows, actions have {n}")
        for name, values in columns.items():
            self._column(name).extend(values, where)
        self._steps += n

    def end(self, success: bool | None, diagnostics: Mapping[str, Any] | None = None, *,
            reason: str | None = None, recovered: bool = False) -> Attempt:
        """Close the current episode.  An episode without steps stays in the manifest only.

        ``diagnostics`` (evaluator identities, scores) goes to ``diagnostics/demo_<k>`` and
        never next to the training arrays.
        """
        episode = self._require_episode()
        for column in self._columns.values():
            column.flush()
        name = episode["name"]
        n = self._steps
        if n == 0:
            del self._data[name]
            demo = None
        else:
            demo = name
            self._write_demo_attrs(episode, n, success)
            self._write_diagnostics(name, episode, success, diagnostics or {})
        attempt = Attempt(attempt=len(self._attempts), run_id=episode["run_id"], episode=episode["episode"], demo=demo,
                          num_samples=n, success=success, reason=reason, recovered=recovered)
        self._attempts.append(attempt)
        self._episode, self._columns, self._steps = None, {}, 0
        return attempt

    def close(self, *, accept: str = "success", valid_ratio: float = 0.1, seed: int = 0,
              filters: Mapping[str, Sequence[str]] | None = None) -> Path:
        """Write masks, the manifest and ``data`` attrs, then move the file into place.

        ``accept`` is ``"success"`` or ``"all"``; accepted demos are split into
        ``mask/train`` and ``mask/valid`` by a seeded permutation (``round(valid_ratio * n)``
        go to valid, at least one stays in train).  ``mask/success`` and ``mask/failed``
        are always written; ``filters`` adds more named masks.
        """
        if self.closed:
            return self.path
        if self._episode is not None:
            raise LabrecordError(f"{self.path}: close() while {self._episode['name']} is still open; call end() first")
        if accept not in RULES:
            raise LabrecordError(f"{self.path}: acceptance rule {accept!r} is not one of {', '.join(RULES)}")
        demos = [(a, a.demo) for a in self._attempts if a.demo is not None]
        accepted = [name for a, name in demos if accept == "all" or a.success]
        _, valid = split_names(accepted, valid_ratio, seed)
        split = {name: "valid" if name in valid else "train" for name in accepted}
        rule = {"rule": accept, "valid_ratio": valid_ratio, "seed": seed}
        masks = split_masks([(name, a.success, split.get(name)) for a, name in demos])
        masks.update({key: list(value) for key, value in (filters or {}).items()})
        finish_file(self._file, self.env_args, len(demos), sum(a.num_samples for a, _ in demos), masks, rule, self._attempts)
        self._file.close()
        commit(self._tmp, self.path, durable=self.durable)
        self.closed = True
        return self.path

    def abort(self) -> None:
        """Drop the partial file."""
        if not self.closed:
            self._file.close()
            discard(self._tmp)
            self.closed = True

    def __enter__(self) -> DemoWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        elif not self.closed:
            self.close()

    # -- helpers -------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            raise LabrecordError(f"{self.path}: demo file is closed")

    def _require_episode(self) -> dict[str, Any]:
        self._check_open()
        if self._episode is None:
            raise LabrecordError(f"{self.path}: no open episode; call begin() first")
        return self._episode

    def _column(self, name: str) -> _Column:
        column = self._columns.get(name)
        if column is None:
            group = self._episode["group"]  # type: ignore[index]
            folder, _, leaf = name.rpartition("/")
            target = group.require_group(folder) if folder else group
            column = self._columns[name] = _Column(target, leaf, self.block, self.compression)
        return column

    def _check_keys(self, obs: Mapping[str, Any], next_obs: Mapping[str, Any], timestamps: Mapping[str, Any],
                    where: str) -> None:
        if set(obs) != set(next_obs):
            raise LabrecordError(f"{where}: obs keys {sorted(obs)} differ from next_obs keys {sorted(next_obs)}")
        for prefix, keys in (("obs/", obs), ("timestamps/", timestamps)):
            if self._steps and {k[len(prefix):] for k in self._columns if k.startswith(prefix)} != set(keys):
                known = sorted(k[len(prefix):] for k in self._columns if k.startswith(prefix))
                raise LabrecordError(f"{where}: {prefix.rstrip('/')} keys {sorted(keys)} differ from earlier steps {known}")

    def _write_demo_attrs(self, episode: dict[str, Any], n: int, success: bool | None) -> None:
        attrs = episode["group"].attrs
        attrs["num_samples"] = n
        attrs["run_id"] = episode["run_id"]
        attrs["episode"] = episode["episode"]
        attrs["success"] = bool(success)
        attrs["control_hz"] = float("nan") if episode["control_hz"] is None else float(episode["control_hz"])
        attrs["action_units"] = episode["action_units"]
        for key, value in episode["attrs"].items():
            attrs[key] = value if isinstance(value, (str, int, float, bool)) else json.dumps(value, sort_keys=True)

    def _write_diagnostics(self, name: str, episode: dict[str, Any], success: bool | None,
                           diagnostics: Mapping[str, Any]) -> None:
        group = self._file.require_group("diagnostics").create_group(name)
        group.attrs["run_id"] = episode["run_id"]
        group.attrs["episode"] = episode["episode"]
        try:
            group.attrs["json"] = json.dumps({"success": success, **diagnostics}, sort_keys=True, default=json_default)
        except TypeError as error:
            raise TypeError(f"cannot store diagnostics of {name}: {error}") from None


def split_names(names: Sequence[str], valid_ratio: float, seed: int) -> tuple[list[str], list[str]]:
    """Seeded train/valid split: ``round(valid_ratio * n)`` names go to valid, chosen by a
    ``numpy.random.Generator`` permutation; at least one name stays in train.  Both lists
    keep the input order."""
    if not 0.0 <= valid_ratio < 1.0:
        raise LabrecordError(f"valid ratio {valid_ratio} is outside [0, 1)")
    n = len(names)
    n_valid = min(int(round(valid_ratio * n)), max(n - 1, 0))
    chosen = set(np.random.default_rng(seed).permutation(n)[:n_valid].tolist())
    train = [name for i, name in enumerate(names) if i not in chosen]
    valid = [name for i, name in enumerate(names) if i in chosen]
    return train, valid


def split_masks(demos: Sequence[tuple[str, bool | None, str | None]]) -> dict[str, list[str]]:
    """The ``mask/*`` lists of a demonstration file from ``(name, success, split)`` rows,
    ``split`` being ``"train"``, ``"valid"`` or None (not accepted): ``train`` and ``valid``
    by split, ``success`` and ``failed`` over every row; each keeps the row order.

    >>> split_masks([("demo_0", True, "train"), ("demo_1", False, None), ("demo_2", True, "valid")])
    {'train': ['demo_0'], 'valid': ['demo_2'], 'success': ['demo_0', 'demo_2'], 'failed': ['demo_1']}
    """
    return {"train": [name for name, _, split in demos if split == "train"],
            "valid": [name for name, _, split in demos if split == "valid"],
            "success": [name for name, success, _ in demos if success],
            "failed": [name for name, success, _ in demos if not success]}


def finish_file(handle: Any, env_args: Mapping[str, Any], total: int, num_samples: int,
                masks: Mapping[str, Sequence[str]], rule: Mapping[str, Any], attempts: Sequence[Attempt]) -> None:
    """Write ``data`` attrs, ``mask/*`` and ``manifest`` into an open h5py file.

    Shared by :class:`DemoWriter` and the merged export so both files look alike.
    """
    data = handle.require_group("data")
    data.attrs["total"] = int(num_samples)
    data.attrs["num_demos"] = int(total)
    data.attrs["env_args"] = json.dumps(dict(env_args), sort_keys=True)
    data.attrs["format"] = DEMO_FORMAT
    mask = handle.require_group("mask")
    for key, names in masks.items():
        values = np.array([name.encode("utf-8") for name in names], dtype="S")
        dataset = mask.create_dataset(key, data=values) if len(values) else mask.create_dataset(key, shape=(0,), dtype="S1")
        for attr, value in rule.items():
            dataset.attrs[attr] = value if isinstance(value, (str, int, float)) else json.dumps(value)
    manifest = np.array([a.to_json() for a in attempts], dtype=object)
    handle.create_dataset("manifest", data=manifest, dtype=_str_dtype(), shape=(len(attempts),))


# -- reading ------------------------------------------------------------------------------


@dataclass
class Demo:
    """One demonstration loaded into memory; every array has N rows."""

    name: str
    run_id: str
    episode: int
    success: bool
    control_hz: float
    action_units: str
    actions: np.ndarray
    obs: dict[str, np.ndarray]
    next_obs: dict[str, np.ndarray]
    rewards: np.ndarray
    dones: np.ndarray
    control_mask: np.ndarray
    timestamps: dict[str, np.ndarray]
    attrs: dict[str, Any]

    @property
    def num_samples(self) -> int:
        return len(self.actions)


class DemoReader:
    """Reads a ``demo.hdf5``; refuses files of a newer format and malformed demos.

    ``keys`` limits which ``obs`` keys :meth:`demo` loads (e.g. leave out cameras).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        h5py = _h5py()
        try:
            self._file = h5py.File(self.path, "r")
        except FileNotFoundError as error:
            raise LabrecordError(f"{self.path}: no such demo file") from error
        except OSError as error:
            raise LabrecordError(f"{self.path}: not a readable HDF5 file ({error})") from error
        try:
            if "data" not in self._file:
                raise LabrecordError(f"{self.path}: no 'data' group; not a robomimic-layout demo file")
            self._check_format()
            self.env_args = self._env_args()
        except LabrecordError:
            self._file.close()
            raise

    def _check_format(self) -> None:
        fmt = self._file["data"].attrs.get("format", DEMO_FORMAT)
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        match = _FORMAT.match(fmt)
        if match is None or int(match.group(1)) > SUPPORTED_MAJOR:
            raise SchemaVersionError(f"{self.path}: demo format {fmt!r} is not readable; this labrecord reads {DEMO_FORMAT}")

    def _env_args(self) -> dict[str, Any]:
        raw = self._file["data"].attrs.get("env_args", "{}")
        try:
            value = json.loads(raw)
        except ValueError as error:
            raise LabrecordError(f"{self.path}: data.attrs['env_args'] is not JSON: {str(raw)[:80]!r}") from error
        if not isinstance(value, dict):
            raise LabrecordError(f"{self.path}: data.attrs['env_args'] is {type(value).__name__}, expected an object")
        return value

    @property
    def demo_names(self) -> list[str]:
        """Demo groups in numeric order (demo_2 before demo_10)."""
        names = [name for name in self._file["data"] if _DEMO.match(name)]
        return sorted(names, key=demo_index)

    def mask(self, key: str) -> list[str]:
        if "mask" not in self._file or key not in self._file["mask"]:
            raise LabrecordError(f"{self.path}: no mask/{key}")
        return [v.decode("utf-8") for v in self._file["mask"][key][()]]

    def mask_attrs(self, key: str) -> dict[str, Any]:
        self.mask(key)
        return {k: _plain(v) for k, v in self._file["mask"][key].attrs.items()}

    @property
    def mask_keys(self) -> list[str]:
        return sorted(self._file["mask"]) if "mask" in self._file else []

    def manifest(self) -> list[Attempt]:
        if "manifest" not in self._file:
            return []
        where = f"{self.path} manifest"
        return [Attempt.from_json(_plain(text), f"{where}[{i}]") for i, text in enumerate(self._file["manifest"][()])]

    def diagnostics(self, name: str) -> dict[str, Any]:
        group = self._file.get(f"diagnostics/{name}")
        if group is None:
            return {}
        return json.loads(_plain(group.attrs["json"]))

    def num_samples(self, name: str) -> int:
        return int(self._group(name).attrs["num_samples"])

    def demo(self, name: str, keys: Sequence[str] | None = None) -> Demo:
        """Load one demo; checks that every array has ``num_samples`` rows."""
        group = self._group(name)
        where = f"{self.path} data/{name}"
        attrs = {k: _plain(v) for k, v in group.attrs.items()}
        for required in ("num_samples", "actions", "rewards", "dones"):
            if required not in attrs and required not in group:
                raise LabrecordError(f"{where}: missing {required!r}")
        n = int(attrs["num_samples"])
        obs = self._arrays(group, "obs", keys, where)
        arrays = {"actions": group["actions"][()], "rewards": group["rewards"][()], "dones": group["dones"][()],
                  "control_mask": group["control_mask"][()] if "control_mask" in group else np.ones(n, dtype=bool)}
        for key, value in {**arrays, **{f"obs/{k}": v for k, v in obs.items()}}.items():
            if len(value) != n:
                raise LabrecordError(f"{where}: {key} has {len(value)} rows, num_samples is {n}")
        return Demo(name=name, run_id=str(attrs.get("run_id", "")), episode=int(attrs.get("episode", -1)),
                    success=bool(attrs.get("success", False)), control_hz=float(attrs.get("control_hz", float("nan"))),
                    action_units=str(attrs.get("action_units", "")), obs=obs,
                    next_obs=self._arrays(group, "next_obs", keys, where),
                    timestamps=self._arrays(group, "timestamps", None, where), attrs=attrs, **arrays)

    def obs_shapes(self, name: str) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Per-row shape and dtype of each observation key, without loading data."""
        group = self._group(name)
        return {key: (ds.shape[1:], ds.dtype) for key, ds in group["obs"].items()} if "obs" in group else {}

    def action_shape(self, name: str) -> tuple[int, ...]:
        return tuple(self._group(name)["actions"].shape[1:])

    def _group(self, name: str) -> Any:
        group = self._file["data"].get(name)
        if group is None:
            raise LabrecordError(f"{self.path}: no demo data/{name}")
        return group

    @staticmethod
    def _arrays(group: Any, folder: str, keys: Sequence[str] | None, where: str) -> dict[str, np.ndarray]:
        if folder not in group:
            return {}
        wanted = list(group[folder]) if keys is None else [k for k in keys if k in group[folder]]
        return {key: group[folder][key][()] for key in wanted}

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> DemoReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def read_demos(path: str | os.PathLike[str]) -> list[Demo]:
    """Every demo of a file, loaded (small files and tests)."""
    with DemoReader(path) as reader:
        return [reader.demo(name) for name in reader.demo_names]
