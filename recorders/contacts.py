"""The contact graph of a support measurement, shared by every simulator backend.

Bodies are mapped to small entity codes — table, pan (the load carrier), the two
fingers, the palm, the arm (any link of the robot arm; MuJoCo senses its whole tree,
gripper included, and the code is only ever combined with the hand's), then the task
objects from :data:`OBJECT0` on (the first object is the sample that always sits on the
pan).  A block of n physics steps becomes an (n, E, E)
symmetric boolean adjacency, from which support paths and robot contact follow in bulk.
MuJoCo fills it from per-pair contact sensors (``labrecord.sim``), Isaac Sim from contact-report body
pairs (:mod:`labrecord.recorders.isaacsim`).
"""
from __future__ import annotations

import numpy as np

OTHER, TABLE, PAN, FINGER_LEFT, FINGER_RIGHT, PALM, ARM = 0, 1, 2, 3, 4, 5, 6
OBJECT0 = 7
#: entity name -> code (MuJoCo geom names of the weighing bench use the same names)
ENTITY_CODES: dict[str, int] = {"other": OTHER, "table": TABLE, "pan": PAN, "finger_left": FINGER_LEFT,
                                "finger_right": FINGER_RIGHT, "palm": PALM, "arm": ARM}


def pairs_matrix(pairs: list[list[tuple[int, int]]], n_objects: int) -> np.ndarray:
    """The adjacency from per-step lists of entity-code pairs (the contact-report form)."""
    entities = OBJECT0 + n_objects
    touch = np.zeros((len(pairs), entities, entities), dtype=bool)
    for row, step_pairs in enumerate(pairs):
        for a, b in step_pairs:
            touch[row, a, b] = touch[row, b, a] = True
    return touch


def found_matrix(found: np.ndarray, pairs: list[tuple[int, int]], n_objects: int) -> np.ndarray:
    """The adjacency from contact-sensor counts: ``found`` (n, P), column p counting the
    contacts of entity pair ``pairs[p]`` at each of n steps (the simulator-sensor form)."""
    entities = OBJECT0 + n_objects
    touch = np.zeros((len(found), entities, entities), dtype=bool)
    first, second = np.array(pairs, dtype=np.int64).reshape(-1, 2).T
    hit = found > 0
    touch[:, first, second] = hit
    touch[:, second, first] = hit
    return touch


def supported_by_pan(touch: np.ndarray) -> np.ndarray:
    """(n, k) bool: object's support path ends at the pan (directly or through other objects).

    Objects touching the table are not pan-borne and pass no support on; a robot touching
    the object does not break the path (the contract separates hand pressure).
    """
    objects = np.arange(OBJECT0, touch.shape[1])
    obj_touch = touch[:, objects][:, :, objects].astype(np.int8)
    on_table = touch[:, objects, TABLE]
    on = touch[:, objects, PAN] & ~on_table
    for _ in range(touch.shape[1] - OBJECT0 - 1):  # a support path has at most k - 1 links
        grown = on | ((np.einsum("nij,nj->ni", obj_touch, on.astype(np.int8)) > 0) & ~on_table)
        if np.array_equal(grown, on):
            break
        on = grown
    return on


def robot_touch(touch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, k) any robot link (fingers, palm, arm) touches the object; (n, k) both fingers touch it."""
    objects = np.arange(OBJECT0, touch.shape[1])
    left = touch[:, objects, FINGER_LEFT]
    right = touch[:, objects, FINGER_RIGHT]
    return left | right | touch[:, objects, PALM] | touch[:, objects, ARM], left & right


def hand_on_pan(touch: np.ndarray) -> np.ndarray:
    """(n,) a robot link touches the pan or the sample (hand pressure on the load)."""
    robot = slice(FINGER_LEFT, ARM + 1)  # fingers, palm and arm are adjacent codes
    return np.logical_or(touch[:, robot, PAN].any(axis=1), touch[:, robot, OBJECT0].any(axis=1))
