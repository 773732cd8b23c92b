import subprocess
import sys

import pytest

from labrecord.cli import main


def run_cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code


def test_sim_weighing_writes_runs(tmp_path, capsys):
    code = run_cli("sim", "weighing", "--episodes", "1", "--seed", "2", "--no-cameras", "--out", str(tmp_path))
    assert code == 0
    assert "wrote 1 run(s)" in capsys.readouterr().out
    assert (tmp_path / "weighing-basic-reference-s2-e000" / "scores.json").is_file()


def test_sim_weighing_refuses_existing_runs(tmp_path, capsys):
    assert run_cli("sim", "weighing", "--episodes", "1", "--no-cameras", "--out", str(tmp_path)) == 0
    assert run_cli("sim", "weighing", "--episodes", "1", "--no-cameras", "--out", str(tmp_path)) == 1
    assert capsys.readouterr().err.startswith("Error: ")


def test_sim_help_has_example(capsys):
    assert run_cli("sim", "weighing", "-h") == 0
    assert "Example:" in capsys.readouterr().out


def test_importing_the_sim_wing_does_not_load_mujoco():
    code = "import sys, labrecord.sim, labrecord.recorders.loop; assert 'mujoco' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("scene", ["centrifuge", "rack"])
def test_sim_scene_help_has_example(scene, capsys):
    assert run_cli("sim", scene, "-h") == 0
    out = capsys.readouterr().out
    assert "Example:" in out and "clumsy" in out


def test_sim_rack_refuses_a_bad_slot(capsys):
    assert run_cli("sim", "rack", "--policy", "fixed-preference", "--slot", "D9", "--out", "unused") == 2
    assert "D9" in capsys.readouterr().err
