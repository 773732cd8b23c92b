"""The step owner logs what a policy asked for next to what it applied."""
import json
import os

import numpy as np
import pytest

from tests.support import require_module

os.environ.setdefault("MUJOCO_GL", "egl")
require_module("mujoco", 'pip install "labrecord[sim]"')

from labrecord.recorders.loop import EpisodeObserver  # noqa: E402
from labrecord.recorders.policy import ActionChunk, Capabilities  # noqa: E402
from labrecord.scorers.contracts import get_contract  # noqa: E402
from labrecord.scorers.contracts.weighing import WeighingInstance  # noqa: E402
from labrecord.sim.weighing.env import WeighingEnv  # noqa: E402
from labrecord.sim.bench.policies import ACTION_SPEC  # noqa: E402
from labrecord.sim.weighing.scene import Layout, Placement, STANDARDS  # noqa: E402


class Unruly:
    """Alternates an out-of-range chunk, a too-long chunk and a NaN chunk."""

    capabilities = Capabilities(name="unruly", kind="scripted", action_spec=ACTION_SPEC, channels=("robot",))

    def reset(self, episode):
        self.calls = 0

    def act(self, observation):
        self.calls += 1
        kind = self.calls % 3
        if kind == 1:
            return ActionChunk(np.array([[0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 2.0]]))  # z step and grip above their bounds
        if kind == 2:
            return ActionChunk(np.zeros((9, 7)))  # longer than max_chunk
        return ActionChunk(np.array([[np.nan, 0.0, 0.02, 0.0, 0.0, 0.0, 0.0]]))


def test_clipping_and_rejection_are_logged(tmp_path):
    from labrecord.examples import example_manifest
    from labrecord.recorders.loop import StepOwner
    from labrecord.recorders.online import ContractScorer
    from labrecord.rundir import RunWriter

    env = WeighingEnv(cameras=())
    instance = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), f_empty_n=env.calibrate_empty())
    env.reset(Placement(130.0, frozenset(), Layout({w: i for i, w in enumerate(STANDARDS)}, {w: i for i, w in enumerate(STANDARDS)})))
    scorer = ContractScorer(get_contract("weighing"), instance)
    with RunWriter.create(tmp_path, example_manifest("unruly-0001")) as writer:
        owner = StepOwner(env, Unruly(), scorer, writer, instruction="Bring the balance to 180 g", max_time_s=1.0, video=False)
        log = owner.run_episode(0)
        owner.finish()
    receipts = [json.loads(line) for line in (writer.dir / "observations.jsonl").read_text().splitlines()]
    clipped = [r for r in receipts if r["clipped"]]
    rejected = [r for r in receipts if r["rejected"]]
    assert clipped and clipped[0]["requested"] == [[0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 2.0]] and clipped[0]["chunk_len"] == 1
    assert {r["rejected"].split(" ")[0] for r in rejected} == {"chunk", "non-finite"}
    assert log.rejected == len(rejected) and log.clipped == len(clipped)
    # the clipped command is what was applied: the z step at its upper bound, grip fully closed
    applied = np.stack(log.actions)
    assert applied[:, 2].max() == ACTION_SPEC.high[2] and applied[:, 6].max() <= 1.0
    assert np.isfinite(applied).all()
    env.close()


class NativeVla:
    """A VLA-style system: two cameras and proprioception, end-effector deltas."""

    def __init__(self, channels=("front", "wrist", "robot"), kind="vla"):
        from labrecord.sim.bench.control import action_spec

        self.capabilities = Capabilities(name="native", kind=kind, action_spec=action_spec("eef_delta"), channels=channels)
        self.seen = []

    def reset(self, episode):
        pass

    def act(self, observation):
        self.seen.append(observation)
        return ActionChunk(np.array([[0.0, 0.0, -0.01, 0.0, 0.0, 0.0, 0.0]]))


def run_native(tmp_path, policy, seconds=0.5, size=32, **deadline):
    from labrecord.examples import example_manifest
    from labrecord.recorders.loop import StepOwner
    from labrecord.recorders.online import ContractScorer
    from labrecord.rundir import RunWriter

    env = WeighingEnv(policy.capabilities.action_spec, cameras=("front", "wrist", "display"), size=size)
    instance = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), f_empty_n=env.calibrate_empty())
    env.reset(Placement(130.0, frozenset(), Layout({w: i for i, w in enumerate(STANDARDS)}, {w: i for i, w in enumerate(STANDARDS)})))
    scorer = ContractScorer(get_contract("weighing"), instance)
    try:
        with RunWriter.create(tmp_path, example_manifest("native-0001")) as writer:
            owner = StepOwner(env, policy, scorer, writer, instruction="Bring the balance to 180 g", max_time_s=seconds,
                              video=False, **deadline)
            owner.run_episode(0)
            owner.finish()
    finally:
        env.close()
    return [json.loads(line) for line in (writer.dir / "observations.jsonl").read_text().splitlines()]


