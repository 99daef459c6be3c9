# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernel of conservative backfilling on a long queue.

:func:`conservative_batch` mirrors :func:`policies.profile.conservative_batch`
(the Python reference, kept and tested against this one): the same placements
in queue order with the bounds of :meth:`policies.profile.Profile.place` and
the one-pass search-and-reserve of :meth:`~policies.profile.Profile.place_from`,
the stop test of :func:`policies.profile.any_starts_now` every ``stop_every``
keys, and the jobs whose reservation starts now. The profile is copied into C
arrays once per batch and every step of the batch runs without Python objects.

Built by ``pip install`` when a C compiler is there (``setup.py``, optional);
without it the Python reference runs (the same schedules, slower).
"""

from libc.math cimport INFINITY, NAN, isnan
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free as c_free
from libc.stdlib cimport malloc
from libc.string cimport memcpy, memmove


cdef struct SameSlot:
    # one entry of Profile._same: (nodes, length) -> the last start placed
    int64_t nodes
    double length
    double start
    bint used


cdef struct Steps:
    # the profile: free[i] nodes from times[i] to times[i + 1] (the last step lasts forever)
    double *times
    int64_t *free
    Py_ssize_t m
    # the bounds of Profile.place
    SameSlot *same          # open addressing, linear probing; size a power of two
    Py_ssize_t same_size
    Py_ssize_t same_used
    double *latest_length   # nodes -> length of Profile._latest (NaN: none)
    double *latest_start
    double *lowest          # nodes -> Profile._lowest (-inf: none)
    int64_t top_nodes       # the arrays above cover 0..top_nodes (more never fit)
    int64_t recent_nodes    # Profile._recent
    double recent_length
    double recent_start


cdef inline uint64_t _shape_hash(int64_t nodes, double length) noexcept nogil:
    cdef double key = length + 0.0  # (-0.0 and 0.0 are the same key, as in a dict)
    cdef uint64_t bits
    memcpy(&bits, &key, sizeof(double))
    bits ^= <uint64_t>nodes * <uint64_t>0x9E3779B97F4A7C15ULL
    bits ^= bits >> 29
    bits *= <uint64_t>0xBF58476D1CE4E5B9ULL
    bits ^= bits >> 32
    return bits


cdef inline SameSlot *_same_slot(Steps *p, int64_t nodes, double length) noexcept nogil:
    """The slot of (nodes, length): its entry, or the free slot where it goes."""
    cdef Py_ssize_t mask = p.same_size - 1
    cdef Py_ssize_t i = <Py_ssize_t>(_shape_hash(nodes, length) & <uint64_t>mask)
    while p.same[i].used and not (p.same[i].nodes == nodes and p.same[i].length == length):
        i = (i + 1) & mask
    return &p.same[i]


cdef int _same_grow(Steps *p) except -1:
    cdef SameSlot *old = p.same
    cdef Py_ssize_t old_size = p.same_size, i
    cdef SameSlot *slot
    p.same_size = 2 * old_size
    p.same = <SameSlot *>malloc(p.same_size * sizeof(SameSlot))
    if p.same == NULL:
        p.same = old
        p.same_size = old_size
        raise MemoryError()
    for i in range(p.same_size):
        p.same[i].used = False
    for i in range(old_size):
        if old[i].used:
            slot = _same_slot(p, old[i].nodes, old[i].length)
            slot[0] = old[i]
    c_free(old)
    return 0


cdef inline Py_ssize_t _bisect_left(const double *times, Py_ssize_t m, double x) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = m, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if times[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef double _place_from(
    Steps *p, int64_t nodes, double duration, double not_before, double *first_out
) noexcept nogil:
    """Profile.place_from: the earliest start from ``not_before`` (-inf: the
    profile's start) and the reservation taken there; ``first_out`` gets the first
    breakpoint from ``not_before`` on with at least ``nodes`` free (inf: none).
    The arrays have room for one more step."""
    cdef double *times = p.times
    cdef int64_t *free = p.free
    cdef Py_ssize_t m = p.m
    cdef Py_ssize_t i = _bisect_left(times, m, not_before)
    cdef Py_ssize_t j, k
    cdef double first = INFINITY, start, end
    cdef bint blocked
    while i < m:
        if free[i] < nodes:
            i += 1
            continue
        start = times[i]
        if first == INFINITY:
            first = start
        end = start + duration
        j = i + 1
        blocked = False
        while j < m and times[j] < end:
            if free[j] < nodes:
                blocked = True
                break
            j += 1
        if not blocked:
            if end > start:  # (a zero-length job reserves nothing)
                if j < m:
                    if times[j] != end:  # times[j - 1] < end < times[j]
                        memmove(&times[j + 1], &times[j], (m - j) * sizeof(double))
                        memmove(&free[j + 1], &free[j], (m - j) * sizeof(int64_t))
                        times[j] = end
                        free[j] = free[j - 1]
                        p.m = m + 1
                elif end != INFINITY:
                    times[m] = end
                    free[m] = free[m - 1]
                    p.m = m + 1
                for k in range(i, j):
                    free[k] -= nodes
            first_out[0] = first
            return start
        i = j + 1
    first_out[0] = first
    return INFINITY


cdef double _place(Steps *p, int64_t nodes, double duration) except? -1:
    """Profile.place: the search from its bounds, then the bounds updated."""
    cdef double bound = -INFINITY, low, start, first
    cdef SameSlot *slot
    if nodes > p.top_nodes:
        # more nodes than any step ever has (the profile only loses nodes): never
        # placeable, and no bound of a placeable job changes but the last job's
        p.recent_nodes = nodes
        p.recent_length = duration
        p.recent_start = INFINITY
        return INFINITY
    slot = _same_slot(p, nodes, duration)
    if slot.used:
        bound = slot.start
    if p.latest_length[nodes] <= duration and p.latest_start[nodes] > bound:
        bound = p.latest_start[nodes]  # (NaN length: none, the test fails)
    if p.recent_nodes <= nodes and p.recent_length <= duration and p.recent_start > bound:
        bound = p.recent_start
    low = p.lowest[nodes]
    if bound == -INFINITY or (low != -INFINITY and low >= bound):
        # a search from before every step with that many free nodes
        start = _place_from(p, nodes, duration, low, &first)
        p.lowest[nodes] = first
    else:
        start = _place_from(p, nodes, duration, bound, &first)
    if not slot.used:
        slot.used = True
        slot.nodes = nodes
        slot.length = duration
        p.same_used += 1
        slot.start = start
        if 2 * p.same_used > p.same_size:
            _same_grow(p)
    else:
        slot.start = start
    p.latest_length[nodes] = duration
    p.latest_start[nodes] = start
    p.recent_nodes = nodes
    p.recent_length = duration
    p.recent_start = start
    return start


cdef bint _any_starts_now(Steps *p, double now, const double *shortest_upto, Py_ssize_t width) noexcept nogil:
    """policies.profile.any_starts_now on one row of prefix minima (``width`` columns)."""
    cdef double *times = p.times
    cdef int64_t *free = p.free
    cdef int64_t free_now = free[0], lowest = free[0], c, top
    cdef Py_ssize_t i = 1, m = p.m
    cdef double length, end
    top = free_now if free_now < width - 1 else width - 1
    if top < 1:
        return False
    c = top
    while c > 0:
        length = shortest_upto[c]
        if length == INFINITY:
            return False  # no job of at most c nodes, so none of fewer
        end = now + length
        while i < m and times[i] < end:
            if free[i] < lowest:
                lowest = free[i]
                if lowest < 1:
                    return False
            i += 1
        if c <= lowest:
            return True
        c -= 1
    return False


def conservative_batch(
    profile,
    double now,
    Py_ssize_t free,
    const int64_t[::1] nodes,
    const double[::1] lengths,
    Py_ssize_t first,
    Py_ssize_t n_keys,
    const double[:, ::1] block_min_length,
    Py_ssize_t stop_every,
    Py_ssize_t block,
    int64_t gone,
    bint update_profile=False,
):
    """:func:`policies.profile.conservative_batch`, compiled: the keys of the jobs
    that start now (same arguments; ``nodes`` int64 and ``lengths`` float64
    arrays, ``block_min_length`` a C-contiguous float64 table). ``profile`` is
    read, and its steps are replaced by the final ones only when
    ``update_profile`` (its bounds for :meth:`~policies.profile.Profile.place`
    are not kept: the profile of a batch is not placed in again)."""
    cdef list times_in = profile.times
    cdef list free_in = profile.free
    cdef Py_ssize_t m0 = len(times_in), i, key, capacity, c
    cdef Py_ssize_t width = block_min_length.shape[1]
    cdef Py_ssize_t n_blocks, b, last_block
    cdef Steps p
    cdef double *shortest = NULL
    cdef double start, length
    cdef int64_t n, top_nodes = 0
    cdef list taken = []
    if n_keys > nodes.shape[0] or n_keys > lengths.shape[0]:
        raise ValueError(f"n_keys {n_keys} beyond the {min(nodes.shape[0], lengths.shape[0])} jobs given")
    if first < 0 or m0 == 0 or len(free_in) != m0 or stop_every < 1 or block < 1:
        raise ValueError("conservative_batch: empty profile, or bad first, stop_every or block")
    last_block = (n_keys - 1) // block
    if n_keys > first and last_block >= block_min_length.shape[0]:
        raise ValueError(f"block_min_length has {block_min_length.shape[0]} blocks, the keys need {last_block + 1}")
    # every placement adds at most one step
    capacity = m0 + (n_keys - first if n_keys > first else 0) + 1
    for i in range(m0):
        n = free_in[i]
        if n > top_nodes:
            top_nodes = n
    p.times = <double *>malloc(capacity * sizeof(double))
    p.free = <int64_t *>malloc(capacity * sizeof(int64_t))
    p.same_size = 1024
    p.same = <SameSlot *>malloc(p.same_size * sizeof(SameSlot))
    p.latest_length = <double *>malloc((top_nodes + 1) * sizeof(double))
    p.latest_start = <double *>malloc((top_nodes + 1) * sizeof(double))
    p.lowest = <double *>malloc((top_nodes + 1) * sizeof(double))
    try:
        if (p.times == NULL or p.free == NULL or p.same == NULL or p.latest_length == NULL
                or p.latest_start == NULL or p.lowest == NULL):
            raise MemoryError()
        for i in range(m0):
            p.times[i] = times_in[i]
            p.free[i] = free_in[i]
        p.m = m0
        p.same_used = 0
        for i in range(p.same_size):
            p.same[i].used = False
        for i in range(top_nodes + 1):
            p.latest_length[i] = NAN
            p.latest_start[i] = NAN
            p.lowest[i] = -INFINITY
        p.top_nodes = top_nodes
        p.recent_nodes = 0x7FFFFFFFFFFFFFFF
        p.recent_length = INFINITY
        p.recent_start = now
        key = first
        while key < n_keys:
            if key % stop_every == 0 and key - first >= stop_every:
                if shortest == NULL:
                    # shortest[b, c]: the shortest planned length among the jobs of at
                    # most c nodes in blocks b and later (suffix minima of the summaries)
                    n_blocks = last_block + 1
                    shortest = <double *>malloc(n_blocks * width * sizeof(double))
                    if shortest == NULL:
                        raise MemoryError()
                    for c in range(width):
                        shortest[last_block * width + c] = block_min_length[last_block, c]
                    for b in range(last_block - 1, -1, -1):
                        for c in range(width):
                            length = block_min_length[b, c]
                            if shortest[(b + 1) * width + c] < length:
                                length = shortest[(b + 1) * width + c]
                            shortest[b * width + c] = length
                if not _any_starts_now(&p, now, &shortest[(key // block) * width], width):
                    break
            n = nodes[key]
            if n == gone:
                key += 1
                continue
            if n < 0:
                raise ValueError(f"job at key {key} needs {n} nodes (a count >= 0 expected)")
            if free == 0:
                break
            start = _place(&p, n, lengths[key])
            if start == INFINITY:
                key += 1
                continue  # larger than the partition: never placeable
            if start == now and n <= free:
                taken.append(key)
                free -= n
            key += 1
        if update_profile:
            profile.times = [p.times[i] for i in range(p.m)]
            profile.free = [p.free[i] for i in range(p.m)]
    finally:
        c_free(p.times)
        c_free(p.free)
        c_free(p.same)
        c_free(p.latest_length)
        c_free(p.latest_start)
        c_free(p.lowest)
        c_free(shortest)
    return taken
