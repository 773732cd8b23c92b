"""lerobot-eval output folders: the ``eval_info.json`` a ``lerobot-eval`` run leaves, and its videos.

``lerobot-eval`` (``lerobot.scripts.lerobot_eval.eval_main``) writes, under its
``--output_dir``, one JSON file and the rendered episodes.  Two layouts exist:

* lerobot >= 0.4 (``eval_policy_all``; 0.6.1 writes this): ``per_task`` lists one entry per
  task of each task group (``{"task_group", "task_id", "metrics": {"sum_rewards",
  "max_rewards", "successes", "video_paths", "predicted_video_paths"}}``, the lists indexed
  by episode), ``per_group`` the group aggregates with their ``n_episodes``, ``overall`` the
  aggregates of all tasks.  Videos are ``videos/<task_group>_<task_id>/eval_episode_<k>.mp4``
  for the first ten episodes of each task.  Seeds are not written: every task's episode
  ``k`` ran with seed ``--seed + k`` (lerobot's ``eval_policy``), so they are known only
  when the user states the ``--seed`` of the evaluation (``ImportOptions.start_seed``);
* lerobot <= 0.3 (``eval_policy``; the ``eval_info.json`` found beside older Hub
  checkpoints): ``per_episode`` lists ``{"episode_ix", "sum_reward", "max_reward",
  "success", "seed"}``, ``aggregated`` the averages, ``video_paths`` the videos
  ``videos/eval_episode_<k>.mp4``.

Neither layout records the lerobot version, the policy, the environment's control rate
or an episode's length: they stay null.  JSON is read with the standard library, which
takes the ``NaN`` lerobot writes for an empty aggregate; no lerobot is needed.

One run per episode.  The declared episode set is every task x ``n_episodes`` (lerobot runs
the same number of episodes on every task: the longest list of any task, or the group's
``n_episodes`` shared among its tasks when that is larger); an episode the file holds no
entry for is missing, never a failure.  An entry that cannot be read (no ``success``, a
``success`` that is not a boolean, a reward that is not a number) gives one error naming
the file and the episode; the other episodes still import.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.fileio import dumps
from labrecord.imports.runs import ImportOptions, Member, RecordError, SourceFile, SourceRecord, safe_name
from labrecord.rundir import SOURCE_JSON_FILE

EVAL_INFO = "eval_info.json"
#: the per-episode lists of a ``per_task`` entry's metrics, and the entry field each gives
METRIC_LISTS = (("sum_rewards", "sum_reward"), ("max_rewards", "max_reward"), ("successes", "success"))
_ABSENT = object()


def find_eval_info(path: str) -> Path:
    """The ``eval_info.json`` at ``path``: the file itself or the one in an output folder."""
    target = Path(path)
    if target.is_dir():
        found = target / EVAL_INFO
        if not found.is_file():
            raise LabrecordError(f"{target}: no {EVAL_INFO} (the --output_dir of a lerobot-eval run)")
        return found
    if not target.is_file():
        raise LabrecordError(f"{target}: no such file")
    return target


@dataclass
class _Task:
    """One task of the evaluation as the file lists it: its episodes' entries by index."""

    group: str | None
    task_id: int | None
    where: str                                # the JSON path of the task's entry
    entries: dict[int, dict[str, Any] | RecordError] = field(default_factory=dict)
    videos: dict[int, str] = field(default_factory=dict)
    declared: int = 0

    @property
    def name(self) -> str | None:
        """lerobot's own name of the task (its videos folder): ``<task_group>_<task_id>``."""
        return None if self.group is None else f"{self.group}_{self.task_id}"

    def record(self, episode: int) -> str:
        return f"episode_{episode}" if self.name is None else f"{self.name}/episode_{episode}"

    def instance(self, episode: int) -> str:
        return safe_name(f"ep{episode:04d}" if self.name is None else f"{self.name}-ep{episode:04d}")


