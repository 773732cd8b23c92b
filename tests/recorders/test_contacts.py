import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.recorders.contacts import (
    ARM, FINGER_LEFT, FINGER_RIGHT, OBJECT0, PALM, PAN, TABLE, found_matrix, hand_on_pan, pairs_matrix, robot_touch,
    supported_by_pan,
)

SAMPLE, A, B = OBJECT0, OBJECT0 + 1, OBJECT0 + 2


def test_support_by_hand():
    # step 0: sample on pan, A on sample, B on the table touching A -> B is not pan-borne
    # step 1: A held by both fingers while resting on the pan; B on A
    touch = pairs_matrix([[(SAMPLE, PAN), (A, SAMPLE), (B, TABLE), (B, A)],
                          [(SAMPLE, PAN), (A, PAN), (A, FINGER_LEFT), (A, FINGER_RIGHT), (B, A), (PALM, SAMPLE)]], 3)
    assert supported_by_pan(touch).tolist() == [[True, True, False], [True, True, True]]
    contact, grasped = robot_touch(touch)
    assert contact.tolist() == [[False, False, False], [True, True, False]]
    assert grasped.tolist() == [[False, False, False], [False, True, False]]
    assert hand_on_pan(touch).tolist() == [False, True]


def test_found_matrix_matches_pairs_matrix():
    pairs = [(SAMPLE, PAN), (A, SAMPLE), (FINGER_LEFT, A)]
    found = np.array([[2, 1, 0], [0, 0, 0], [0, 0, 3]])
    expected = pairs_matrix([[(SAMPLE, PAN), (A, SAMPLE)], [], [(FINGER_LEFT, A)]], 2)
    assert np.array_equal(found_matrix(found, pairs, 2), expected)


def reachable(pairs: set[tuple[int, int]], n_objects: int) -> list[bool]:
    """Reference: breadth-first search from the pan over objects not touching the table."""
    adjacent = {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}
    blocked = {o for o in range(OBJECT0, OBJECT0 + n_objects) if (o, TABLE) in adjacent}
    frontier = [o for o in range(OBJECT0, OBJECT0 + n_objects) if (o, PAN) in adjacent and o not in blocked]
    seen = set(frontier)
    while frontier:
        here = frontier.pop()
        for o in range(OBJECT0, OBJECT0 + n_objects):
            if o not in seen and o not in blocked and (here, o) in adjacent:
                seen.add(o)
                frontier.append(o)
    return [o in seen for o in range(OBJECT0, OBJECT0 + n_objects)]


entity = st.integers(0, OBJECT0 + 4)


@settings(max_examples=200, deadline=None)
@given(st.sets(st.tuples(entity, entity).filter(lambda p: p[0] != p[1]), max_size=14))
def test_support_equals_graph_reachability(pairs):
    touch = pairs_matrix([sorted(pairs)], 5)
    assert supported_by_pan(touch)[0].tolist() == reachable(pairs, 5)


def test_any_arm_link_counts_as_robot_contact_by_hand():
    # step 0: an arm link (not the hand) rests on standard A; step 1: an arm link presses
    # the pan; step 2: it touches only the table
    touch = pairs_matrix([[(SAMPLE, PAN), (A, PAN), (ARM, A)], [(SAMPLE, PAN), (ARM, PAN)], [(ARM, TABLE)]], 2)
    contact, grasped = robot_touch(touch)
    assert contact.tolist() == [[False, True], [False, False], [False, False]]
    assert not grasped.any()
    assert hand_on_pan(touch).tolist() == [False, True, False]
    assert supported_by_pan(touch).tolist() == [[True, True], [True, False], [False, False]]


@settings(max_examples=100, deadline=None)
@given(st.sets(st.tuples(entity, entity).filter(lambda p: p[0] != p[1]), max_size=14))
def test_robot_contact_is_any_robot_entity(pairs):
    """An object is touched by the robot exactly when one of its contacts is a finger, the
    palm or an arm link; the load is pressed when one of them touches the pan or the sample."""
    touch = pairs_matrix([sorted(pairs)], 5)
    adjacent = {(a, b) for a, b in pairs} | {(b, a) for a, b in pairs}
    robot = (FINGER_LEFT, FINGER_RIGHT, PALM, ARM)
    contact, _ = robot_touch(touch)
    assert contact[0].tolist() == [any((o, r) in adjacent for r in robot) for o in range(OBJECT0, OBJECT0 + 5)]
    assert bool(hand_on_pan(touch)[0]) == any((r, PAN) in adjacent or (r, SAMPLE) in adjacent for r in robot)
