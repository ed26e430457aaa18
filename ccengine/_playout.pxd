# C-level interface of the playout policies (ccengine/_playout.pyx), for the tree search.

from libc.stdint cimport int16_t, uint64_t

from ccengine._core cimport CState, Tables

# Index in moves[0 .. 2 * cnt) of the move RULES.md's deterministic greedy player makes in s
# (largest forward distance, then the least advanced start cell, then uniform by rng).
cdef int _greedy_pick(const Tables* t, const CState* s, const int16_t* moves, int cnt, uint64_t* rng) noexcept nogil