def test_a_native_system_receives_images_and_proprioception_only(tmp_path):
    policy = NativeVla()
    receipts = run_native(tmp_path, policy)
    assert receipts and all(r["channels"] == ["front", "robot", "wrist"] for r in receipts)
    for observation in policy.seen:
        assert set(observation.images) == {"front", "wrist"} and observation.images["front"].shape == (32, 32, 3)
        assert set(observation.state) == {"robot"}
        assert set(observation.state["robot"]) == {"joint_pos", "joint_vel", "gripper_qpos", "eef_pos", "eef_quat"}
        text = json.dumps(observation.state)
        assert "reading" not in text and "w50" not in text and "sample" not in text


def test_only_scripted_systems_may_declare_evaluator_state(tmp_path):
    from labrecord.errors import LabrecordError

    with pytest.raises(LabrecordError, match=r"system 'native' \(vla\) declares evaluator-state channel\(s\) display_reading"):
        run_native(tmp_path, NativeVla(("front", "robot", "display_reading")))


class Slow(NativeVla):
    """Answers no sooner than 20 ms after delivery (a lower bound, whatever the machine)."""

    def act(self, observation):
        import time

        time.sleep(0.02)
        return super().act(observation)


def test_a_chunk_answered_after_the_wall_deadline_is_not_executed(tmp_path):
    receipts = run_native(tmp_path, Slow(), deadline_s=0.01, deadline_clock="wall")
    assert receipts and all(r["rejected"].startswith("late: answered") and r["chunk_len"] == 0 for r in receipts)
    assert all(r["inference_s"] >= 0.02 for r in receipts)
    scores = json.loads((tmp_path / "native-0001" / "scores.json").read_text())
    assert scores["episodes"][0]["policy"]["late_chunks"] == len(receipts)


def test_the_sim_clock_ignores_inference_time(tmp_path):
    receipts = run_native(tmp_path, Slow(), deadline_s=0.01, deadline_clock="sim")
    assert receipts and not any(r["rejected"] for r in receipts)


class Counting(EpisodeObserver):
    """An episode observer that counts its hooks and reads the cursor at every step."""

    def __init__(self, owner):
        self.owner, self.calls, self.cursors = owner, {"before_observe": 0, "observed": 0, "before_query": 0,
                                                       "after_step": 0}, []

    def before_observe(self):
        self.calls["before_observe"] += 1

    def observed(self, observation):
        self.calls["observed"] += observation is not None

    def before_query(self, observation):
        self.calls["before_query"] += 1

    def after_step(self):
        self.calls["after_step"] += 1
        self.cursors.append(self.owner.cursor)


def test_an_observer_sees_every_boundary_and_the_cursor_counts_them(tmp_path):
    """1 s at 10 Hz and 500 Hz physics: 10 control periods of 50 steps.  The observer is
    told of 10 boundaries and 10 steps; the first boundary settles the scene, so 9
    observations reach the policy and each is answered (9 queries, 9 receipts); after
    period k the cursor stands at step 50·k with k blocks and k actions applied."""
    from labrecord.examples import example_manifest
    from labrecord.recorders.loop import Cursor, StepOwner
    from labrecord.recorders.online import ContractScorer
    from labrecord.rundir import RunWriter

    policy = NativeVla(channels=("robot",), kind="scripted")
    env = WeighingEnv(policy.capabilities.action_spec, cameras=())
    instance = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), f_empty_n=env.calibrate_empty())
    env.reset(Placement(130.0, frozenset(), Layout({w: i for i, w in enumerate(STANDARDS)}, {w: i for i, w in enumerate(STANDARDS)})))
    scorer = ContractScorer(get_contract("weighing"), instance)
    try:
        with RunWriter.create(tmp_path, example_manifest("observed-0001")) as writer:
            owner = StepOwner(env, policy, scorer, writer, instruction="Bring the balance to 180 g", max_time_s=1.0,
                              video=False)
            watch = Counting(owner)
            owner.run_episode(0, watch)
            owner.finish()
    finally:
        env.close()
    receipts = (writer.dir / "observations.jsonl").read_text().splitlines()
    assert watch.calls == {"before_observe": 10, "observed": 9, "before_query": 9, "after_step": 10}
    assert len(receipts) == 9 and len(policy.seen) == 9
    assert watch.cursors[0] == Cursor(episode=0, step=50, observations=0, actions=1, blocks=1)
    assert watch.cursors[-1] == Cursor(episode=0, step=500, observations=9, actions=10, blocks=10)
    assert owner.public_state()["display_reading"] == scorer.display()  # the scorer's readout, a declared channel
