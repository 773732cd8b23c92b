"""HDF5 demonstration files in robomimic's layout and Isaac Lab's recorder layout.

Both write ``data/demo_<k>`` groups under a ``data`` group whose ``env_args`` attribute
is a JSON document (``env_name``, ``type``, ``env_kwargs``) and whose ``total`` counts
samples.  Per demo:

* robomimic: attrs ``num_samples`` (and ``model_file`` for robosuite); datasets
  ``actions`` (N, A), ``states`` (N, S) — the flat simulator state, without names —
  ``rewards``, ``dones``, ``obs/<key>``, ``next_obs/<key>``; no success attribute;
* Isaac Lab: attrs ``num_samples``, ``seed``, ``success``; datasets ``actions``,
  ``obs/<key>``, ``initial_state/<articulation|rigid_object>/<name>/<stream>`` (one row)
  and ``states/...`` (N rows) with ``root_pose`` (x y z qw qx qy qz), ``root_velocity``
  (linear, angular), ``joint_position``, ``joint_velocity``.

Measured state streams become contract columns by name: a body ``<name>`` with a
``root_pose`` (Isaac Lab) or an observation ``<name>_pos`` (robosuite convention) gives
``<name>_x, _y, _z``; its ``root_velocity`` gives ``<name>_speed``; an observation whose
key is itself a column of the contract (``pan_force_n``) is taken as it is.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.imports.runs import ImportOptions, RecordError, SourceFile, SourceRecord

_DEMO_PREFIX = "demo_"


def _plain(value: Any) -> Any:
    """An HDF5 attribute value as JSON-able Python."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.dtype.kind in "OSU" else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _attrs(node: Any) -> dict[str, Any]:
    return {key: _plain(node.attrs[key]) for key in sorted(node.attrs)}


def _attrs_json(node: Any, keep: dict[str, Any] | None = None) -> bytes:
    """The node's attributes as hashed (``keep`` receives them as read)."""
    # most datasets have no attributes: counting them is a fifth of the cost of listing them
    if len(node.attrs) == 0:
        return b"{}"
    attrs = _attrs(node)
    if keep is not None:
        keep.update(attrs)
    return json.dumps(attrs, sort_keys=True, default=str).encode()


#: dtype kinds whose array read from a dataset has the dataset's own dtype and shape
_PLAIN_KINDS = frozenset("biufc")


def _hash_node(node: Any, digest: Any, h5py: Any, prefix: str = "",
               found: dict[str, tuple[Any, Any]] | None = None, attrs: dict[str, Any] | None = None) -> None:
    """Feed a group's attributes (also kept in ``attrs``) and datasets, in name order, into
    ``digest``; each dataset read is kept in ``found`` (``/obs/joint_pos`` -> (dataset,
    data)) so that the rest of the reading does not open or read it again."""
    digest.update(_attrs_json(node, attrs))
    for key in sorted(node):
        child = node[key]
        name = f"{prefix}/{key}"
        if isinstance(child, h5py.Group):
            digest.update(f"group {name}\n".encode())
            _hash_node(child, digest, h5py, name, found)
            continue
        data = child[()]
        if found is not None:
            found[name] = (child, data)
        plain = isinstance(data, np.ndarray) and data.dtype.kind in _PLAIN_KINDS
        dtype, shape = (data.dtype.str, data.shape) if plain else (child.dtype.str, child.shape)
        digest.update(f"dataset {name} {dtype} {shape}\n".encode())
        if isinstance(data, np.ndarray) and data.dtype.kind != "O":
            digest.update(np.ascontiguousarray(data).tobytes())
        else:
            digest.update(json.dumps(_plain(data), default=str).encode())
        digest.update(_attrs_json(child))


def content_hash(group: Any, found: dict[str, tuple[Any, Any]] | None = None,
                 attrs: dict[str, Any] | None = None) -> str:
    """``sha256:`` over the group's attributes and datasets (see :func:`_hash_node`)."""
    import h5py

    digest = hashlib.sha256()
    _hash_node(group, digest, h5py, found=found, attrs=attrs)
    return "sha256:" + digest.hexdigest()


