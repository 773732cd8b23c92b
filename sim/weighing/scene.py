"""The MuJoCo feedback-weighing bench: model loading, instance set-up, stepping, sensing.

The scene (``sim/assets/weighing.xml``) holds a balance whose pan is welded to its base;
a Franka Panda arm (``sim/assets/panda/panda.xml``) is attached at :data:`ARM_BASE`;
a force sensor at the pan's ``load_cell`` site reads the support force of everything the
pan carries (Labference sec. 8.2 uses the tray-support joint wrench the same way).  The
live display is driven only by that force through the task contract's display chain;
the sample mass stays evaluator-side.

Raw per-step data is cheap to copy (a force scalar, object poses, contact geom pairs);
the per-object columns the contract replays from (support, finger contact, speed) are
derived in bulk by :func:`derive_block`, so recording keeps up with the physics.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from labrecord.recorders.contacts import ENTITY_CODES, OBJECT0
from labrecord.sim.bench.scene import ARM, BenchScene, asset_text, build_model

STANDARDS: tuple[str, ...] = ("w10", "w20", "w50", "w100")
STANDARD_GRAMS: dict[str, int] = {"w10": 10, "w20": 20, "w50": 50, "w100": 100}
OBJECTS: tuple[str, ...] = ("sample", *STANDARDS)
#: table spots the layout seed permutes the standards over (x, y), metres
TABLE_SPOTS: tuple[tuple[float, float], ...] = ((0.25, -0.15), (0.25, -0.05), (0.25, 0.05), (0.25, 0.15))
#: pan spots for standards around the sample (x, y), metres; the pan radius is 0.1 m
PAN_SPOTS: tuple[tuple[float, float], ...] = ((0.055, 0.0), (0.0, 0.055), (-0.055, 0.0), (0.0, -0.055))
PAN_TOP_Z = 0.070
PAN_RADIUS = 0.1


def scene_xml() -> str:
    """The bench's MJCF text (without the arm) with the seven-segment display geoms and the
    contact sensors spliced in."""
    text = asset_text("weighing.xml")
    return text.replace("<!--DISPLAY_SEGMENTS-->", _segment_geoms()).replace("<!--CONTACT_SENSORS-->", _contact_sensors())


#: entity code -> how a contact sensor names it (geom, body or subtree attribute, name, label)
_SENSED: dict[int, tuple[str, str, str]] = {
    ENTITY_CODES["table"]: ("geom", "table", "table"), ENTITY_CODES["pan"]: ("geom", "pan", "pan"),
    ENTITY_CODES["finger_left"]: ("geom", f"{ARM}finger_left", "finger_left"),
    ENTITY_CODES["finger_right"]: ("geom", f"{ARM}finger_right", "finger_right"),
    ENTITY_CODES["palm"]: ("geom", f"{ARM}hand", "hand"),
    # every link of the arm, the gripper included: any of them touching the load counts
    ENTITY_CODES["arm"]: ("subtree", f"{ARM}link0", "arm"),
    **{OBJECT0 + i: ("body", name, name) for i, name in enumerate(OBJECTS)},
}
#: the robot's entities, each sensed against every object and the pan
_ROBOT = ("finger_left", "finger_right", "palm", "arm")
#: the sensor of the net contact force between the arm (any link) and the balance (base and pan)
BALANCE_FORCE_SENSOR = "arm_on_balance"


def contact_pairs() -> list[tuple[int, int]]:
    """The entity pairs the scene senses: every object against every other object, the
    table, the pan and each robot entity, and each robot entity against the pan."""
    objects = [OBJECT0 + i for i in range(len(OBJECTS))]
    others = [ENTITY_CODES[n] for n in ("table", "pan", *_ROBOT)]
    pairs = [(a, b) for i, a in enumerate(objects) for b in objects[i + 1:]]
    pairs += [(a, b) for a in objects for b in others]
    pairs += [(ENTITY_CODES[n], ENTITY_CODES["pan"]) for n in _ROBOT]
    return pairs


def _touch_label(a: int, b: int) -> str:
    return f"touch_{_SENSED[a][2]}_{_SENSED[b][2]}"


def _contact_sensors() -> str:
    """The net contact force of the arm on the balance (found count + force vector, N),
    then one ``found`` contact sensor per sensed pair: MuJoCo evaluates them inside
    ``mj_step`` (margin contacts counted), so recording copies one sensor row."""
    lines = [f'<contact name="{BALANCE_FORCE_SENSOR}" subtree1="{ARM}link0" subtree2="balance" data="found force" '
             'reduce="netforce" num="1"/>']
    for a, b in contact_pairs():
        (kind_a, name_a, _), (kind_b, name_b, _) = _SENSED[a], _SENSED[b]
        lines.append(f'<contact name="{_touch_label(a, b)}" {kind_a}1="{name_a}" {kind_b}2="{name_b}" data="found" num="1"/>')
    return "\n    ".join(lines)


# seven segments a..g as (dy, dz, half-width, half-height) around a digit centre; image right = +y
_SEGMENTS = (
    (0.0, 0.009, 0.0045, 0.0009), (0.0055, 0.0045, 0.0009, 0.004), (0.0055, -0.0045, 0.0009, 0.004),
    (0.0, -0.009, 0.0045, 0.0009), (-0.0055, -0.0045, 0.0009, 0.004), (-0.0055, 0.0045, 0.0009, 0.004),
    (0.0, 0.0, 0.0045, 0.0009),
)
_DIGIT_SEGMENTS = {
    "0": "abcdef", "1": "bc", "2": "abged", "3": "abgcd", "4": "fgbc", "5": "afgcd",
    "6": "afgedc", "7": "abc", "8": "abcdefg", "9": "abcfgd", "-": "g", " ": "",
}
_DIGIT_Y = (-0.036, -0.018, 0.0, 0.022)  # three integer digits, then one decimal digit
SEGMENT_ON = (0.05, 0.1, 0.05, 1.0)
SEGMENT_OFF = (0.5, 0.62, 0.5, 0.15)


def _segment_geoms() -> str:
    lines = []
    for digit, y0 in enumerate(_DIGIT_Y):
        for index, (dy, dz, hw, hh) in enumerate(_SEGMENTS):
            lines.append(f'<geom name="seg{digit}{"abcdefg"[index]}" class="segment" pos="0.1225 {y0 + dy:.4f} {0.03 + dz:.4f}" '
                         f'size="0.0005 {hw} {hh}"/>')
    lines.append('<geom name="seg_point" class="segment" pos="0.1225 0.011 0.0215" size="0.0005 0.0012 0.0012"/>')
    return "\n      ".join(lines)


def display_segments(text: str) -> set[str]:
    """Segment names lit for a reading like ``'130.5'`` (right-aligned, 4 digits)."""
    digits = text.replace(".", "")
    if len(digits) > 4:
        digits = "----"
    digits = digits.rjust(4)
    lit = {"seg_point"}
    for position, char in enumerate(digits):
        lit.update(f"seg{position}{s}" for s in _DIGIT_SEGMENTS.get(char, "g"))
    return lit


@dataclass
class Layout:
    """Where each standard starts: ``table`` spots by index or ``pan`` spots by index."""

    table_spot: dict[str, int]
    pan_spot: dict[str, int]


@dataclass
class Placement:
    """An instance as the scene sees it: masses and initial arrangement."""

    sample_g: float
    initially_on_pan: frozenset[str]
    layout: Layout
    standard_g: dict[str, float] = field(default_factory=lambda: {k: float(v) for k, v in STANDARD_GRAMS.items()})


def random_layout(on_pan: frozenset[str], rng: np.random.Generator) -> Layout:
    """Permute table spots and pan spots with the layout seed's generator."""
    table = [int(i) for i in rng.permutation(len(TABLE_SPOTS))]
    pan = [int(i) for i in rng.permutation(len(PAN_SPOTS))]
    return Layout(table_spot={name: table[i] for i, name in enumerate(STANDARDS)},
                  pan_spot={name: pan[i] for i, name in enumerate(STANDARDS)})


