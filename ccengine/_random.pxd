# splitmix64 random streams, shared by the tree search (ccengine/_search.pyx) and the playouts
# (ccengine/_playout.pyx): one independent stream per tree or per leaf, so that a game's search
# does not depend on which other games share its batch. Inline, so each module compiles its own
# copy of these few instructions.

from libc.stdint cimport uint64_t


cdef inline uint64_t _next(uint64_t* s) noexcept nogil:
    s[0] += 0x9E3779B97F4A7C15ULL
    cdef uint64_t z = s[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline double _uniform(uint64_t* s) noexcept nogil:
    """Uniform in (0, 1)."""
    return ((_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0)


cdef inline int _below(uint64_t* s, int n) noexcept nogil:
    """Uniform integer in [0, n)."""
    return <int>(<double>(_next(s) >> 11) * (1.0 / 9007199254740992.0) * n)


cdef inline uint64_t _mix_seed(uint64_t a, uint64_t b) noexcept nogil:
    cdef uint64_t s = a ^ (b * 0xD6E8FEB86659FD93ULL)
    _next(&s)
    return _next(&s)
