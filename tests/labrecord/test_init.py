"""The top-level ``labrecord`` namespace: light to import, every entry point one attribute away."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import labrecord


def test_every_entry_point_resolves_to_its_module() -> None:
    for name, module in labrecord.LAZY.items():
        value = getattr(labrecord, name)
        assert value is getattr(importlib.import_module(module), name), name
        assert name in labrecord.__all__ and name in dir(labrecord)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Corpse'"):
        labrecord.Corpse  # noqa: B018


def test_import_loads_no_wing_until_a_name_is_used() -> None:
    code = ("import sys, labrecord; before = {m for m in sys.modules if m.startswith('labrecord.')};"
            "labrecord.RunWriter; after = {m for m in sys.modules if m.startswith('labrecord.')};"
            "wings = ('labrecord.scorers', 'labrecord.sim', 'labrecord.recorders', 'labrecord.exporters',"
            " 'labrecord.chemdata', 'labrecord.store', 'labrecord.rundir');"
            "print(sorted(m for m in before if m.startswith(wings)), 'labrecord.rundir' in after,"
            " any(m.startswith('labrecord.sim') for m in after))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "True", "False"]


def test_the_package_imports_only_the_core_statically() -> None:
    """The root may be imported by any core module (``from labrecord import LabrecordError``);
    a static import of a wing here, even under TYPE_CHECKING, would make every such module
    import the wings in the import-linter graph."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(labrecord.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {m for m in imported if m and m.startswith("labrecord")} <= {"labrecord.errors", "labrecord.models"}
