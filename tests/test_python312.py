"""The core runs on Python 3.12 too: validate, ingest and score under the 3.12 interpreter
of the LeRobot environment (the main suite runs on the default Python)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from labrecord.examples import write_example_run
from tests.exporters.test_lerobot import lerobot_python

SCRIPT = """
import json, sys
from labrecord.validation import validate_paths
from labrecord.store import ingest_runs
from labrecord.scorers.corpus import score_corpus
root = sys.argv[1]
report = validate_paths([root])
summary = ingest_runs(root, root + "/corpus.duckdb")
result = score_corpus(root + "/corpus.duckdb", seed=0, resamples=50)
print(json.dumps({"version": list(sys.version_info[:2]), "errors": len(report.errors),
                  "added": len(summary.added), "groups": result["groups"]}))
"""


def run_core(python: str, root: Path) -> dict:
    done = subprocess.run([python, "-c", SCRIPT, str(root)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_core_gives_the_same_scores_on_python_312(tmp_path: Path) -> None:
    python = lerobot_python()
    for index, correct in enumerate([True, False, True]):
        write_example_run(tmp_path / "a", f"r{index}", correct=correct, complete=correct)
        write_example_run(tmp_path / "b", f"r{index}", correct=correct, complete=correct)
    on_312 = run_core(python, tmp_path / "a")
    here = run_core(sys.executable, tmp_path / "b")
    assert on_312["version"][0] == 3 and on_312["version"][1] >= 12
    assert on_312["errors"] == 0 and on_312["added"] == 3
    assert on_312["groups"] == here["groups"]