def _children(found: dict[str, tuple[Any, Any]], folder: str, groups: bool) -> list[str]:
    """Names directly inside ``folder`` (``/states/articulation``) of the demo whose datasets
    are ``found``, in name order: the subgroups (``groups``) or the datasets."""
    prefix = folder + "/"
    names: dict[str, None] = {}
    for path in found:
        if path.startswith(prefix):
            name, nested, _ = path[len(prefix):].partition("/")
            if bool(nested) == groups:
                names[name] = None
    return list(names)


def _state_columns(group: Any, h5py: Any, n: int,
                   found: dict[str, tuple[Any, Any]] | None = None) -> dict[str, np.ndarray]:
    """Contract columns from the measured state streams of one demo (see the module doc);
    ``found``: its datasets as read while hashing (:func:`_hash_node`), read here when not
    given.  The walk goes over ``found`` instead of opening the groups again."""
    if found is None:
        found = {}
        content_hash(group, found)
    columns: dict[str, np.ndarray] = {}
    for kind in ("rigid_object", "articulation"):
        for body in _children(found, f"/states/{kind}", groups=True):
            pose = found.get(f"/states/{kind}/{body}/root_pose")
            if pose is not None and pose[0].shape[:1] == (n,) and pose[0].ndim == 2 and pose[0].shape[1] >= 3:
                for axis, col in zip("xyz", range(3)):
                    columns[f"{body}_{axis}"] = pose[1][:, col].astype(np.float64)
            velocity = found.get(f"/states/{kind}/{body}/root_velocity")
            if velocity is not None and velocity[0].shape[:1] == (n,) and velocity[0].ndim == 2 \
                    and velocity[0].shape[1] >= 3:
                columns[f"{body}_speed"] = np.linalg.norm(velocity[1][:, :3].astype(np.float64), axis=1)
    for key in _children(found, "/obs", groups=False):
        data, values = found[f"/obs/{key}"]
        if data.shape[:1] != (n,):
            continue
        if key.endswith("_pos") and data.ndim == 2 and data.shape[1] == 3:
            values = values.astype(np.float64)
            for axis, col in zip("xyz", range(3)):
                columns.setdefault(f"{key[:-4]}_{axis}", values[:, col])
        elif data.ndim == 1 or (data.ndim == 2 and data.shape[1] == 1):
            columns.setdefault(key, values.reshape(n))
    return columns


