"""``check_apart``: an output is never an input, never inside one and never holds one."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.safeio import check_apart


def test_by_hand(tmp_path: Path) -> None:
    """runs/ holds r1/run.json: r1/run.json is it, r1/x lies inside r1, runs/ holds r1, runs2/ is apart."""
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    for out, relation in ((run / "run.json", "is the input"), (run / "new" / "x", "lies inside the input"),
                          (tmp_path / "runs", "holds the input"), (tmp_path, "holds the input")):
        with pytest.raises(LabrecordError, match=f"{relation} .*--overwrite does not change this"):
            check_apart(out, [run / "run.json", run])
    assert check_apart(tmp_path / "runs2", [run]) == tmp_path / "runs2"
    assert check_apart(tmp_path / "runs" / "scores.json", [run]) == tmp_path / "runs" / "scores.json"


def test_links_are_seen_through(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    (tmp_path / "alias").symlink_to(run)
    with pytest.raises(LabrecordError, match="is the input"):
        check_apart(tmp_path / "alias", [run])
    with pytest.raises(LabrecordError, match="lies inside the input"):
        check_apart(tmp_path / "alias" / "out.json", [run])
    os.link(run / "run.json", tmp_path / "hard.json")
    with pytest.raises(LabrecordError, match="is the input"):
        check_apart(tmp_path / "hard.json", [run / "run.json"])


names = st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=3)


@given(names, names)
def test_refused_exactly_when_one_path_is_a_prefix_of_the_other(
        out: list[str], given_in: list[str]) -> None:
    root = Path("/nonexistent-labrecord-root")
    related = out[:len(given_in)] == given_in or given_in[:len(out)] == out
    try:
        check_apart(root.joinpath(*out), [root.joinpath(*given_in)])
    except LabrecordError:
        assert related
    else:
        assert not related