def _load(info_path: Path) -> dict[str, Any]:
    try:
        # json (not msgspec): lerobot writes NaN for an empty aggregate, which only it accepts
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise LabrecordError(f"{info_path}: not UTF-8 text ({error})") from None
    except ValueError as error:
        raise LabrecordError(f"{info_path}: not JSON ({error})") from None
    if not isinstance(info, dict):
        raise LabrecordError(f"{info_path}: holds a JSON {type(info).__name__}, expected the object lerobot-eval writes")
    if not isinstance(info.get("per_task"), list) and not isinstance(info.get("per_episode"), list):
        raise LabrecordError(f"{info_path}: neither a per_task nor a per_episode list; not a lerobot-eval eval_info.json")
    return info


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _entry(where: str, task: _Task, episode: int, values: dict[str, Any], at: dict[str, str]) -> dict[str, Any] | RecordError:
    """The episode's fields checked, or the error naming the first one that is wrong."""
    record, instance = task.record(episode), task.instance(episode)
    success = values.get("success", _ABSENT)
    if success is _ABSENT:
        return RecordError(f"{where}: {record}: no success ({at['success']})", record, instance)
    if not isinstance(success, bool):
        return RecordError(f"{where}: {record}: success is {success!r} ({at['success']}), expected true or false",
                           record, instance)
    out: dict[str, Any] = {"success": success}
    for name in ("sum_reward", "max_reward"):
        value = values.get(name, _ABSENT)
        if value is _ABSENT or value is None:
            out[name] = None
        elif not _is_number(value):
            return RecordError(f"{where}: {record}: {name} is {value!r} ({at[name]}), expected a number",
                               record, instance)
        else:
            # JSON holds no NaN or infinity: such a reward is kept as null
            out[name] = float(value) if math.isfinite(value) else None
    seed = values.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        return RecordError(f"{where}: {record}: seed is {seed!r} ({at['seed']}), expected an integer", record, instance)
    out["seed"] = seed
    return out


