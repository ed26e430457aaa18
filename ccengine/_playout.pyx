# cython: language_level=3
"""Playout policies in C: the greedy pick, its variants, and the rollout leaf evaluator
(private; use :class:`ccengine.search.RolloutEvaluator`).

:class:`RolloutEvaluator` values a leaf of the tree search by playing the game out from it with
one of the policies below, both (every) sides alike. ``_greedy_pick`` is also the tree search's
model of a greedy opponent (``opponent=greedy``), which cimports it (ccengine/_playout.pxd).
"""

from libc.math cimport exp, tanh
from libc.stdint cimport int16_t, int32_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from ccengine._core cimport (
    MAX_PLAYERS,
    RESULT_NONE,
    CState,
    RulesTables,
    State,
    Tables,
    apply_move,
    cell_owner,
    forward_distance,
    generate_moves,
    score_vector,
)
from ccengine._random cimport _below, _mix_seed, _uniform

import numpy as np

__all__ = ["RolloutEvaluator", "greedy_pick"]




cdef inline int _greedy_rank(const Tables* t, int p, int s, int e) noexcept nogil:
    """Greedy's order of moves: largest forward distance, then the least advanced start cell
    (an advance is 0..16 rows, so it never outweighs one row of distance)."""
    return 64 * forward_distance(t, p, s, e) - t.advance[p][s]


cdef int _greedy_pick(const Tables* t, const CState* s, const int16_t* moves, int cnt, uint64_t* rng) noexcept nogil:
    """Deterministic greedy (RULES.md): largest forward distance; among ties, the least advanced
    start cell (along the mover's own progress axis); uniform among what is left."""
    cdef int p = s.to_move, i, rank, best = -1000000, ties = 0, pick = 0
    if cnt == 1 or moves[0] < 0:
        return 0
    for i in range(cnt):
        rank = _greedy_rank(t, p, moves[2 * i], moves[2 * i + 1])
        if rank > best:
            best = rank
            pick = i
            ties = 1
        elif rank == best:
            ties += 1
            if _below(rng, ties) == 0:
                pick = i
    return pick


cdef int _greedy_match(const Tables* t, const CState* s, const int16_t* moves, int cnt, int start, int end) noexcept nogil:
    """Whether the move (start, end), played in s, is one greedy could have chosen: 1 if it is,
    0 if not, -1 when s left no choice (one legal move or the pass)."""
    cdef int p = s.to_move, i, rank, best = -1000000
    if cnt <= 1 or moves[0] < 0:
        return -1
    if start < 0:
        return 0
    for i in range(cnt):
        rank = _greedy_rank(t, p, moves[2 * i], moves[2 * i + 1])
        if rank > best:
            best = rank
    return 1 if _greedy_rank(t, p, start, end) == best else 0


def greedy_pick(State state not None, uint64_t seed):
    """The move ``_greedy_pick`` (the playouts' greedy rule and ``opponent=greedy``'s model)
    chooses in ``state``, its tie-break stream seeded by ``seed``: ``(start, end)``, ``(-1, -1)``
    for a pass. For tests: the Python twin is ``ccengine.players.greedy_candidates``."""
    cdef const Tables* t = &state.tables.t
    cdef int cnt, i
    cdef uint64_t rng = _mix_seed(seed, 0)
    cdef int16_t* moves
    if state.s.result != RESULT_NONE:
        raise ValueError("the game is over: no move to pick")
    moves = <int16_t*>malloc(2 * t.max_moves * sizeof(int16_t))
    if moves == NULL:
        raise MemoryError()
    try:
        cnt = generate_moves(t, &state.s, moves)
        i = _greedy_pick(t, &state.s, moves, cnt, &rng)
        return int(moves[2 * i]), int(moves[2 * i + 1])
    finally:
        free(moves)


