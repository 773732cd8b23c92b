"""The package layout of docs/design.md: wings install under labrecord, the core stays light."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from labrecord.cli import COMMANDS, cli


@pytest.mark.parametrize("wing", ["scorers", "recorders", "sim", "exporters", "chemdata"])
def test_wings_install_under_labrecord(wing: str) -> None:
    module = importlib.import_module(f"labrecord.{wing}")
    assert module.__file__ is not None and f"/{wing}/__init__.py" in module.__file__


def test_importing_the_core_imports_no_extra_or_wing() -> None:
    code = ("import sys, labrecord, labrecord.rundir, labrecord.validation, labrecord.cli;"
            "heavy = {'mujoco', 'rdkit', 'lerobot', 'ray', 'torch', 'matplotlib', 'isaacsim',"
            " 'labrecord.sim', 'labrecord.chemdata', 'labrecord.recorders', 'labrecord.exporters'};"
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_registered_command_loads_and_has_an_example() -> None:
    from click.testing import CliRunner

    runner = CliRunner()
    for name in COMMANDS:
        result = runner.invoke(cli, [name, "-h"])
        assert result.exit_code == 0, f"{name}: {result.output}"
        assert "Example:" in result.output, f"{name} --help has no Example block"


def test_the_import_contracts_name_every_core_module() -> None:
    """scripts/lint.sh checks the layers with import-linter; its core contract lists the core
    modules by name, so a new module of labrecord/ must be added there to be checked."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    contracts = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    core = next(c for c in contracts if c["name"].startswith("The core"))
    present = {f"labrecord.{p.stem}" for p in (root / "labrecord").iterdir()
               if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert present - {"labrecord.cli"} == set(core["source_modules"])


def test_every_command_takes_the_shared_json_option() -> None:
    """Every leaf command carries the --json option of labrecord.cli.common.output_options."""
    import click

    def leaves(group: click.Group, ctx: click.Context, prefix: str) -> list[tuple[str, click.Command]]:
        found = []
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is None:
                continue
            if isinstance(command, click.Group):
                found += leaves(command, ctx, f"{prefix}{name} ")
            else:
                found.append((prefix + name, command))
        return found

    ctx = click.Context(cli)
    commands = leaves(cli, ctx, "")
    assert len(commands) >= 15
    missing = [name for name, command in commands
               if not any(p.name == "as_json" and "--json" in p.opts for p in command.params)]
    assert missing == []


def test_the_checked_tree_is_the_installed_layout(tmp_path) -> None:
    """scripts/lint.sh type-checks and layer-checks a tree of links built from setup.py's
    WINGS; each wing there must be the folder the installed package imports it from."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("package_tree", root / "scripts" / "package_tree.py")
    assert spec is not None and spec.loader is not None
    package_tree = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(package_tree)
    table = package_tree.wings(root / "setup.py")
    assert set(table.values()) == {"labrecord", *(f"labrecord.{w}" for w in ("scorers", "recorders", "sim", "exporters", "chemdata"))}
    package_tree.build(tmp_path, root)
    for folder, dotted in table.items():
        installed = Path(importlib.import_module(dotted).__file__).resolve().parent  # type: ignore[arg-type]
        assert installed == (root / folder).resolve()
        assert tmp_path.joinpath(*dotted.split("."), "__init__.py").resolve() == installed / "__init__.py"
    assert (tmp_path / "labrecord" / "rundir.py").resolve() == (root / "labrecord" / "rundir.py").resolve()


def test_the_design_lives_in_the_repository() -> None:
    """docs/design.md is the design document; nothing points to one kept outside the clone."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    assert (root / "docs" / "design.md").is_file()
    outside = ("DESIGN" + ".md", "../" + "shared")
    folders = ("labrecord", "scorers", "recorders", "sim", "exporters", "chemdata", "docs", "tests", "scripts",
               "benchmarks", "examples")
    files = [root / name for name in ("README.md", "CONTRIBUTING.md", "setup.py", "pyproject.toml")]
    files += [p for folder in folders for p in (root / folder).rglob("*") if p.suffix in (".py", ".md", ".sh", ".toml")]
    found = [f"{p.relative_to(root)}: {word}" for p in files for word in outside if word in p.read_text(errors="replace")]
    assert found == []
