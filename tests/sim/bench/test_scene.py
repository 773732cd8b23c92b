"""Offscreen rendering of the bench scenes: geoms out of a camera's view are left out, and
the frames stay the same."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.sim.bench.scene import HOME_Q, BenchScene, _culling_is_exact
from labrecord.sim.weighing.scene import WeighingScene

CAMERAS = ("front", "wrist", "display")


def _probe_scene(model):
    """A camera at the origin looking along -z (fovy 90°, square image) and a sphere: the
    bare geometry :meth:`BenchScene.outside_view` reads (model, data, image size)."""
    import types

    import mujoco

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    scene = types.SimpleNamespace(model=model, data=data, width=32, height=32)
    scene.outside_view = lambda camera: BenchScene.outside_view(scene, camera)  # type: ignore[arg-type]
    return scene


def probe(x: float, y: float, z: float, radius: float = 1.0):
    import mujoco

    xml = f"""<mujoco><worldbody>
      <camera name="eye" pos="0 0 0" fovy="90"/>
      <geom name="ball" type="sphere" size="{radius}" pos="{x} {y} {z}"/>
      <geom name="floor" type="plane" size="1 1 0.1" pos="100 0 0"/>
    </worldbody></mujoco>"""
    return _probe_scene(mujoco.MjModel.from_xml_string(xml))


def test_outside_view_by_hand():
    """tx = ty = tan 45° = 1.  A unit sphere at (3, 0, -1) is (3 - 1) / √2 ≈ 1.41 beyond the
    right plane (> 1: out); at (1.5, 0, -1) it is 0.35 (kept); at (0, 3, -1) above the top
    plane (out); at (0, 0, 2), wholly behind the camera, 2 / √2 beyond every side plane (out);
    at (0, 0, 0.5), around the camera, 0.35 (kept).  The plane geom (radius 0) is kept
    wherever it is."""
    ball = 0
    assert list(probe(3, 0, -1).outside_view("eye")) == [ball]
    assert list(probe(-3, 0, -1).outside_view("eye")) == [ball]
    assert list(probe(1.5, 0, -1).outside_view("eye")) == []
    assert list(probe(0, 3, -1).outside_view("eye")) == [ball]
    assert list(probe(0, 0, 2).outside_view("eye")) == [ball]
    assert list(probe(0, 0, 0.5).outside_view("eye")) == []
    # just inside the margin: distance to the right plane (x - 1) / √2 equal to r + 1 mm is kept
    edge = 1 + math.sqrt(2) * (1 + 1e-3)
    assert list(probe(edge - 1e-6, 0, -1).outside_view("eye")) == []
    assert list(probe(edge + 1e-3, 0, -1).outside_view("eye")) == [ball]


@given(x=st.floats(-5, 5), y=st.floats(-5, 5), z=st.floats(-5, 5), radius=st.floats(0.01, 2))
@settings(max_examples=60, deadline=None)
def test_a_sphere_left_out_has_no_point_in_view(x, y, z, radius):
    """Property: when the sphere is left out, none of its points projects into the image
    (points sampled on its surface all fall outside |x/-z| <= 1, |y/-z| <= 1 or behind)."""
    if probe(x, y, z, radius).outside_view("eye").size == 0:
        return
    rng = np.random.default_rng(0)
    direction = rng.normal(size=(2000, 3))
    points = np.array([x, y, z]) + radius * direction / np.linalg.norm(direction, axis=1, keepdims=True)
    depth = -points[:, 2]
    seen = (depth > 0) & (np.abs(points[:, 0]) <= depth) & (np.abs(points[:, 1]) <= depth)
    assert not seen.any()


def test_culling_only_where_nothing_out_of_view_reaches_the_image():
    import mujoco

    plain = mujoco.MjModel.from_xml_string("<mujoco><worldbody><geom type='sphere' size='1'/></worldbody></mujoco>")
    assert _culling_is_exact(plain)
    mirror = mujoco.MjModel.from_xml_string(
        "<mujoco><asset><material name='m' reflectance='0.3'/></asset>"
        "<worldbody><geom type='sphere' size='1' material='m'/></worldbody></mujoco>")
    assert not _culling_is_exact(mirror)
    ortho = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><camera name='c' projection='orthographic' fovy='1'/><geom type='sphere' size='1'/></worldbody></mujoco>")
    assert not _culling_is_exact(ortho)


@pytest.fixture(scope="module")
def scene():
    bench = WeighingScene(64, 64)
    yield bench
    bench.close()


def test_every_geom_of_zero_alpha_leaves_the_scene(scene):
    """The mechanism the culling uses: mjv_updateScene drops a geom whose rgba alpha is 0,
    with or without a material (checked geom by geom on the weighing scene)."""
    import mujoco

    m, d = scene.model, scene.data
    mujoco.mj_forward(m, d)
    scene.render("front")
    renderer = scene._renderer
    renderer.update_scene(d, camera="front")
    full = renderer.scene.ngeom
    for geom in range(m.ngeom):
        if m.geom_group[geom] > 2 or m.geom_rgba[geom, 3] == 0:
            continue  # hidden group or already invisible: never in the scene
        alpha = m.geom_rgba[geom, 3]
        m.geom_rgba[geom, 3] = 0.0
        renderer.update_scene(d, camera="front")
        m.geom_rgba[geom, 3] = alpha
        assert renderer.scene.ngeom == full - 1, m.geom(geom).name


@given(offsets=st.lists(st.floats(-1.2, 1.2), min_size=7, max_size=7))
@settings(max_examples=8, deadline=None)
def test_frames_are_the_same_with_and_without_culling(scene, offsets):
    """Property: for arm poses around home, each camera's frame is pixel-identical whether
    geoms out of its view are left out or not, and the model's colours are left as they were."""
    import mujoco

    m, d = scene.model, scene.data
    mujoco.mj_resetData(m, d)
    d.qpos[scene.arm_qpos] = np.asarray(HOME_Q) + np.asarray(offsets)
    mujoco.mj_forward(m, d)
    colours = m.geom_rgba.copy()
    for camera in CAMERAS:
        scene.render(camera)
        assert scene._cull
        culled = scene.render(camera).copy()
        scene._cull = False
        try:
            whole = scene.render(camera)
        finally:
            scene._cull = True
        assert np.array_equal(culled, whole), camera
    assert np.array_equal(m.geom_rgba, colours)


def test_the_display_camera_leaves_out_the_arm_and_the_weights(scene):
    """At the home pose the display close-up sees the display panel, not the arm's hand nor
    the standard weights on the bench: those geoms are left out of its scene."""
    import mujoco

    m, d = scene.model, scene.data
    mujoco.mj_resetData(m, d)
    d.qpos[scene.arm_qpos] = HOME_Q
    mujoco.mj_forward(m, d)
    names = {m.geom(i).name for i in scene.outside_view("display")}
    assert {"panda/hand_vis", "w100"} <= names
    assert not names & {"display_panel", "seg0a"}