# Rollout policies (RolloutEvaluator.policy)
cdef enum:
    RP_GREEDY = 0
    RP_RANDOM = 1
    RP_STOCHASTIC = 2
    RP_EPS_GREEDY = 3
    RP_SOFTMAX = 4

_ROLLOUT_POLICIES = {"greedy": RP_GREEDY, "random": RP_RANDOM, "greedy-stochastic": RP_STOCHASTIC,
                     "greedy-eps": RP_EPS_GREEDY, "softmax": RP_SOFTMAX}


cdef int _stochastic_pick(const Tables* t, const CState* s, const int16_t* moves, int cnt, uint64_t* rng) noexcept nogil:
    """Stochastic greedy (RULES.md): psi > 0 moves with probability proportional to psi; with
    none, uniform over all moves."""
    cdef int p = s.to_move, i, psi, total = 0, u
    for i in range(cnt):
        psi = forward_distance(t, p, moves[2 * i], moves[2 * i + 1])
        if psi > 0:
            total += psi
    if total == 0:
        return _below(rng, cnt)
    u = _below(rng, total)
    for i in range(cnt):
        psi = forward_distance(t, p, moves[2 * i], moves[2 * i + 1])
        if psi > 0:
            u -= psi
            if u < 0:
                return i
    return cnt - 1


cdef int _softmax_pick(const Tables* t, const CState* s, const int16_t* moves, int cnt, double temp,
                       uint64_t* rng) noexcept nogil:
    """Move i with probability proportional to exp(psi_i / temp)."""
    cdef int p = s.to_move, i, psi, best = -1000000
    cdef double total = 0.0, u
    for i in range(cnt):
        psi = forward_distance(t, p, moves[2 * i], moves[2 * i + 1])
        if psi > best:
            best = psi
    for i in range(cnt):
        total += exp((forward_distance(t, p, moves[2 * i], moves[2 * i + 1]) - best) / temp)
    u = _uniform(rng) * total
    for i in range(cnt):
        u -= exp((forward_distance(t, p, moves[2 * i], moves[2 * i + 1]) - best) / temp)
        if u < 0.0:
            return i
    return cnt - 1


cdef int _winning_move(const Tables* t, const CState* s, const int16_t* moves, int cnt) noexcept nogil:
    """Index of a move that wins at once for the side to move, else -1. Only a move into the
    mover's goal can complete it, so only those are tried."""
    cdef int p = s.to_move, i, e, win = 1 if p == 0 else -1
    cdef CState c
    for i in range(cnt):
        e = moves[2 * i + 1]
        if e < 0 or not ((t.goal[p][e >> 6] >> (e & 63)) & 1):
            continue
        c = s[0]
        apply_move(t, &c, moves[2 * i], e)
        if t.players == 2:
            if c.result == win:
                return i
        elif c.result != RESULT_NONE and c.winners == (1 << p):
            return i
    return -1