class WeighingScene(BenchScene):
    """One MuJoCo model + data of the weighing bench with the Panda arm.

    ``step()`` advances physics; ``apply`` holds a joint-space command: seven joint
    position targets (rad) and a gripper command in [0, 1] (0 open, 1 closed).  The
    policy-facing action conventions are converted to it by
    :class:`labrecord.sim.bench.control.ArmController`.
    """

    def __init__(self, width: int = 224, height: int = 224) -> None:
        self._bind(build_model(scene_xml()), OBJECTS, "pan", width, height)
        m = self.model
        self.object_bodies = np.array([self.body_id[name] for name in OBJECTS])
        self.object_qvel = np.array([self.qvel_adr[name] for name in OBJECTS])
        #: sensordata offset of the contact sensors (declared consecutively, one value each)
        self.touch_adr = int(m.sensor_adr[m.sensor(_touch_label(*contact_pairs()[0])).id])
        #: sensordata offset of the arm-on-balance force vector (after its found count)
        self.balance_force_adr = int(m.sensor_adr[m.sensor(BALANCE_FORCE_SENSOR).id]) + 1
        assert m.nsensordata == self.touch_adr + len(contact_pairs())
        self.segment_ids = {m.geom(i).name: i for i in range(m.ngeom) if (m.geom(i).name or "").startswith("seg")}
        self.base_mass = {name: float(m.body_mass[self.body_id[name]]) for name in OBJECTS}
        self.base_inertia = {name: m.body_inertia[self.body_id[name]].copy() for name in OBJECTS}
        self._displayed: str | None = None

    # -- instance ---------------------------------------------------------------------
    def reset(self, placement: Placement) -> None:
        """Put masses and poses of ``placement`` into the model, the arm at :data:`HOME_Q`."""
        mujoco, m, d = self.mujoco, self.model, self.data
        mujoco.mj_resetData(m, d)
        masses = {"sample": placement.sample_g, **placement.standard_g}
        for name, grams in masses.items():
            body = self.body_id[name]
            scale = grams / 1000.0 / self.base_mass[name]
            m.body_mass[body] = grams / 1000.0
            m.body_inertia[body] = self.base_inertia[name] * scale
        for name in STANDARDS:
            half = float(m.geom_size[m.geom(name).id][1])
            if name in placement.initially_on_pan:
                x, y = PAN_SPOTS[placement.layout.pan_spot[name]]
                z = PAN_TOP_Z + half
            else:
                x, y = TABLE_SPOTS[placement.layout.table_spot[name]]
                z = half
            self._set_free(name, (x, y, z))
        # resting exactly on the pan: a drop would spike the load cell at the start
        self._set_free("sample", (0.0, 0.0, PAN_TOP_Z + 0.02))
        self.home_arm()

    def load_force(self) -> float:
        """Upward support force on the pan (N), including the pan's own weight."""
        return float(self.data.sensordata[2])

    def object_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (5, 3) and linear speeds (5,) of sample and standards."""
        d = self.data
        pos = d.xpos[self.object_bodies]
        vel = d.qvel[self.object_qvel[:, None] + np.arange(3)]
        return pos.copy(), np.sqrt((vel * vel).sum(axis=1))

    def object_poses(self) -> dict[str, list[float]]:
        """Poses of the labeled standards and the sample box (what the cameras show)."""
        xpos = self.data.xpos[[self.body_id[name] for name in OBJECTS]].tolist()
        return {name: [round(v, 5) for v in row] for name, row in zip(OBJECTS, xpos)}

    # -- rendering --------------------------------------------------------------------
    def show_reading(self, text: str, stable: bool) -> None:
        """Light the seven-segment display and the stability lamp."""
        key = f"{text}|{stable}"
        if key == self._displayed:
            return
        lit = display_segments(text)
        for name, geom in self.segment_ids.items():
            self.model.geom_rgba[geom] = SEGMENT_ON if name in lit else SEGMENT_OFF
        self.model.geom_rgba[self.model.geom("stable_lamp").id] = (0.1, 0.9, 0.1, 1) if stable else (0.2, 0.2, 0.2, 1)
        self._displayed = key
