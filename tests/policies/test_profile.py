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
        start = profile.earliest(nodes, duration)
        if start != math.inf:
            profile.reserve(start, duration, nodes)
    top = 10  # (a table narrower than some jobs: those never fit a 10-node partition)
    shortest_upto = np.full(top + 1, np.inf)
    shapes: dict[int, float] = {}
    for nodes, duration in jobs:
        if nodes <= top:
            shortest_upto[nodes] = min(shortest_upto[nodes], duration)
        shapes[nodes] = min(shapes.get(nodes, math.inf), duration)
    np.minimum.accumulate(shortest_upto, out=shortest_upto)
    fits = [profile.earliest(n, d) == now for n, d in jobs if n <= top]
    got = any_starts_now(profile, now, shortest_upto)
    assert got == any(fits)
    assert got == may_start_now(profile, now, sorted((n, d) for n, d in shapes.items() if n <= top))