def _env_args(data: Any, where: str) -> dict[str, Any]:
    raw = data.attrs.get("env_args")
    if raw is None:
        return {}
    try:
        value = json.loads(_plain(raw))
    except (TypeError, ValueError) as error:
        raise LabrecordError(f"{where}: data attribute env_args is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise LabrecordError(f"{where}: data attribute env_args is {type(value).__name__}, expected an object")
    return value


def _demo_names(data: Any) -> list[str]:
    """Demo groups in index order (demo_2 before demo_10); other names are not demos."""
    names = [k for k in data if k.startswith(_DEMO_PREFIX) and k[len(_DEMO_PREFIX):].isdigit()]
    return sorted(names, key=lambda k: int(k[len(_DEMO_PREFIX):]))


def _copier(handle: Any, name: str, env_args_raw: Any, num_samples: int) -> Any:
    """Writes ``data/<name>`` alone into a file of the same layout."""
    def copy(path: Path, run_id: str) -> None:
        import h5py

        with h5py.File(path, "w") as out:
            data = out.create_group("data")
            if env_args_raw is not None:
                data.attrs["env_args"] = env_args_raw
            data.attrs["total"] = num_samples
            handle.copy(handle["data"][name], data, name=name)
    return copy


def _read_record(kind: str, handle: Any, name: str, where: str, index: int, task_id: str | None,
                 env_args_raw: Any) -> SourceRecord:
    import h5py

    record = f"data/{name}"
    group = handle["data"][name]
    if not isinstance(group, h5py.Group):
        raise RecordError(f"{where}: {record} is a dataset, expected a demo group", record)
    actions = group.get("actions")
    if not isinstance(actions, h5py.Dataset):
        raise RecordError(f"{where}: {record} has no actions dataset", record)
    if actions.ndim != 2:
        raise RecordError(f"{where}: {record}/actions has shape {actions.shape}, expected (N, A)", record)
    n = int(actions.shape[0])
    declared = group.attrs.get("num_samples")
    if declared is not None and int(_plain(declared)) != n:
        raise RecordError(f"{where}: {record} attribute num_samples is {_plain(declared)} but actions has {n} rows", record)
    found: dict[str, tuple[Any, Any]] = {}
    attrs: dict[str, Any] = {}
    digest = content_hash(group, found, attrs)
    for path, (item, _) in found.items():
        folder, _, key = path[1:].partition("/")
        # one row per step, nested streams included (states/<kind>/<body>/...)
        if key and folder in ("obs", "next_obs", "states") and item.shape[:1] != (n,):
            raise RecordError(f"{where}: {record}/{folder}/{key} has {item.shape[0] if item.shape else 0} "
                              f"rows, actions has {n}", record)
    success = attrs.get("success")
    if success is not None and not isinstance(success, (bool, int)):
        raise RecordError(f"{where}: {record} attribute success is {success!r}, expected a boolean", record)
    seed = attrs.get("seed")
    if seed is not None and not isinstance(seed, int):
        raise RecordError(f"{where}: {record} attribute seed is {seed!r}, expected an integer", record)
    return SourceRecord(
        name=record, index=index, content_hash=digest, attrs=attrs, num_samples=n,
        success=None if success is None else bool(success), seed=seed, task_id=task_id,
        action_dim=int(actions.shape[1]), columns=_state_columns(group, h5py, n, found),
        copy_to=_copier(handle, name, env_args_raw, n),
    )


def _open(kind: str, path: str, options: ImportOptions) -> SourceFile:
    import h5py

    where = os.fspath(path)
    if not os.path.isfile(where):
        raise LabrecordError(f"{where}: no such file")
    try:
        handle = h5py.File(where, "r")
    except OSError as error:
        raise LabrecordError(f"{where}: not an HDF5 file ({error})") from None
    try:
        data = handle.get("data")
        if not isinstance(data, h5py.Group):
            raise LabrecordError(f"{where}: no 'data' group; expected data/demo_<k> groups ({kind} layout)")
        env_args = _env_args(data, where)
        task_id = env_args.get("env_name") if isinstance(env_args.get("env_name"), str) else None
        kwargs = env_args.get("env_kwargs")
        hz = kwargs.get("control_freq") if isinstance(kwargs, dict) else None
        records: list[SourceRecord | LabrecordError] = []
        for name in _demo_names(data):
            try:
                records.append(_read_record(kind, handle, name, where, int(name[len(_DEMO_PREFIX):]), task_id,
                                            data.attrs.get("env_args")))
            except RecordError as error:
                records.append(error)
            except (OSError, ValueError, KeyError, TypeError) as error:
                records.append(RecordError(f"{where}: data/{name}: unreadable ({error})", f"data/{name}"))
        declared = data.attrs.get("format", data.attrs.get("version"))
        variant = {"env_args": env_args} if env_args else {}
        return SourceFile(kind=kind, path=os.path.abspath(where), stem=Path(where).stem,
                          format_version=None if declared is None else str(_plain(declared)),
                          task_id=task_id, control_hz=float(hz) if isinstance(hz, (int, float)) else None,
                          records=records, close=handle.close, variant=variant)
    except BaseException:
        handle.close()
        raise


def robomimic_source(path: str, options: ImportOptions) -> SourceFile:
    return _open("robomimic", path, options)


def isaaclab_source(path: str, options: ImportOptions) -> SourceFile:
    return _open("isaaclab", path, options)
