"""Lay the installed ``labrecord`` package out as one folder tree of links.

setup.py installs the wing folders under the ``labrecord`` namespace (``scorers/`` becomes
``labrecord.scorers`` ...).  mypy and import-linter name a module after the folders it sits
in and cannot read an editable install's mapping, so scripts/lint.sh runs them on a scratch
tree where ``labrecord/scorers`` links to ``scorers/``.  The mapping is read from setup.py's
``WINGS`` table (without running setup.py), the one place it is written.

Usage: python3 scripts/package_tree.py DEST    (DEST: a missing or empty folder)
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wings(setup_py: Path) -> dict[str, str]:
    """setup.py's ``WINGS``: source folder -> dotted package it installs as."""
    for node in ast.parse(setup_py.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "WINGS"):
            table = ast.literal_eval(node.value)
            if isinstance(table, dict):
                return {str(folder): str(dotted) for folder, dotted in table.items()}
    raise SystemExit(f"Error: {setup_py}: no WINGS table")


def build(dest: Path, root: Path = ROOT) -> None:
    """``dest/labrecord/...``: the core folder's entries, then each wing linked under its name."""
    table = wings(root / "setup.py")
    core = next(folder for folder, dotted in table.items() if "." not in dotted)
    top = dest / table[core]
    top.mkdir(parents=True, exist_ok=True)
    for entry in sorted((root / core).iterdir()):
        if entry.name != "__pycache__":
            (top / entry.name).symlink_to(entry)
    for folder, dotted in table.items():
        if folder != core:
            dest.joinpath(*dotted.split(".")).symlink_to(root / folder)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    build(Path(sys.argv[1]))
