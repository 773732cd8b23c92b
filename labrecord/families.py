"""The registry of task families: names, conditions, policies, supports and measurement columns.

One :class:`Family` entry per task family is everything the rest of the package needs to
know by name: the CLI builds its ``labrecord sim``, ``labrecord study`` and
``labrecord demo`` choices from it, :mod:`labrecord.scorers.contracts` finds the
family's contract through it, :mod:`labrecord.measurements` its measurement columns,
and :mod:`labrecord.sim` its bench.  The implementations are named by ``module:attribute``
strings and imported only when used, so reading the registry imports nothing heavy
(``labrecord --help`` does not load MuJoCo).

A new family is one entry in :data:`FAMILIES`, its contract in
``scorers/contracts/<family>.py`` and its bench in ``sim/<family>/`` (see
``CONTRIBUTING.md``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

#: Oracle sites and modes (Labference sec. 6.2): ``site:mode`` names a support
SITES: tuple[str, ...] = ("semantic", "decision", "geometry", "skill")
MODES: tuple[str, ...] = ("assist", "replace")


@dataclass(frozen=True)
class PolicyOption:
    """A keyword of a scripted policy, offered on the command line as ``--<name>``."""

    name: str
    help: str
    #: the accepted values, as typed
    choices: tuple[str, ...]
    #: the values are integers (``choices`` are their decimal spellings)
    integer: bool = False

    def convert(self, text: str) -> str | int:
        return int(text) if self.integer else text


@dataclass(frozen=True)
class Policy:
    """A scripted baseline of a family, as its capabilities declare it."""

    name: str
    help: str
    #: the observation channels the policy declares (cameras, ``robot``, evaluator state)
    channels: tuple[str, ...]
    #: the Oracle supports (site, mode) it consumes (its capability preflight)
    oracle_inputs: frozenset[tuple[str, str]] = frozenset()
    options: tuple[PolicyOption, ...] = ()


@dataclass(frozen=True)
class Family:
    """One task family: its conditions, scripted policies, supports and columns."""

    name: str
    #: one line for ``--help``
    title: str
    #: condition -> what differs in it
    conditions: dict[str, str]
    policies: dict[str, Policy]
    #: ``module:Class`` of the task contract (:mod:`labrecord.scorers.contracts`)
    contract: str
    #: ``module:attribute`` of the bench's task (:class:`labrecord.sim.episodes.BenchTask`)
    bench: str
    #: measurement columns the contract replays from: column -> type family
    columns: dict[str, str]
    #: columns the bench may add; their type is checked when present
    optional_columns: dict[str, str] = field(default_factory=dict)
    #: episodes a ``labrecord sim`` command runs by default
    default_episodes: int = 8
    #: the default response deadline, simulated seconds from the opportunity (about twice the
    #: time the reference policy takes to show its first choice on the basic condition);
    #: C_id then counts a choice identified within that budget, not merely before the end
    default_deadline_s: float = 20.0
    #: the Oracle supports (site, mode) a study can deliver on this bench
    supports: tuple[tuple[str, str], ...] = ()
    #: the ``labrecord study`` commands built on this bench (``oracle`` needs ``supports``)
    studies: tuple[str, ...] = ()
    #: conditions the studies draw their instances from
    study_condition: str = "basic"
    #: the policies ``labrecord demo`` simulates on the same instances, and how many episodes each
    demo_policies: tuple[str, ...] = ("reference", "fixed-preference")
    demo_episodes: int = 4

    def policy(self, name: str) -> Policy:
        from labrecord.errors import LabrecordError

        if name not in self.policies:
            raise LabrecordError(f"policy {name!r}: expected one of {', '.join(self.policies)}")
        return self.policies[name]


# -- the families --------------------------------------------------------------------------

WEIGHING_STANDARDS: tuple[str, ...] = ("w10", "w20", "w50", "w100")
CENTRIFUGE_TUBES: tuple[str, ...] = ("tube_a", "tube_b")
RACK_SLOTS: tuple[str, ...] = tuple(f"{row}{column}" for row in "ABC" for column in range(1, 5))


def _weighing_columns() -> dict[str, str]:
    columns = {"pan_force_n": "float", "sensor_ok": "bool", "pan_speed": "float", "hand_pan_contact": "bool"}
    for w in WEIGHING_STANDARDS:
        columns.update({f"{w}_on_pan": "bool", f"{w}_contact": "bool", f"{w}_grasped": "bool", f"{w}_speed": "float"})
    return columns


def _weighing_optional_columns() -> dict[str, str]:
    return {**{f"{w}_{axis}": "float" for w in WEIGHING_STANDARDS for axis in ("x", "y", "z")},
            **{f"{w}_over_pan": "bool" for w in WEIGHING_STANDARDS},
            **{f"{w}_on_table": "bool" for w in WEIGHING_STANDARDS}, "arm_speed": "float",
            "robot_balance_force_n": "float"}


def _centrifuge_columns() -> dict[str, str]:
    columns = {"rotor_x": "float", "rotor_y": "float", "rotor_z": "float", "rotor_yaw": "float"}
    for tube in CENTRIFUGE_TUBES:
        for axis in ("x", "y", "z", "ax", "ay", "az"):
            columns[f"{tube}_{axis}"] = "float"
        columns.update({f"{tube}_supported": "bool", f"{tube}_contact": "bool", f"{tube}_grasped": "bool",
                        f"{tube}_speed": "float"})
    return columns


def _rack_columns() -> dict[str, str]:
    columns = {name: "float" for name in ("rack_x", "rack_y", "rack_z", "rack_yaw", "tube_x", "tube_y", "tube_z",
                                          "tube_speed", "grip_x", "grip_y", "grip_z", "grip_vz")}
    columns.update({"tube_in_rack": "bool", "tube_on_table": "bool", "tube_contact": "bool", "tube_grasped": "bool",
                    "occluded": "bool"})
    return columns


_ALL_SUPPORTS = frozenset({("decision", "replace"), ("skill", "replace"), ("decision", "assist"),
                           ("semantic", "assist"), ("geometry", "assist"), ("geometry", "replace")})
_WEIGHING_CHANNELS = ("robot", "display_reading", "object_poses")
_DENOMINATION = PolicyOption("denomination", "Standard the fixed-preference policy always transfers (default w50).",
                             WEIGHING_STANDARDS)
_TUBE_CHANNELS = ("front", "wrist", "robot", "object_poses")
#: what the tube benches' scripted baselines consume: the commit hook (decision:replace)
_TUBE_INPUTS = frozenset({("decision", "replace")})

WEIGHING = Family(
    name="weighing", title="Feedback weighing: bring the balance reading to a target mass with labeled standards.",
    conditions={"basic": "one standard set to reach the target", "extended": "corrections toward a goal subset"},
    policies={
        "reference": Policy("reference", "reads the display and adds or removes the standards that reach the target",
                            _WEIGHING_CHANNELS, _ALL_SUPPORTS),
        "clumsy": Policy("clumsy", "the reference policy that drops its first carried standard and recovers it",
                         _WEIGHING_CHANNELS, _ALL_SUPPORTS),
        "fixed-preference": Policy("fixed-preference", "always transfers one denomination, whatever the display says",
                                   _WEIGHING_CHANNELS, frozenset({("decision", "replace"), ("skill", "replace")}),
                                   (_DENOMINATION,)),
        "random": Policy("random", "uniform over the visible corrections and stopping", _WEIGHING_CHANNELS,
                         frozenset({("decision", "replace"), ("skill", "replace"), ("decision", "assist")})),
        "noisy-localizer": Policy("noisy-localizer", "the reference policy planning with a seeded position error",
                                  _WEIGHING_CHANNELS, _ALL_SUPPORTS),
    },
    contract="labrecord.scorers.contracts.weighing:WeighingContract",
    bench="labrecord.sim.weighing.task:TASK",
    columns=_weighing_columns(), optional_columns=_weighing_optional_columns(), default_episodes=20,
    default_deadline_s=10.0,  # the reference shows its first choice after 2.4-2.6 s
    # the demo's default: every four consecutive basic instances hold each answer once, so
    # four per policy are balanced and keep the first command to about half a minute
    # (twelve, a full block of targets, took 83 s); ``labrecord demo --episodes 12`` for more
    demo_episodes=4,
    supports=(("semantic", "assist"), ("decision", "assist"), ("decision", "replace"), ("skill", "replace"),
              ("geometry", "assist"), ("geometry", "replace")),
    studies=("oracle", "pairs", "fixed-starts"),
)

CENTRIFUGE = Family(
    name="centrifuge", title="Centrifuge loading: balance the rotor with two tubes in opposite slots.",
    conditions={"basic": "one tube seated, one to place", "extended": "both tubes to place"},
    policies={
        "reference": Policy("reference", "pushes a shallow tube home, then loads the slot opposite the seated one",
                            _TUBE_CHANNELS, _TUBE_INPUTS),
        "fixed-preference": Policy("fixed-preference", "always its preferred local slot (the next free one when taken)",
                                   _TUBE_CHANNELS, _TUBE_INPUTS, options=(PolicyOption(
                                       "slot", "Local slot the fixed-preference policy always chooses (default 0; "
                                       "the next free one when taken).", tuple(str(j) for j in range(12)),
                                       integer=True),)),
        "random": Policy("random", "a uniformly drawn free slot", _TUBE_CHANNELS, _TUBE_INPUTS),
        "clumsy": Policy("clumsy", "the reference choices; its first insertion stops shallow, then it pushes home",
                         _TUBE_CHANNELS, _TUBE_INPUTS),
    },
    contract="labrecord.scorers.contracts.centrifuge:CentrifugeContract",
    bench="labrecord.sim.centrifuge.task:TASK",
    columns=_centrifuge_columns(), default_deadline_s=20.0,  # first choice after 9.1 s
    supports=(("decision", "replace"),), studies=("oracle",),
)

RACK = Family(
    name="rack", title="Placement recall: place a tube, the rack is moved under occlusion, retrieve it.",
    conditions={"basic": "empty rack, stationary occlusion",
                "extended": "three same-cap distractors, rack moved and turned"},
    policies={
        "reference": Policy("reference", "places, remembers the settled slot, retrieves it in the rack's new frame",
                            _TUBE_CHANNELS, _TUBE_INPUTS),
        "fixed-preference": Policy("fixed-preference", "places into and retrieves from its preferred slot",
                                   _TUBE_CHANNELS, _TUBE_INPUTS, options=(PolicyOption(
                                       "slot", "Slot the fixed-preference policy places into and retrieves from "
                                       "(default A1).", RACK_SLOTS),)),
        "random": Policy("random", "places into a drawn free slot, retrieves from a drawn occupied one",
                         _TUBE_CHANNELS, _TUBE_INPUTS),
        "clumsy": Policy("clumsy", "the reference choices; sets the sample down beside the region once, then fixes it",
                         _TUBE_CHANNELS, _TUBE_INPUTS),
    },
    contract="labrecord.scorers.contracts.rack:RackContract",
    bench="labrecord.sim.rack.task:TASK",
    columns=_rack_columns(), default_deadline_s=20.0,  # first choice after 9.4 s
    supports=(("decision", "replace"),), studies=("oracle",),
)

#: every registered family, in the order ``labrecord demo --family all`` runs them
FAMILIES: dict[str, Family] = {family.name: family for family in (WEIGHING, CENTRIFUGE, RACK)}


def family(name: str) -> Family:
    """The registered family ``name`` (one line naming the known ones otherwise)."""
    from labrecord.errors import LabrecordError

    if name not in FAMILIES:
        raise LabrecordError(f"task family {name!r}: expected one of {', '.join(FAMILIES)}")
    return FAMILIES[name]


def with_study(study: str) -> list[Family]:
    """The families whose entry declares ``study`` (``oracle``, ``pairs``, ``fixed-starts``)."""
    return [f for f in FAMILIES.values() if study in f.studies]


def load(target: str) -> object:
    """The attribute a ``module:attribute`` string names (imported now)."""
    import importlib

    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


#: policies served from outside the process, on every family: the front ends of
#: :mod:`labrecord.sim.serving` (name -> what it connects to)
SERVED_POLICIES: dict[str, str] = {
    "openpi": "an OpenPI policy server (websocket, --policy-url ws://HOST:PORT)",
    "http": "an agent behind the HTTP agent bridge (--policy-url http://HOST:PORT/PATH)",
    "lerobot": "a saved LeRobot policy (--policy-path DIR)",
}
