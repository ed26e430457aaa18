# C-level interface of the playout policies (ccengine/_playout.pyx), for the tree search.

from libc.stdint cimport int16_t, uint64_t

from ccengine._core cimport CState, Tables

# Index in moves[0 .. 2 * cnt) of the move RULES.md's deterministic greedy player makes in s
# (largest forward distance, then the least advanced start cell, then uniform by rng).
cdef int _greedy_pick(const Tables* t, const CState* s, const int16_t* moves, int cnt, uint64_t* rng) noexcept nogil

# 1 if the move (start, end) played in s ranks first by greedy's rule (one greedy could have
# chosen), 0 if not, -1 when s left no choice; moves[0 .. 2 * cnt) are s's legal moves.
cdef int _greedy_match(const Tables* t, const CState* s, const int16_t* moves, int cnt, int start, int end) noexcept nogil
