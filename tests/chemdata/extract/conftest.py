"""Shared fixtures: figures rendered from known reactions, and stand-in tools."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.support import require_module, require_programs

require_module("rdkit", 'pip install "labrecord[chem]"')

REACTIONS = """\
# a two-component coupling, a two-step scheme and a table scope
c1ccccc1I.OB(O)c1ccc(C)cc1>[Pd]>c1ccccc1-c1ccc(C)cc1 suzuki-1
Brc1ccc(C(F)(F)F)cc1>>OB(O)c1ccc(C(F)(F)F)cc1>>Cc1ccc(-c2ccc(C(F)(F)F)cc2)cc1 two-step
@scope-table [*:1]c1ccc(I)cc1>>[*:1]c1ccc(-c2ccccc2)cc1 R1=Me,OMe,CF3 scope-t
"""

@pytest.fixture
def _debian_tools() -> None:
    require_programs("osra", "tesseract", install="apt-get install osra tesseract-ocr")


#: marks a test that runs the real osra and tesseract (skipped locally without them, fails in CI)
needs_tools = pytest.mark.usefixtures("_debian_tools")


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of figures (PNG) with their gold records (JSON) beside them."""
    from labrecord.chemdata.render import render

    root = tmp_path_factory.mktemp("figures")
    source = root / "reactions.smi"
    source.write_text(REACTIONS)
    figures = root / "figures"
    render(source, figures)
    return figures


def fake_tool(folder: Path, name: str, body: str) -> str:
    """An executable shell script standing in for a tool; returns its path."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)