cdef class RolloutEvaluator:
    """Leaf values by playing the game out from each leaf, in C (the classic MCTS evaluator).

    ``policy`` (both sides play it):

    - ``"greedy"``: the deterministic greedy player of RULES.md, random among its ties;
    - ``"random"``: uniform legal moves;
    - ``"greedy-stochastic"``: the stochastic greedy player of RULES.md (psi > 0 moves with
      probability proportional to psi);
    - ``"greedy-eps"``: a uniform random move with probability ``epsilon``, else greedy;
    - ``"softmax"``: move i with probability proportional to ``exp(psi_i / temperature)``.

    ``decisive``: before the policy picks, a move that wins at once is taken (both sides).
    ``rollouts``: playouts per leaf, their values averaged.
    ``max_plies``: rollout length cap (0 = play to the end; the rules' own ``max_plies`` always
    ends a game). A rollout cut by the cap scores ``cap_value``: ``"draw"`` (0) or ``"advance"``
    (``tanh((a_me - a_opp) / advance_scale)`` from the rows the two sides have advanced).
    Priors are uniform over the legal moves.

    Each leaf's random stream is seeded from ``seed`` and the leaf's state (hash and ply),
    so values do not depend on how leaves are batched.
    """

    needs_states = True

    cdef RulesTables tables
    cdef const Tables* t
    cdef int kind
    cdef readonly str policy
    cdef readonly double epsilon
    cdef readonly double temperature
    cdef readonly int rollouts
    cdef readonly bint decisive
    cdef readonly int max_plies
    cdef int cap_advance
    cdef readonly double advance_scale
    cdef uint64_t seed
    cdef int16_t* movebuf

    def __cinit__(self):
        self.movebuf = NULL

    def __init__(self, RulesTables tables not None, *, str policy="greedy", double epsilon=0.1,
                 double temperature=1.0, int rollouts=1, bint decisive=False, int max_plies=0,
                 str cap_value="draw", double advance_scale=4.0, uint64_t seed=0):
        if tables.t.players > 2 and cap_value == "advance":
            raise ValueError(f"cap_value='advance' compares two players' advance; the {tables.rules.name} "
                             f"rules seat {tables.t.players} players: use cap_value='draw'")
        if policy not in _ROLLOUT_POLICIES:
            raise ValueError(f"policy={policy!r}; valid: {sorted(_ROLLOUT_POLICIES)}")
        if cap_value not in ("draw", "advance"):
            raise ValueError(f"cap_value={cap_value!r}; valid: 'draw', 'advance'")
        if max_plies < 0 or advance_scale <= 0:
            raise ValueError("max_plies must be >= 0 and advance_scale > 0")
        if not 0.0 <= epsilon <= 1.0 or not temperature > 0.0 or rollouts < 1:
            raise ValueError("epsilon must be in [0, 1], temperature > 0 and rollouts >= 1")
        self.tables = tables
        self.t = &tables.t
        self.policy = policy
        self.kind = _ROLLOUT_POLICIES[policy]
        self.epsilon = epsilon
        self.temperature = temperature
        self.rollouts = rollouts
        self.decisive = decisive
        self.max_plies = max_plies
        self.cap_advance = cap_value == "advance"
        self.advance_scale = advance_scale
        self.seed = seed
        free(self.movebuf)
        self.movebuf = <int16_t*>malloc(2 * self.t.max_moves * sizeof(int16_t))
        if self.movebuf == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.movebuf)

    cdef double _advance(self, const CState* s, int player) noexcept nogil:
        cdef int c, total = 0
        for c in range(self.t.cells):
            if cell_owner(s, c) == player:
                total += self.t.advance[player][c]
        return total

    cdef int _pick(self, const CState* s, int cnt, uint64_t* rng) noexcept nogil:
        cdef int i
        if cnt == 1 or self.movebuf[0] < 0:
            return 0
        if self.decisive:
            i = _winning_move(self.t, s, self.movebuf, cnt)
            if i >= 0:
                return i
        if self.kind == RP_GREEDY:
            return _greedy_pick(self.t, s, self.movebuf, cnt, rng)
        if self.kind == RP_RANDOM:
            return _below(rng, cnt)
        if self.kind == RP_STOCHASTIC:
            return _stochastic_pick(self.t, s, self.movebuf, cnt, rng)
        if self.kind == RP_EPS_GREEDY:
            if _uniform(rng) < self.epsilon:
                return _below(rng, cnt)
            return _greedy_pick(self.t, s, self.movebuf, cnt, rng)
        return _softmax_pick(self.t, s, self.movebuf, cnt, self.temperature, rng)

    cdef double _playout(self, const CState* leaf, uint64_t* rng) noexcept nogil:
        """Value of one playout from `leaf`, from the view of the player to move at `leaf`."""
        cdef CState s = leaf[0]
        cdef int plies = 0, cnt, i, me = leaf.to_move
        while s.result == RESULT_NONE and (self.max_plies == 0 or plies < self.max_plies):
            cnt = generate_moves(self.t, &s, self.movebuf)
            i = self._pick(&s, cnt, rng)
            apply_move(self.t, &s, self.movebuf[2 * i], self.movebuf[2 * i + 1])
            plies += 1
        if s.result != RESULT_NONE:
            return s.result if me == 0 else -s.result
        if self.cap_advance:
            return tanh((self._advance(&s, me) - self._advance(&s, 1 - me)) / self.advance_scale)
        return 0.0

    cdef void _playout_vec(self, const CState* leaf, uint64_t* rng, double* acc) noexcept nogil:
        """Three or more players: add one playout's score vector (by seat) to acc; a playout
        cut by the cap scores a draw (equal shares)."""
        cdef CState s = leaf[0]
        cdef int plies = 0, cnt, i, P = self.t.players
        cdef float sv[MAX_PLAYERS]
        while s.result == RESULT_NONE and (self.max_plies == 0 or plies < self.max_plies):
            cnt = generate_moves(self.t, &s, self.movebuf)
            i = self._pick(&s, cnt, rng)
            apply_move(self.t, &s, self.movebuf[2 * i], self.movebuf[2 * i + 1])
            plies += 1
        if s.result != RESULT_NONE:
            score_vector(self.t, &s, sv)
            for i in range(P):
                acc[i] += sv[i]
        else:
            for i in range(P):
                acc[i] += 1.0 / P

    cdef double rollout(self, const CState* leaf) noexcept nogil:
        """Mean value of ``rollouts`` playouts from `leaf`, from the view of its player to move."""
        cdef uint64_t rng = _mix_seed(self.seed ^ leaf.hash, <uint64_t>leaf.ply)
        cdef double total = 0.0
        cdef int r
        for r in range(self.rollouts):
            total += self._playout(leaf, &rng)
        return total / self.rollouts

    def evaluate(self, pieces, to_move, int32_t[:, ::1] legal not None, int32_t[::1] counts not None,
                 *, uint8_t[:, ::1] states=None):
        """Priors uniform over ``counts[i]`` moves (float32 ``[B, max_moves]``) and rollout values
        from the leaves' engine ``states`` (uint8 ``[B, STATE_BYTES]``): float32 ``[B]`` from the
        leaf mover's view for two players, float32 ``[B, P]`` mean score vectors by seat for more."""
        if states is None:
            raise ValueError("RolloutEvaluator needs the leaves' engine states (select(..., states=...))")
        cdef int b = counts.shape[0], i, j, m = legal.shape[1]
        if states.shape[0] < b or states.shape[1] != sizeof(CState):
            raise ValueError(f"states must be uint8 [>= {b}, {sizeof(CState)}]")
        priors = np.zeros((b, m), dtype=np.float32)
        cdef float[:, ::1] pr = priors
        cdef CState st
        cdef int P = self.t.players, r
        cdef double acc[MAX_PLAYERS]
        cdef uint64_t rng
        cdef float[:, ::1] vw
        if P > 2:
            vec = np.empty((b, P), dtype=np.float32)
            vw = vec
            with nogil:
                for i in range(b):
                    for j in range(counts[i]):
                        pr[i, j] = 1.0 / counts[i]
                    memcpy(&st, &states[i, 0], sizeof(CState))
                    rng = _mix_seed(self.seed ^ st.hash, <uint64_t>st.ply)
                    for j in range(P):
                        acc[j] = 0.0
                    for r in range(self.rollouts):
                        self._playout_vec(&st, &rng, acc)
                    for j in range(P):
                        vw[i, j] = <float>(acc[j] / self.rollouts)
            return priors, vec
        values = np.empty(b, dtype=np.float32)
        cdef float[::1] va = values
        with nogil:
            for i in range(b):
                for j in range(counts[i]):
                    pr[i, j] = 1.0 / counts[i]
                memcpy(&st, &states[i, 0], sizeof(CState))
                va[i] = <float>self.rollout(&st)
        return priors, values

