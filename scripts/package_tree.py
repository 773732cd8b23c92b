"""Lay the installed ``labrecord`` package out as one folder tree of links.

setup.py installs the wing folders under the ``labrecord`` namespace (``scorers/`` is
``labrecord.scorers`` ...).  mypy and import-linter name modules after folders, so they are
run on a tree where ``labrecord/scorers`` is a link to ``scorers/``.  The mapping is read from
setup.py's ``WINGS`` table, the one place it is written.

Usage: python3 scripts/package_tree.py DEST   (DEST must be an empty or missing folder)
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def wings(setup_py: Path = ROOT / "setup.py") -> dict[str, str]:
    """The folder -> dotted package table ``WINGS`` of setup.py, read without running it."""
    for node in ast.parse(setup_py.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "WINGS"):
            table = ast.literal_eval(node.value)
            if isinstance(table, dict):
                return {str(k): str(v) for k, v in table.items()}
    raise SystemExit(f"Error: {setup_py}: no WINGS table")


def build(dest: Path, root: Path = ROOT) -> None:
    """Links under ``dest`` so that ``dest/labrecord/<wing>`` is the wing's folder."""
    table = wings(root / "setup.py")
    top = dest / "labrecord"
    top.mkdir(parents=True)
    for entry in sorted((root / table.pop("labrecord") if "labrecord" in table else root).iterdir()):
        (top / entry.name).symlink_to(entry)
    for folder, dotted in table.items():
        link = dest.joinpath(*dotted.split("."))
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(root / folder)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    build(Path(sys.argv[1]))
