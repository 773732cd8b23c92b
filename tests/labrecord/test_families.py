"""The family registry: what the CLI, contracts and measurements read, and its promise to
import nothing heavy."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from labrecord.errors import LabrecordError
from labrecord.families import FAMILIES, SERVED_POLICIES, PolicyOption, family, load, with_study
from labrecord.measurements import FAMILY_COLUMNS, OPTIONAL_COLUMNS

CLI = Path(__file__).resolve().parents[2] / "labrecord" / "cli"


def test_reading_the_registry_and_building_the_commands_loads_no_simulator():
    code = ("import sys, labrecord.families, labrecord.cli.sim, labrecord.cli.study, labrecord.cli.demo; "
            "heavy = [m for m in ('mujoco', 'numpy', 'labrecord.sim') if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_measurement_schema_and_contracts_come_from_the_registry():
    from labrecord.scorers.contracts import families, get_contract

    assert list(FAMILY_COLUMNS) == list(FAMILIES) and list(OPTIONAL_COLUMNS) == list(FAMILIES)
    assert families() == sorted(FAMILIES)
    for name, entry in FAMILIES.items():
        assert FAMILY_COLUMNS[name] is entry.columns
        assert type(get_contract(name)).__name__ == entry.contract.split(":")[1]


def test_an_unknown_family_or_policy_is_one_line():
    with pytest.raises(LabrecordError, match=r"task family 'balance': expected one of weighing, centrifuge, rack"):
        family("balance")
    with pytest.raises(LabrecordError, match=r"policy 'greedy': expected one of"):
        family("rack").policy("greedy")


def test_an_integer_option_converts_its_spelling():
    """``--slot 11`` reaches the centrifuge policy as the integer 11; a rack slot stays text."""
    assert PolicyOption("slot", "", ("0", "11"), integer=True).convert("11") == 11
    assert PolicyOption("slot", "", ("A1", "C4")).convert("C4") == "C4"


def test_studies_exist_for_the_families_that_declare_them():
    """Every family has an Oracle study (each declares supports); the pair and fixed-start
    studies are the weighing bench's."""
    from labrecord.cli.study import fixed_starts, oracle, pairs

    assert all(f.supports for f in with_study("oracle"))
    assert sorted(oracle.commands) == sorted(FAMILIES)
    assert sorted(pairs.commands) == sorted(fixed_starts.commands) == ["weighing"]


def test_every_family_has_a_sim_command_with_its_conditions_and_policies():
    from labrecord.cli.sim import sim

    assert sorted(sim.commands) == sorted(FAMILIES)
    for name, entry in FAMILIES.items():
        params = {p.name: p for p in sim.commands[name].params}
        assert list(params["condition"].type.choices) == list(entry.conditions)
        assert list(params["policy"].type.choices) == [*entry.policies, *SERVED_POLICIES]
        for policy in entry.policies.values():
            for option in policy.options:
                assert list(params[option.name].type.choices) == list(option.choices)


def _literals(path: Path) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Constant)
            and isinstance(node.value, str)}


@pytest.mark.parametrize("module", ["sim.py", "study.py", "demo.py"])
def test_the_commands_name_no_family_or_policy(module):
    names = set(FAMILIES) | {p for entry in FAMILIES.values() for p in entry.policies} | set(SERVED_POLICIES)
    assert sorted(_literals(CLI / module) & names) == []


def test_the_registered_policies_are_what_the_benches_build():
    """The registry's channels, Oracle inputs and options are the implementations' own."""
    pytest.importorskip("mujoco")
    import inspect

    for name, entry in FAMILIES.items():
        task = load(entry.bench)
        assert task.name == name
        for policy_name, registered in entry.policies.items():
            built = task.make_policy(policy_name, 0)
            assert built.capabilities.name == policy_name
            assert tuple(built.capabilities.channels) == registered.channels
            assert frozenset(getattr(built, "oracle_inputs", frozenset())) == registered.oracle_inputs
            keywords = set(inspect.signature(type(built)).parameters) - {"seed", "calibration"}
            assert keywords == {option.name for option in registered.options}
