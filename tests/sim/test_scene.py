"""The bench's load cell drives the contract's display chain to the true load."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.contracts.weighing import WeighingThresholds, quantize
from labrecord.sim.weighing.env import WeighingEnv
from labrecord.sim.weighing.scene import STANDARD_GRAMS, STANDARDS, Layout, Placement

from tests.scorers.contracts.drive import display_chain

LAYOUT = Layout(table_spot={w: i for i, w in enumerate(STANDARDS)}, pan_spot={w: i for i, w in enumerate(STANDARDS)})


@pytest.fixture(scope="module")
def env():
    bench = WeighingEnv(cameras=())
    bench.calibrate_empty()
    yield bench
    bench.close()


def settled_display(env: WeighingEnv, sample_g: float, on_pan: frozenset[str], seconds: float = 3.5) -> float:
    """Display value after ``seconds`` at rest, through eq. 8-9 and the 0.1 g quantum.

    The load arrives within a few steps; the 0.25 s filter and the 1 s stability window
    then need about 3 s from an empty reading to a stable one.
    """
    env.reset(Placement(sample_g=sample_g, initially_on_pan=on_pan, layout=LAYOUT))
    hold = env.hold_action(None)
    blocks = []
    for _ in range(int(seconds * env.control_hz)):
        env.apply(hold)
        env.advance(int(env.physics_hz / env.control_hz))
        blocks.append(env.end_block())
    t = np.concatenate([b["t"] for b in blocks])
    force = np.concatenate([b["pan_force_n"] for b in blocks])
    th = WeighingThresholds()
    m_bar, stable = display_chain(t, force, np.ones(len(t), dtype=bool), env.f_empty_n, th.g0, th)
    assert stable[-1], (m_bar[-600::100], force[:5])
    return quantize(m_bar[-1], th.quantum_g)


def test_empty_pan_calibration_is_the_pan_weight(env):
    pan_mass = env.scene.model.body_mass[env.scene.body_id["pan"]]
    assert env.f_empty_n == pytest.approx(pan_mass * 9.80665, rel=1e-4)


def test_display_settles_by_hand(env):
    # 130 g sample with the 50 g standard on the pan reads 180 g
    assert abs(settled_display(env, 130.0, frozenset({"w50"})) - 180.0) <= 0.2


@settings(max_examples=6, deadline=None)
@given(st.floats(60.0, 200.0), st.sets(st.sampled_from(STANDARDS), max_size=3))
def test_display_settles_within_0_2_g(env, sample_g, on_pan):
    shown = settled_display(env, sample_g, frozenset(on_pan))
    assert abs(shown - (sample_g + sum(STANDARD_GRAMS[w] for w in on_pan))) <= 0.2