def _per_task(info: dict[str, Any], where: str) -> tuple[list[_Task], list[RecordError]]:
    tasks: list[_Task] = []
    broken: list[RecordError] = []
    for i, item in enumerate(info["per_task"]):
        at = f"per_task[{i}]"
        metrics = item.get("metrics") if isinstance(item, dict) else None
        group = item.get("task_group") if isinstance(item, dict) else None
        task_id = item.get("task_id") if isinstance(item, dict) else None
        problem = None
        if not isinstance(item, dict):
            problem = f"is a {type(item).__name__}, expected an object"
        elif not isinstance(group, str) or not group:
            problem = f"task_group is {group!r}, expected a name"
        elif not isinstance(task_id, int) or isinstance(task_id, bool):
            problem = f"task_id is {task_id!r}, expected an integer"
        elif not isinstance(metrics, dict):
            problem = f"metrics is {type(metrics).__name__}, expected an object"
        else:
            for key, _ in METRIC_LISTS:
                if key in metrics and not isinstance(metrics[key], list):
                    problem = f"metrics.{key} is {type(metrics[key]).__name__}, expected a list"
        named = isinstance(group, str) and bool(group) and isinstance(task_id, int) and not isinstance(task_id, bool)
        if problem is not None:
            broken.append(RecordError(f"{where}: {at} {problem}", at))
            if named and not any(t.group == group and t.task_id == task_id for t in tasks):
                # the task is known, its episodes are not: all of them stay missing
                tasks.append(_Task(group=group, task_id=task_id, where=at))
            continue
        assert isinstance(group, str) and isinstance(task_id, int) and isinstance(metrics, dict)
        task = _Task(group=group, task_id=task_id, where=at)
        lists = {field_: metrics.get(key, []) for key, field_ in METRIC_LISTS}
        listed = max(len(values) for values in lists.values())
        for k in range(listed):
            values = {field_: values[k] for field_, values in lists.items() if k < len(values)}
            paths = {field_: f"{at}.metrics.{key}[{k}]" for key, field_ in METRIC_LISTS} | {"seed": ""}
            task.entries[k] = _entry(where, task, k, values, paths)
        videos = metrics.get("video_paths")
        if isinstance(videos, list):
            task.videos = {k: v for k, v in enumerate(videos) if isinstance(v, str)}
        if any(t.name == task.name for t in tasks):
            broken.append(RecordError(f"{where}: {at} repeats task {task.name}", at))
            continue
        tasks.append(task)
    # lerobot-eval runs n_episodes on every task: the longest list, or the group's count
    # shared among its tasks, whichever is larger, is the declared number per task
    longest = max((max(t.entries, default=-1) + 1 for t in tasks), default=0)
    found = info.get("per_group")
    groups: dict[str, Any] = found if isinstance(found, dict) else {}
    for task in tasks:
        declared = longest
        group = groups.get(task.group or "")
        count = group.get("n_episodes") if isinstance(group, dict) else None
        members = sum(1 for t in tasks if t.group == task.group)
        if isinstance(count, int) and not isinstance(count, bool) and count % members == 0:
            declared = max(declared, count // members)
        task.declared = declared
    return tasks, broken


def _per_episode(info: dict[str, Any], where: str) -> tuple[list[_Task], list[RecordError]]:
    task = _Task(group=None, task_id=None, where="per_episode")
    broken: list[RecordError] = []
    for i, item in enumerate(info["per_episode"]):
        at = f"per_episode[{i}]"
        episode = item.get("episode_ix") if isinstance(item, dict) else None
        if not isinstance(item, dict):
            broken.append(RecordError(f"{where}: {at} is a {type(item).__name__}, expected an object", at))
            continue
        if not isinstance(episode, int) or isinstance(episode, bool) or episode < 0:
            broken.append(RecordError(f"{where}: {at}: episode_ix is {episode!r}, expected an index >= 0", at))
            continue
        if episode in task.entries:
            broken.append(RecordError(f"{where}: {at}: episode_ix {episode} is listed twice", task.record(episode),
                                      task.instance(episode)))
            continue
        paths = {name: f"{at}.{name}" for name in ("success", "sum_reward", "max_reward", "seed")}
        task.entries[episode] = _entry(where, task, episode, item, paths)
    videos = info.get("video_paths")
    if isinstance(videos, list):
        task.videos = {k: v for k, v in enumerate(videos) if isinstance(v, str)}
    task.declared = max(task.entries, default=-1) + 1
    return [task], broken


def _video(folder: Path, task: _Task, episode: int) -> Path | None:
    """The episode's video in the output folder, found by the name lerobot gives it.

    The listed path is where lerobot wrote it, relative to the directory lerobot-eval ran
    in (or absolute): the folder may have moved since, so only its name is kept and the
    file is looked up where lerobot puts it, ``videos/[<task_group>_<task_id>/]``."""
    listed = task.videos.get(episode)
    if listed is None:
        return None
    videos = folder / "videos" if task.name is None else folder / "videos" / task.name
    found = videos / Path(listed).name
    return found if found.is_file() else None


def lerobot_eval_source(path: str, options: ImportOptions) -> SourceFile:
    info_path = find_eval_info(path)
    where = str(info_path)
    folder = info_path.parent
    info = _load(info_path)
    layout = "per_task" if isinstance(info.get("per_task"), list) else "per_episode"
    tasks, broken = _per_task(info, where) if layout == "per_task" else _per_episode(info, where)
    start_seed = options.start_seed
    records: list[SourceRecord | LabrecordError] = list(broken)
    expected: list[Member] = []
    for task in tasks:
        for episode in range(task.declared):
            seed = None if start_seed is None else start_seed + episode
            entry = task.entries.get(episode)
            if isinstance(entry, dict):
                if entry["seed"] is not None and seed is not None and entry["seed"] != seed:
                    entry = RecordError(f"{where}: {task.record(episode)}: the file gives seed {entry['seed']}, "
                                        f"--start-seed {start_seed} gives {seed}", task.record(episode),
                                        task.instance(episode))
                elif entry["seed"] is not None:
                    seed = entry["seed"]
            expected.append(Member(instance_id=task.instance(episode), task_id=task.name,
                                   fields={"task_group": task.group, "task_id": task.task_id, "episode": episode,
                                           "seed": seed}))
            if entry is None:
                continue  # declared, not listed: missing
            if isinstance(entry, RecordError):
                records.append(entry)
                continue
            records.append(_record(task, episode, entry, seed, layout, folder, info_path))
    return SourceFile(kind="lerobot-eval", path=os.path.abspath(info_path), stem=folder.resolve().name,
                      format_version=None, task_id=None, control_hz=None, records=records, expected=expected)


def _record(task: _Task, episode: int, entry: dict[str, Any], seed: int | None, layout: str, folder: Path,
            info_path: Path) -> SourceRecord:
    attrs: dict[str, Any] = {"layout": layout, "task_group": task.group, "task_id": task.task_id,
                             "episode_ix": episode, "success": entry["success"], "sum_reward": entry["sum_reward"],
                             "max_reward": entry["max_reward"], "seed": seed,
                             "video_path": task.videos.get(episode)}
    document = {"eval_info": str(info_path), "entry": task.where, "episode": attrs}
    digest = hashlib.sha256(json.dumps(attrs, sort_keys=True).encode())
    videos: dict[str, Path] = {}
    video = _video(folder, task, episode)
    if video is not None:
        videos["episode"] = video
        digest.update(video.read_bytes())

    def write_document(path: Path, run_id: str) -> None:
        path.write_bytes(dumps(document))

    return SourceRecord(
        name=task.record(episode), index=episode, content_hash="sha256:" + digest.hexdigest(), attrs=attrs,
        num_samples=0, success=entry["success"], seed=seed, task_id=task.name, instance_id=task.instance(episode),
        videos=videos, copy_to=write_document, copy_name=SOURCE_JSON_FILE,
        variant={} if task.group is None else {"lerobot_eval": {"task_group": task.group, "task_id": task.task_id}},
    )
