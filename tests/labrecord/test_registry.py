"""Tests for labrecord.registry: writing and merging population registries."""
from __future__ import annotations

from pathlib import Path

import pytest

from labrecord.errors import LabrecordError
from labrecord.models import Checkpoint, Instance
from labrecord.registry import register_population


def test_merge_appends_only_new_records_and_refuses_redrawn_ones(tmp_path: Path) -> None:
    """Registering [a, a/d0] then [a, b] gives a, a/d0, b in that order; a with other
    fields is refused, naming the line that holds it."""
    a = Instance(instance_id="a", task_id="t", fields={"seed": 1})
    path = register_population(tmp_path, "p", [a, Checkpoint(instance_id="a", decision="d0")])
    register_population(tmp_path, "p", [a, Instance(instance_id="b", task_id="t")])
    assert [line.split(b'"instance_id":')[1][:3] for line in path.read_bytes().splitlines()] == [b'"a"', b'"a"', b'"b"']
    before = path.read_bytes()
    with pytest.raises(LabrecordError, match=r"p\.jsonl:1: instance 'a' is registered as"):
        register_population(tmp_path, "p", [Instance(instance_id="a", task_id="t", fields={"seed": 2})])
    assert path.read_bytes() == before
