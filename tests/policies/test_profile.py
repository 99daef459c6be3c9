"""The chunked availability profile (:class:`policies.profile.Profile`) against
the plain list-based profile it replaces: the same earliest starts, the same
steps after every reservation, on random profiles, with chunks small enough
that searches and reservations cross chunk boundaries and chunks split."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies.profile as profile_module
from policies.profile import Profile, any_starts_now, may_start_now


class _ListProfile:
    """The plain profile: two flat lists, a linear search (the reference)."""

    def __init__(self, now, free_now, releases):
        times, free = [now], [free_now]
        for t, n in sorted(releases):
            if t <= times[-1]:
                free[-1] += n
            else:
                times.append(t)
                free.append(free[-1] + n)
        self.times, self.free = times, free

    def earliest(self, nodes, duration, not_before=None):
        times, free = self.times, self.free
        m = len(times)
        i = 0 if not_before is None else bisect_left(times, not_before)
        while i < m:
            if free[i] < nodes:
                i += 1
                continue
            start = times[i]
            end = start + duration
            j = i + 1
            while j < m and times[j] < end:
                if free[j] < nodes:
                    break
                j += 1
            else:
                return start
            i = j + 1
        return math.inf

    def _split(self, t):
        k = bisect_left(self.times, t)
        if k < len(self.times) and self.times[k] == t:
            return k
        self.times.insert(k, t)
        self.free.insert(k, self.free[k - 1])
        return k

    def reserve(self, start, duration, nodes):
        a = self._split(start)
        end = start + duration
        b = self._split(end) if math.isfinite(end) else len(self.times)
        for k in range(a, b):
            self.free[k] -= nodes

    def free_at(self, t):
        return self.free[bisect_right(self.times, t) - 1]


@pytest.fixture(params=[1, 2, 3, 64])
def chunk(request, monkeypatch):
    monkeypatch.setattr(profile_module, "CHUNK", request.param)
    return request.param


_releases = st.lists(
    st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.5, 4.0, 9.0, 30.0]), st.integers(1, 4)),
    max_size=12,
)
_jobs = st.lists(
    st.tuples(
        st.integers(1, 14),
        st.sampled_from([0.25, 0.5, 1.0, 1.5, 3.0, 8.0, 0.1 + 0.2, math.inf]),
        st.booleans(),  # search from the last answer for this shape
    ),
    max_size=40,
)


# (the fixture only sets a module constant: the same for every generated input)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(free_now=st.integers(0, 8), releases=_releases, jobs=_jobs, data=st.data())
def test_earliest_and_reserve_equal_the_list_profile(chunk, free_now, releases, jobs, data):
    fast = Profile(0.0, free_now, releases)
    plain = _ListProfile(0.0, free_now, releases)
    last: dict[tuple[int, float], float] = {}
    for nodes, duration, resume in jobs:
        bound = last.get((nodes, duration)) if resume else None
        want = plain.earliest(nodes, duration, bound)
        assert fast.earliest(nodes, duration, bound) == want
        last[(nodes, duration)] = want
        if want == math.inf:
            # a reservation at an arbitrary time (not a breakpoint) also splits the same way
            want = data.draw(st.sampled_from([0.0, 0.7, 2.5, 5.0]))
            nodes = 1
        fast.reserve(want, duration, nodes)
        plain.reserve(want, duration, nodes)
        assert fast.times == plain.times and fast.free == plain.free
        for t in (0.0, 0.6, 2.5, 7.0, 1e6):
            assert fast.free_at(t) == plain.free_at(t)
    # every chunk knows its largest free count and its first time
    assert fast._max == [max(f) for f in fast._free]
    assert fast._firsts == [t[0] for t in fast._times]
    assert all(0 < len(t) <= 2 * chunk for t in fast._times)


def test_a_long_profile_is_split_into_chunks_and_searched_across_them():
    """Worked by hand: 300 unit-length reservations of 1 node over a 1-node
    partition, one after another: the partition is booked until 300, so
    the next 1-node job of length 1 fits at 300, and a 2-node job never."""
    profile = Profile(0.0, 1, [])
    for k in range(300):
        assert profile.earliest(1, 1.0) == float(k)
        profile.reserve(float(k), 1.0, 1)
    assert len(profile._times) > 1
    assert profile.earliest(1, 1.0) == 300.0
    assert profile.earliest(1, 1.0, not_before=150.0) == 300.0
    assert profile.earliest(2, 1.0) == math.inf
    assert profile.free == [0] * 300 + [1]


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
