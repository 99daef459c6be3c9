"""The stop test of conservative backfilling on a long queue read from block
summaries (:func:`policies.profile.any_starts_now`: the shortest planned length
per node-count prefix) against the test on the jobs' own shapes
(:func:`policies.profile.may_start_now`) and against a search for each job."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.profile import Profile, any_starts_now, may_start_now
from tests.policies.replay_helpers import earliest, reserve

_releases = st.lists(
    st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0, 9.0, 30.0]), st.integers(1, 4)),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(
    free_now=st.integers(0, 8),
    releases=_releases,
    reserved=st.lists(
        st.tuples(st.integers(1, 6), st.sampled_from([0.5, 1.0, 1.5, 3.0])), max_size=8
    ),
    jobs=st.lists(
        st.tuples(st.integers(1, 12), st.sampled_from([0.5, 1.0, 1.5, 2.5, 3.0, 8.0, 0.1 + 0.2])),
        max_size=12,
    ),
    now=st.sampled_from([0.0, 0.1]),
)
def test_any_starts_now_from_prefix_minima_equals_the_shapes_test(
    free_now, releases, reserved, jobs, now
):
    """The stop test read from block summaries (shortest length per node-count
    prefix) answers as the test on the jobs' own shapes, and as a search."""
    profile = Profile(now, free_now, [(now + t + 0.25, n) for t, n in releases])
    for nodes, duration in reserved:
        start = earliest(profile, nodes, duration)
        if start != math.inf:
            reserve(profile, start, duration, nodes)
    top = 10  # (a table narrower than some jobs: those never fit a 10-node partition)
    shortest_upto = np.full(top + 1, np.inf)
    shapes: dict[int, float] = {}
    for nodes, duration in jobs:
        if nodes <= top:
            shortest_upto[nodes] = min(shortest_upto[nodes], duration)
        shapes[nodes] = min(shapes.get(nodes, math.inf), duration)
    np.minimum.accumulate(shortest_upto, out=shortest_upto)
    fits = [earliest(profile, n, d) == now for n, d in jobs if n <= top]
    got = any_starts_now(profile, now, shortest_upto)
    assert got == any(fits)
    assert got == may_start_now(profile, now, sorted((n, d) for n, d in shapes.items() if n <= top))


@settings(max_examples=300, deadline=None)
@given(
    free_now=st.integers(0, 8),
    releases=_releases,
    jobs=st.lists(
        st.tuples(
            st.integers(1, 12),
            st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 8.0, 0.1 + 0.2, math.inf]),
            st.sampled_from([None, 0.0, 0.5, 1.0, 2.5, 9.0]),
        ),
        max_size=30,
    ),
)
def test_place_from_equals_earliest_then_reserve(free_now, releases, jobs):
    """The one-pass search-and-reserve leaves the steps of the two separate calls,
    and its ``first`` is the first step from the bound with enough free nodes."""
    fast = Profile(0.0, free_now, releases)
    plain = Profile(0.0, free_now, releases)
    for nodes, duration, not_before in jobs:
        times, free = list(plain.times), list(plain.free)
        want = earliest(plain, nodes, duration, not_before)
        if want != math.inf:
            reserve(plain, want, duration, nodes)
        start, first = fast.place_from(nodes, duration, not_before)
        assert start == want
        assert (fast.times, fast.free) == (plain.times, plain.free)
        lo = 0.0 if not_before is None else not_before
        assert first == next((t for t, f in zip(times, free) if t >= lo and f >= nodes), math.inf)


@settings(max_examples=300, deadline=None)
@given(
    free_now=st.integers(0, 10),
    releases=_releases,
    jobs=st.lists(
        st.tuples(
            st.integers(1, 12), st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 8.0, 0.1 + 0.2])
        ),
        max_size=40,
    ),
)
def test_place_with_its_bounds_equals_searches_from_the_start(free_now, releases, jobs):
    """A sequence of placements, each search starting from the bounds the profile
    keeps (starts of no larger, no longer jobs; the first step with enough free
    nodes), gives the answers and steps of plain searches from the profile's start."""
    fast = Profile(0.0, free_now, releases)
    plain = Profile(0.0, free_now, releases)
    for nodes, duration in jobs:
        want = earliest(plain, nodes, duration)
        if want != math.inf:
            reserve(plain, want, duration, nodes)
        assert fast.place(nodes, duration) == want
        assert (fast.times, fast.free) == (plain.times, plain.free)
