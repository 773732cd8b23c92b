"""Test helpers shared across folders."""
from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType

import pytest


def in_ci() -> bool:
    """The one test that decides "running in CI": ``CI=true`` (``.ci/run`` is started so)."""
    return os.environ.get("CI", "").lower() == "true"


def require(available: bool, what: str, install: str) -> None:
    """Skip when a tool or reader is missing locally; fail in CI so nothing is skipped silently."""
    if available:
        return
    if in_ci():
        pytest.fail(f"{what} is required in CI: {install}")
    pytest.skip(f"{what} not available ({install})", allow_module_level=True)


def require_module(name: str, install: str) -> ModuleType:
    """Import ``name`` or skip (fail in CI)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require(False, f"the Python package {name!r}", install)
        raise


def require_programs(*names: str, install: str) -> None:
    missing = [name for name in names if shutil.which(name) is None]
    require(not missing, f"the program(s) {', '.join(missing)}", install)
