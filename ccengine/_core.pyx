# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled Chinese Checkers engine: bitboard move generation, play/undo, perft, batches.

Same rules and the same ``State`` interface as the pure-Python oracle ``ccengine.reference``
(docs/RULES.md). Boards of up to 64 cells live in one 64-bit word; larger ones (up to
11 x 11) in an ``unsigned __int128`` inside the generator and in two words in ``CState``.
The hot functions (``generate_moves``, ``apply_move``, ``perft_c``) are ``nogil`` C with no
Python object anywhere; the C interface is declared in ``_core.pxd`` for the tree search.

Hop closure, ``hops="adjacent"``: set-wise on bitboards. From the frontier, shift one cell
along a direction onto occupied cells, shift again onto empty cells, for all six directions
at once; repeat with the cells newly reached until nothing new appears.
Hop closure, ``hops="mirror"``: per frontier cell and direction, the ray's bitboard ANDed with
the occupied cells; its first bit (count-trailing / leading zeros) is the hopped piece at
distance k, and the hop lands at distance 2k when that cell is on the ray and no other piece
lies on the ray up to it.

Zobrist keys come from a fixed seed (``ZOBRIST_SEED``), so hashes agree across processes.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int8_t, int16_t, int32_t, uint64_t
from libc.math cimport NAN
from libc.string cimport memcpy, memset

import weakref

import numpy as np

from .reference import IllegalMoveError, result_scores, shared_scores
from .rules import DIRECTIONS, PASS, Rules, RulesError

__all__ = [
    "MAX_MOVES",
    "RESULT_NONE",
    "ZOBRIST_SEED",
    "RulesTables",
    "State",
    "batch_boards",
    "batch_legal_moves",
    "batch_new_states",
    "batch_play",
    "batch_results",
    "batch_scores",
    "tables_for",
]

cdef extern from *:
    """
    #include <stdint.h>
    /* 128-bit bitboards for boards of 65..128 cells (GCC / Clang). */
    typedef unsigned __int128 cc_u128;
    static inline cc_u128 cc_join(uint64_t lo, uint64_t hi) { return ((cc_u128)hi << 64) | (cc_u128)lo; }
    static inline uint64_t cc_lo(cc_u128 x) { return (uint64_t)x; }
    static inline uint64_t cc_hi(cc_u128 x) { return (uint64_t)(x >> 64); }
    static inline int cc_ctz64(uint64_t x) { return __builtin_ctzll(x); }
    static inline int cc_msb64(uint64_t x) { return 63 - __builtin_clzll(x); }
    static inline int cc_popcount64(uint64_t x) {
    #if defined(__POPCNT__) || !defined(__x86_64__)
        return __builtin_popcountll(x);
    #else
        /* x86-64 without -mpopcnt: the builtin would be a library call; SWAR is inline. */
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    #endif
    }
    static inline int cc_ctz128(cc_u128 x) {
        uint64_t lo = (uint64_t)x;
        return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(x >> 64));
    }
    static inline int cc_msb128(cc_u128 x) {
        uint64_t hi = (uint64_t)(x >> 64);
        return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll((uint64_t)x);
    }
    """
    # Declared as an integer type so Cython emits plain C operators (as unsigned long, so that
    # Cython tells it apart from uint64_t in the fused type); the C type is 128 bits.
    ctypedef unsigned long cc_u128
    cc_u128 cc_join(uint64_t lo, uint64_t hi) noexcept nogil
    uint64_t cc_lo(cc_u128 x) noexcept nogil
    uint64_t cc_hi(cc_u128 x) noexcept nogil
    int cc_ctz64(uint64_t x) noexcept nogil
    int cc_msb64(uint64_t x) noexcept nogil
    int cc_popcount64(uint64_t x) noexcept nogil
    int cc_ctz128(cc_u128 x) noexcept nogil
    int cc_msb128(cc_u128 x) noexcept nogil

# The bitboard type of the generator: one word (n <= 8) or 128 bits (n = 9..11).
ctypedef fused bits_t:
    uint64_t
    cc_u128

# The C enum constants of _core.pxd, published under the same names for Python callers:
# MAX_MOVES, the largest move count of any valid rules (11 x 11 board, 15 pieces each), and
# RESULT_NONE, the result of a game that goes on (CState.result, batch_results).
globals().update(MAX_MOVES=MAX_MOVES, RESULT_NONE=RESULT_NONE)


# ---------------------------------------------------------------------------------------------
# Bit helpers, specialised per bitboard width at compile time
# ---------------------------------------------------------------------------------------------


cdef inline void _load(const uint64_t* words, bits_t* out) noexcept nogil:
    """Read a word pair into a bitboard (the 64-bit path ignores word 1, always 0 there)."""
    if bits_t is uint64_t:
        out[0] = words[0]
    else:
        out[0] = cc_join(words[0], words[1])


cdef inline void _store(bits_t x, uint64_t* words) noexcept nogil:
    """Write a bitboard into a word pair."""
    if bits_t is uint64_t:
        words[0] = x
        words[1] = 0
    else:
        words[0] = cc_lo(x)
        words[1] = cc_hi(x)


cdef inline int _ctz(bits_t x) noexcept nogil:
    """Index of the lowest set bit (x != 0)."""
    if bits_t is uint64_t:
        return cc_ctz64(x)
    else:
        return cc_ctz128(x)


cdef inline int _msb(bits_t x) noexcept nogil:
    """Index of the highest set bit (x != 0)."""
    if bits_t is uint64_t:
        return cc_msb64(x)
    else:
        return cc_msb128(x)


cdef inline int _popcount2(const uint64_t* words) noexcept nogil:
    return cc_popcount64(words[0]) + cc_popcount64(words[1])


# ---------------------------------------------------------------------------------------------
# Move generation
# ---------------------------------------------------------------------------------------------


cdef inline bits_t _adjacent_hops(bits_t start, bits_t occupied, bits_t empty,
                                  bits_t not_col0, bits_t not_collast, int n) noexcept nogil:
    """Cells reachable by chains of ordinary hops from ``start`` (``start`` included).

    ``occupied`` must exclude the moving piece and ``empty`` include its start cell. A shift
    that changes the column is only taken from cells that have a column to go to, so rows do
    not wrap; shifts beyond the board fall off when ANDed with ``occupied`` / ``empty``.
    """
    cdef int n1 = n + 1
    cdef bits_t over_left = occupied & not_col0       # hopped pieces that still have c - 1
    cdef bits_t over_right = occupied & not_collast   # ... and c + 1 beyond them
    cdef bits_t reached = start, frontier = start, left, right, fresh
    while frontier:
        left = frontier & not_col0
        right = frontier & not_collast
        fresh = (((frontier >> n) & occupied) >> n
                 | ((frontier << n) & occupied) << n
                 | ((left >> 1) & over_left) >> 1
                 | ((right << 1) & over_right) << 1
                 | ((left >> n1) & over_left) >> n1
                 | ((right << n1) & over_right) << n1)
        fresh &= empty & ~reached
        reached |= fresh
        frontier = fresh
    return reached


cdef inline bits_t _mirror_landing(const Tables* t, int x, int d, bits_t occupied) noexcept nogil:
    """The landing cell (as a bitboard, 0 for none) of the mirror hop from ``x`` along ``d``."""
    cdef bits_t ray, blockers, one = 1, landing
    cdef int first, land
    _load(t.raymask[x][d], &ray)
    blockers = ray & occupied
    if not blockers:
        return 0
    # The hopped piece is the ray's nearest occupied cell: the lowest bit of the ray's
    # occupancy for the directions that raise the cell index (odd d), the highest otherwise.
    first = _ctz(blockers) if d & 1 else _msb(blockers)
    # Cells along a ray are evenly spaced in index, so distance 2k from x is 2 * first - x;
    # it is a hop only if that cell is on the ray (the ray did not leave the board first).
    land = 2 * first - x
    if land < 0 or land >= t.cells:
        return 0
    landing = one << land
    if not (ray & landing):
        return 0
    # Distances 1..2k must hold the hopped piece and nothing else.
    if d & 1:
        blockers &= (landing << 1) - 1
    else:
        blockers &= ~(landing - 1)
    if blockers != (one << first):
        return 0
    return landing


cdef inline bits_t _mirror_hops(const Tables* t, bits_t start, bits_t occupied) noexcept nogil:
    """Cells reachable by chains of mirror hops from ``start`` (``start`` included)."""
    cdef bits_t reached = start, frontier = start, fresh
    cdef int x, d
    while frontier:
        fresh = 0
        while frontier:
            x = _ctz(frontier)
            frontier &= frontier - 1
            for d in range(6):
                fresh |= _mirror_landing(t, x, d, occupied)
        fresh &= ~reached
        reached |= fresh
        frontier = fresh
    return reached


cdef inline bits_t _destinations(const Tables* t, int cell, int player, bits_t occupied,
                                 bits_t board, bits_t not_col0, bits_t not_collast) noexcept nogil:
    """Destinations of the piece of ``player`` on ``cell``; ``occupied`` includes that piece."""
    cdef bits_t one = 1, start, others, empty, reached, steps, goal
    start = one << cell
    others = occupied & ~start
    empty = board & ~others          # the start cell counts as empty while the piece hops
    if t.hops_mirror:
        reached = _mirror_hops(t, start, others)
    else:
        reached = _adjacent_hops(start, others, empty, not_col0, not_collast, t.n)
    _load(t.nbr[cell], &steps)
    reached = (reached | (steps & empty)) & ~start
    if t.goal_lock:
        _load(t.goal[player], &goal)
        if start & goal:
            reached &= goal
    return reached


cdef inline int _emit(int16_t* out, int count, int cell, bits_t dests) noexcept nogil:
    """Append the moves (cell, e) for every e in ``dests``, in increasing e."""
    cdef int e
    while dests:
        e = _ctz(dests)
        dests &= dests - 1
        out[2 * count] = <int16_t>cell
        out[2 * count + 1] = <int16_t>e
        count += 1
    return count


# ---------------------------------------------------------------------------------------------
# The 121-hole star: hops by table look-up on one 128-bit word
# ---------------------------------------------------------------------------------------------
# The star's rows have different lengths, so no shift maps every cell to its neighbour; instead
# each cell has, per direction, the cell it hops over (hop_over) and its landing as a bitboard
# (hop_land). The closure is a breadth-first fill over the frontier's cells.


cdef inline cc_u128 _star_occupied(const Tables* t, const CState* s) noexcept nogil:
    """Every piece on the star, of any player."""
    cdef cc_u128 occupied = cc_join(s.bb[0][0] | s.bb[1][0], s.bb[0][1] | s.bb[1][1])
    cdef int p
    for p in range(2, t.players):
        occupied |= cc_join(s.bb[p][0], s.bb[p][1])
    return occupied


cdef inline cc_u128 _star_landings(const Tables* t, int x, cc_u128 others) noexcept nogil:
    """Landings of one hop from ``x``, whatever is on them: the directions with a piece next to x."""
    cdef cc_u128 landings = 0
    cdef int d
    for d in range(6):
        # hop_over is NO_CELL (never occupied) where no landing exists along d.
        if (others >> t.hop_over[x][d]) & 1:
            landings |= cc_join(t.hop_land[x][d][0], t.hop_land[x][d][1])
    return landings


cdef inline cc_u128 _star_destinations(const Tables* t, int cell, int player, cc_u128 occupied) noexcept nogil:
    """Destinations of the piece of ``player`` on ``cell``; ``occupied`` includes that piece.

    Goal lock ``"chain"``: a hop from a goal cell may only land on a goal cell, so the closure
    never leaves the goal once it entered it; the lock is a property of the cell hopped from,
    which makes the reachable set independent of the order of the fill.
    """
    cdef cc_u128 one = 1, start = one << cell, others = occupied & ~start
    cdef cc_u128 board = cc_join(t.board_mask[0], t.board_mask[1])
    cdef cc_u128 empty = board & ~others          # the start cell counts as empty while hopping
    cdef cc_u128 goal = cc_join(t.goal[player][0], t.goal[player][1])
    cdef cc_u128 reached = start, frontier = start, fresh
    cdef int x
    while frontier:
        x = cc_ctz128(frontier)
        frontier &= frontier - 1
        fresh = _star_landings(t, x, others) & empty & ~reached
        if t.goal_lock_chain and (goal >> x) & 1:
            fresh &= goal
        reached |= fresh
        frontier |= fresh
    reached = (reached | (cc_join(t.nbr[cell][0], t.nbr[cell][1]) & empty)) & ~start
    if t.goal_lock and start & goal:
        reached &= goal          # steps too; for goal_lock=True only the destination
    return reached


cdef int _generate_star(const Tables* t, const CState* s, int16_t* out) noexcept nogil:
    """generate_moves on the star (no pass: an empty list ends the game)."""
    cdef cc_u128 own = cc_join(s.bb[s.to_move][0], s.bb[s.to_move][1])
    cdef cc_u128 occupied = _star_occupied(t, s)
    cdef int count = 0, cell
    while own:
        cell = cc_ctz128(own)
        own &= own - 1
        count = _emit(out, count, cell, _star_destinations(t, cell, s.to_move, occupied))
    return count


cdef int _generate(const Tables* t, const CState* s, int16_t* out, bits_t width) noexcept nogil:
    """generate_moves for one bitboard width (``width`` only selects the specialisation)."""
    cdef bits_t own, other, occupied, board, not_col0, not_collast, pieces, dests
    cdef int player = s.to_move, count = 0, cell
    _load(s.bb[player], &own)
    _load(s.bb[1 - player], &other)
    _load(t.board_mask, &board)
    _load(t.not_col0, &not_col0)
    _load(t.not_collast, &not_collast)
    occupied = own | other
    pieces = own
    while pieces:
        cell = _ctz(pieces)
        pieces &= pieces - 1
        dests = _destinations(t, cell, player, occupied, board, not_col0, not_collast)
        count = _emit(out, count, cell, dests)
    return count


cdef void _piece_destinations(const Tables* t, const CState* s, int cell, uint64_t* dest,
                              bits_t width) noexcept nogil:
    """piece_destinations for one bitboard width."""
    cdef bits_t occupied, mine, board, not_col0, not_collast
    cdef int player = cell_owner(s, cell)
    _load(s.bb[0], &occupied)
    _load(s.bb[1], &mine)
    occupied |= mine
    _load(t.board_mask, &board)
    _load(t.not_col0, &not_col0)
    _load(t.not_collast, &not_collast)
    _store(_destinations(t, cell, player if player >= 0 else s.to_move, occupied, board,
                         not_col0, not_collast), dest)


cdef int generate_moves(const Tables* t, const CState* s, int16_t* out) noexcept nogil:
    """Legal moves sorted by (s, e) into ``out`` (2 * t.max_moves int16); see _core.pxd."""
    cdef int count
    if s.result != RESULT_NONE:
        return 0
    if t.star:
        return _generate_star(t, s, out)
    if t.nwords == 1:
        count = _generate[uint64_t](t, s, out, 0)
    else:
        count = _generate[cc_u128](t, s, out, 0)
    if count == 0:
        out[0] = -1
        out[1] = -1
        count = 1
    return count


cdef void piece_destinations(const Tables* t, const CState* s, int cell, uint64_t* dest) noexcept nogil:
    """Destinations of the piece on ``cell`` as two words (an empty cell moves as the side to move)."""
    cdef int player
    cdef cc_u128 occupied
    if t.star:
        player = cell_owner(s, cell)
        occupied = _star_occupied(t, s)
        _store[cc_u128](_star_destinations(t, cell, player if player >= 0 else s.to_move, occupied), dest)
    elif t.nwords == 1:
        _piece_destinations[uint64_t](t, s, cell, dest, 0)
    else:
        _piece_destinations[cc_u128](t, s, cell, dest, 0)


cdef bint _has_move(const Tables* t, const CState* s) noexcept nogil:
    """Whether the side to move has a move other than the pass."""
    cdef uint64_t dest[2]
    cdef uint64_t w
    cdef int word, cell
    for word in range(t.nwords):
        w = s.bb[s.to_move][word]
        while w:
            cell = 64 * word + cc_ctz64(w)
            w &= w - 1
            piece_destinations(t, s, cell, dest)
            if dest[0] | dest[1]:
                return True
    return False


cdef bint is_legal_move(const Tables* t, const CState* s, int from_, int to) noexcept nogil:
    """Whether (from_, to) is a legal move for the side to move; see _core.pxd."""
    cdef uint64_t dest[2]
    if s.result != RESULT_NONE:
        return False
    if from_ == -1 and to == -1:
        return not t.star and not _has_move(t, s)    # the star has no pass
    if from_ < 0 or from_ >= t.cells or to < 0 or to >= t.cells:
        return False
    if cell_owner(s, from_) != s.to_move:
        return False
    piece_destinations(t, s, from_, dest)
    return (dest[to >> 6] >> (to & 63)) & 1


# ---------------------------------------------------------------------------------------------
# Playing moves and the end of the game
# ---------------------------------------------------------------------------------------------


cdef int cell_owner(const CState* s, int cell) noexcept nogil:
    """-1 for an empty cell, else the player whose piece stands there."""
    cdef int word = cell >> 6, p
    cdef uint64_t bit = (<uint64_t>1) << (cell & 63)
    if s.bb[0][word] & bit:
        return 0
    if s.bb[1][word] & bit:
        return 1
    for p in range(2, MAX_PLAYERS):   # absent players' bitboards are empty
        if s.bb[p][word] & bit:
            return p
    return -1


cdef inline bint _has_won(const Tables* t, const CState* s, int player) noexcept nogil:
    """The win condition of ``win_rule`` for ``player`` on the current board."""
    cdef int w
    cdef uint64_t missing = 0, own_in_goal = 0
    for w in range(2):
        own_in_goal |= s.bb[player][w] & t.goal[player][w]
        if t.win_all_own:
            missing |= t.goal[player][w] & ~s.bb[player][w]
        else:
            missing |= t.goal[player][w] & ~(s.bb[0][w] | s.bb[1][w])
    return missing == 0 and own_in_goal != 0


cdef inline int _winner_after(const Tables* t, const CState* s, int mover) noexcept nogil:
    """The winner after ``mover`` moved (the mover is checked first), or -1."""
    if _has_won(t, s, mover):
        return mover
    if _has_won(t, s, 1 - mover):
        return 1 - mover
    return -1


cdef void _rows_advanced(const Tables* t, const CState* s, int* out) noexcept nogil:
    """Each player's rows advanced in total since the start position into out[0 .. players)."""
    cdef int player, word
    cdef uint64_t w
    for player in range(t.players):
        out[player] = -t.start_advance[player]
        for word in range(2):
            w = s.bb[player][word]
            while w:
                out[player] += t.advance[player][64 * word + cc_ctz64(w)]
                w &= w - 1


cdef int _distance_winners(const Tables* t, const CState* s) noexcept nogil:
    """Distance adjudication (RULES.md, any number of players) as a bitmask of the players within
    ``distance_margin`` rows of the most advanced; 0 (a draw) when that is everyone."""
    cdef int advanced[MAX_PLAYERS]
    cdef int p, lead, mask = 0
    _rows_advanced(t, s, advanced)
    lead = advanced[0]
    for p in range(1, t.players):
        if advanced[p] > lead:
            lead = advanced[p]
    for p in range(t.players):
        if lead - advanced[p] <= t.distance_margin:
            mask |= 1 << p
    return 0 if mask == (1 << t.players) - 1 else mask


cdef int _adjudicate(const Tables* t, const CState* s) noexcept nogil:
    """Two-player result of a game cut off without a winner: a draw, or by rows advanced (RULES.md)."""
    cdef int winners
    if not t.adjudicate:
        return 0
    winners = _distance_winners(t, s)
    return 1 if winners == 1 else -1 if winners == 2 else 0


cdef inline int _goal_count(const Tables* t, const CState* s, int player) noexcept nogil:
    return (cc_popcount64(s.bb[player][0] & t.goal[player][0])
            + cc_popcount64(s.bb[player][1] & t.goal[player][1]))


# ---------------------------------------------------------------------------------------------
# The star's end of the game (RULES.md "preset star2", checks 1-7; 5 is star_repetition_draw)
# ---------------------------------------------------------------------------------------------


cdef inline bint _all_home(const Tables* t, const CState* s, int player) noexcept nogil:
    """Whether every cell of the player's goal holds its own piece."""
    return ((t.goal[player][0] & ~s.bb[player][0]) | (t.goal[player][1] & ~s.bb[player][1])) == 0


cdef inline bint _goal_blocked(const Tables* t, const CState* s, int player) noexcept nogil:
    """Anti-block: the player's goal is full, with at least one own and one other piece in it."""
    cdef int w
    cdef uint64_t empty = 0, own = 0, other = 0
    for w in range(2):
        empty |= t.goal[player][w] & ~(s.bb[0][w] | s.bb[1][w])
        own |= t.goal[player][w] & s.bb[player][w]
        other |= t.goal[player][w] & s.bb[1 - player][w]
    return empty == 0 and own != 0 and other != 0


cdef bint _finishes_at_once(const Tables* t, const CState* s, int player) noexcept nogil:
    """Whether one legal move of ``player`` brings all its pieces into its goal.

    Only a position with k - 1 pieces home can be finished in one move, by the last piece
    reaching the goal's one free cell, so one piece's destinations decide it.
    """
    cdef uint64_t missing[2]
    cdef uint64_t outside[2]
    cdef uint64_t dest[2]
    cdef int w, cell
    for w in range(2):
        missing[w] = t.goal[player][w] & ~(s.bb[0][w] | s.bb[1][w])
        outside[w] = s.bb[player][w] & ~t.goal[player][w]
    if _goal_count(t, s, player) != t.k - 1 or _popcount2(missing) != 1:
        return False
    cell = cc_ctz64(outside[0]) if outside[0] else 64 + cc_ctz64(outside[1])
    piece_destinations(t, s, cell, dest)
    return ((dest[0] & missing[0]) | (dest[1] & missing[1])) != 0


cdef int _star_goal_end(const Tables* t, const CState* s) noexcept nogil:
    """The result by checks 1-4 (goals filled, equal turns, anti-block), else RESULT_NONE."""
    cdef bint home0 = _all_home(t, s, 0), home1 = _all_home(t, s, 1)
    cdef int p
    if home0 and home1:
        return 0
    if home0:
        if t.equal_turn and s.to_move == 1 and _finishes_at_once(t, s, 1):
            return 0
        return 1
    if home1:
        return -1
    if not t.win_all_own:
        for p in range(2):
            if _goal_blocked(t, s, p):
                return 1 if p == 0 else -1
    return RESULT_NONE


cdef int _star_end(const Tables* t, const CState* s) noexcept nogil:
    """The result by checks 1-4, 6 and 7 after a move (or of a given position), else RESULT_NONE.

    Check 6 (the move limit) is a draw, or scored by distance where the training-only option
    ``adjudicate`` asks for it."""
    cdef int result = _star_goal_end(t, s)
    if result != RESULT_NONE:
        return result
    # Check 5, repetition, would draw here: star_repetition_draw adds it with the history.
    if s.ply >= t.max_plies:
        return _adjudicate(t, s)
    if not _has_move(t, s):
        return 0
    return RESULT_NONE


# ---------------------------------------------------------------------------------------------
# Three or more players (RULES.md "Three, four and six players"; docs/RULES.md's decisions):
# the players whose goal is filled at the end of a round share the win; the draws (repetition,
# move limit, no legal move) split it, unless a goal is already filled in the round they cut.
# ---------------------------------------------------------------------------------------------


cdef inline int _filled_mask(const Tables* t, const CState* s) noexcept nogil:
    """The players whose goal is filled, as a bitmask: all their pieces home, or anti-block
    (the goal full, with at least one own piece, when ``win_rule`` is filled)."""
    cdef cc_u128 occupied = _star_occupied(t, s), goal, own
    cdef int p, mask = 0
    for p in range(t.players):
        goal = cc_join(t.goal[p][0], t.goal[p][1])
        own = cc_join(s.bb[p][0], s.bb[p][1]) & goal
        if own == goal or (not t.win_all_own and own != 0 and (goal & ~occupied) == 0):
            mask |= 1 << p
    return mask


cdef void _judge_multi(const Tables* t, CState* s) noexcept nogil:
    """The end of the game after a move (or of a given position), but for the repetition
    (star_repetition_draw): s.result 0 and s.winners when over, else RESULT_NONE. The move limit
    with no goal filled is a draw, or scored by distance under the training-only ``adjudicate``."""
    cdef int filled = _filled_mask(t, s)
    s.winners = 0
    if (filled and s.to_move == 0) or s.ply >= t.max_plies or not _has_move(t, s):
        s.result = 0
        s.winners = filled
        if not filled and t.adjudicate and s.ply >= t.max_plies:
            s.winners = _distance_winners(t, s)
    else:
        s.result = RESULT_NONE


cdef void score_vector(const Tables* t, const CState* s, float* out) noexcept nogil:
    """The finished game's scores into out[0 .. players) (see _core.pxd)."""
    cdef int p, winners = s.winners, count = 0
    if t.players == 2:
        winners = 1 if s.result == 1 else 2 if s.result == -1 else 0
    for p in range(t.players):
        count += (winners >> p) & 1
    for p in range(t.players):
        if count == 0:
            out[p] = 1.0 / t.players
        else:
            out[p] = (1.0 / count) if (winners >> p) & 1 else 0.0


cdef void star_repetition_draw(const Tables* t, CState* s, int occurrences) noexcept nogil:
    """Check 5 after apply_move: a draw at the repetition-th occurrence (see _core.pxd). It comes
    before check 6, so it also overrides a move-limit result that distance adjudication gave."""
    if not t.repetition or occurrences < t.repetition:
        return
    if t.players != 2:
        # a draw, or the win of the goals filled in this round; this also undoes a move-limit
        # adjudication (which needs no goal filled) and leaves every other ending as it was
        s.result = 0
        s.winners = _filled_mask(t, s)
        return
    if s.result == RESULT_NONE or (t.adjudicate and s.ply >= t.max_plies and _star_goal_end(t, s) == RESULT_NONE):
        s.result = 0


cdef void apply_move(const Tables* t, CState* s, int from_, int to) noexcept nogil:
    """Play (from_, to) for the side to move; the end-of-game checks follow reference.py."""
    cdef int mover = s.to_move, count, winner, after
    if from_ >= 0:
        s.bb[mover][from_ >> 6] &= ~((<uint64_t>1) << (from_ & 63))
        s.bb[mover][to >> 6] |= (<uint64_t>1) << (to & 63)
        s.hash ^= t.zobrist[mover][from_] ^ t.zobrist[mover][to]
    s.ply += 1
    if t.players == 2:
        s.to_move = 1 - mover
        s.hash ^= t.zobrist_side
    else:
        after = mover + 1 if mover + 1 < t.players else 0
        s.to_move = after
        s.hash ^= t.zobrist_turn[mover] ^ t.zobrist_turn[after]
        _judge_multi(t, s)
        return
    if t.star:
        s.result = _star_end(t, s)
        return
    count = _goal_count(t, s, mover)
    if count > s.goal_best[mover]:
        s.goal_best[mover] = count
        s.progress_ply = s.ply
    winner = _winner_after(t, s, mover)
    if winner >= 0:
        s.result = 1 if winner == 0 else -1
    elif s.ply >= t.max_plies:
        s.result = _adjudicate(t, s)
    elif t.progress_limit and s.ply - s.progress_ply >= t.progress_limit:
        s.result = _adjudicate(t, s)


cdef uint64_t _hash_from_scratch(const Tables* t, const CState* s) noexcept nogil:
    """The Zobrist hash of board and side to move, recomputed from the bitboards."""
    cdef uint64_t h = t.zobrist_turn[s.to_move]
    cdef uint64_t w
    cdef int player, word
    for player in range(t.players):
        for word in range(2):
            w = s.bb[player][word]
            while w:
                h ^= t.zobrist[player][64 * word + cc_ctz64(w)]
                w &= w - 1
    return h


cdef uint64_t perft_c(const Tables* t, const CState* s, int depth) noexcept nogil:
    """Leaves of the legal-move tree; depth 1 is counted without playing the moves."""
    cdef int16_t moves[2 * MAX_MOVES]
    cdef int count, i
    cdef uint64_t total = 0
    cdef CState child
    if depth <= 0 or s.result != RESULT_NONE:
        return 1
    count = generate_moves(t, s, moves)
    if depth == 1:
        return count    # every child is a leaf, terminal or not
    for i in range(count):
        child = s[0]
        apply_move(t, &child, moves[2 * i], moves[2 * i + 1])
        total += perft_c(t, &child, depth - 1)
    return total


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


cdef void _set_mask(uint64_t* words, object cells):
    """Set the bits of ``cells`` in a word pair (cleared first)."""
    cdef int cell
    words[0] = 0
    words[1] = 0
    for cell in cells:
        words[cell >> 6] |= (<uint64_t>1) << (cell & 63)


cdef uint64_t _splitmix64(uint64_t* seed) noexcept nogil:
    """One step of splitmix64: reproducible, well-mixed Zobrist keys from a fixed seed."""
    seed[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = seed[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


#: Seed of the Zobrist keys: hashes are the same in every process and every run.
ZOBRIST_SEED = 0x686F707A65726F   # "hopzero"


cdef _fill_options(Tables* t, rules):
    """Sizes and rule options."""
    t.n = rules.n
    t.cells = rules.cells
    t.k = rules.k
    t.nwords = 1 if t.cells <= 64 else 2
    # Each of the k pieces can reach at most every empty cell.
    t.max_moves = max(1, t.k * (t.cells - 2 * t.k))
    t.hops_mirror = rules.hops == "mirror"
    t.win_all_own = rules.win_rule == "all_own"
    t.max_plies = rules.max_plies
    t.goal_lock = bool(rules.goal_lock)
    t.goal_lock_chain = rules.goal_lock == "chain"
    t.star = rules.is_star
    t.repetition = rules.repetition
    t.equal_turn = rules.equal_turn
    t.players = rules.players
    t.adjudicate = rules.adjudicate == "distance"
    t.distance_margin = rules.distance_margin
    t.progress_limit = rules.progress_limit


cdef _fill_star_geometry(Tables* t, rules):
    """The star's hop tables, neighbours, goals and advance tables from its ``StarGeometry``.

    ``diag`` holds ``-r`` (the rhombus's ``r - c`` counterpart, read by nothing that plays the
    star); ``advance[p]`` is each player's own progress axis, so ``forward_distance`` is the
    gain along it (RULES.md "Geometry and numbering").
    """
    cdef int i, d, p
    geo = rules.geometry
    assert geo.players == t.players <= MAX_PLAYERS and t.cells <= NO_CELL
    for i in range(t.cells):
        t.diag[i] = -geo.coords[i][1]
        for p in range(t.players):
            t.advance[p][i] = geo.advance(p, i)
        for d in range(6):
            over, land = geo.offset(i, d, 1), geo.offset(i, d, 2)
            t.hop_over[i][d] = over if land >= 0 else NO_CELL
            _set_mask(t.hop_land[i][d], [land] if land >= 0 else [])
        _set_mask(t.nbr[i], [c for c in geo.step[i] if c >= 0])
    for p in range(t.players):
        t.start_advance[p] = sum(geo.advance(p, i) for i in geo.home[p])
        _set_mask(t.goal[p], geo.goal(p))
    _set_mask(t.board_mask, range(t.cells))


cdef _fill_geometry(Tables* t, rules):
    """Rays, neighbours, goals, masks and advance tables from ``rules.geometry``."""
    cdef int n = t.n, i, d, j, p
    geo = rules.geometry
    if t.star:
        for i in range(MAX_CELLS):
            for d in range(6):
                for j in range(12):
                    t.ray[i][d][j] = -1
        _fill_star_geometry(t, rules)
        return
    # The mirror-hop code relies on odd directions raising the cell index.
    assert all((DIRECTIONS[d][0] * n + DIRECTIONS[d][1] > 0) == (d % 2 == 1) for d in range(6))
    for i in range(MAX_CELLS):
        for d in range(6):
            for j in range(12):
                t.ray[i][d][j] = -1
    for i in range(t.cells):
        t.diag[i] = geo.diag[i]
        for p in range(2):
            t.advance[p][i] = geo.advance(p, i)
        for d in range(6):
            ray = []
            while geo.offset(i, d, len(ray) + 1) >= 0:
                ray.append(geo.offset(i, d, len(ray) + 1))
            for j in range(len(ray)):
                t.ray[i][d][j] = ray[j]
            _set_mask(t.raymask[i][d], ray)
        _set_mask(t.nbr[i], [c for c in geo.step[i] if c >= 0])
    for p in range(2):
        t.start_advance[p] = sum(geo.advance(p, i) for i in geo.home[p])
        _set_mask(t.goal[p], geo.goal(p))
    _set_mask(t.board_mask, range(t.cells))
    _set_mask(t.not_col0, [i for i in range(t.cells) if i % n > 0])
    _set_mask(t.not_collast, [i for i in range(t.cells) if i % n < n - 1])


cdef _fill_zobrist(Tables* t):
    """Zobrist keys for every (player, cell) and the side to move, from ZOBRIST_SEED.

    Players 0 and 1 and the two-player side key come first, as before there were more players,
    so two-player hashes did not change; the keys of players 2-5 follow.
    """
    cdef uint64_t seed = ZOBRIST_SEED
    cdef int p, i
    for p in range(2):
        for i in range(MAX_CELLS):
            t.zobrist[p][i] = _splitmix64(&seed)
    t.zobrist_side = _splitmix64(&seed)
    t.zobrist_turn[0] = 0
    t.zobrist_turn[1] = t.zobrist_side
    for p in range(2, MAX_PLAYERS):
        for i in range(MAX_CELLS):
            t.zobrist[p][i] = _splitmix64(&seed)
        t.zobrist_turn[p] = _splitmix64(&seed)


cdef class RulesTables:
    """The precomputed tables of one ``Rules`` object, shared by every ``State`` of that game.

    Build it once per rules (``tables_for`` caches them) and pass it wherever a ``Rules`` is
    accepted, to skip the look-up.
    """

    def __init__(self, rules):
        if not isinstance(rules, Rules):
            raise TypeError(f"RulesTables needs a ccengine.rules.Rules, got {type(rules).__name__}")
        self.rules = rules
        memset(&self.t, 0, sizeof(Tables))
        _fill_options(&self.t, rules)
        _fill_geometry(&self.t, rules)
        _fill_zobrist(&self.t)

    @property
    def n(self) -> int:
        """Board side."""
        return self.t.n

    @property
    def cells(self) -> int:
        """Number of cells, n * n."""
        return self.t.cells

    @property
    def k(self) -> int:
        """Pieces per player."""
        return self.t.k

    @property
    def nwords(self) -> int:
        """64-bit words per bitboard: 1 (n <= 8) or 2."""
        return self.t.nwords

    @property
    def max_moves(self) -> int:
        """Upper bound on the legal moves of any position: ``max(1, k * (cells - 2k))``."""
        return self.t.max_moves

    @property
    def players(self) -> int:
        """Number of players: 2 on the rhombus; 2, 3, 4 or 6 on the star."""
        return self.t.players

    @property
    def zobrist_side(self) -> int:
        """The key XORed into the hash when player 1 is to move (``zobrist_turn(1)``)."""
        return self.t.zobrist_side

    def zobrist_turn(self, int player) -> int:
        """The key XORed into the hash while ``player`` is to move (0 for player 0)."""
        if not 0 <= player < self.t.players:
            raise ValueError(f"zobrist_turn({player}): player must be in 0..{self.t.players - 1}")
        return self.t.zobrist_turn[player]

    def zobrist(self, int player, int cell) -> int:
        """The Zobrist key of a piece of ``player`` on ``cell``."""
        if not (0 <= player < self.t.players and 0 <= cell < self.t.cells):
            raise ValueError(
                f"zobrist({player}, {cell}): player must be in 0..{self.t.players - 1} "
                f"and cell in 0..{self.t.cells - 1}"
            )
        return self.t.zobrist[player][cell]

    def __repr__(self) -> str:
        return f"RulesTables({self.rules!r})"

    def __reduce__(self):
        return (tables_for, (self.rules,))


# Tables by id(rules) (the fast path, guarded by a weak reference) and by equality.
cdef dict _tables_by_id = {}
cdef dict _tables_by_rules = {}


def _forget_rules(key):
    """Weak-reference callback: drop the id entry of a Rules object that was freed."""
    return lambda ref: _tables_by_id.pop(key, None)


def tables_for(rules) -> RulesTables:
    """The shared ``RulesTables`` of ``rules`` (a ``Rules``, or a ``RulesTables`` returned as is)."""
    if isinstance(rules, RulesTables):
        return rules
    entry = _tables_by_id.get(id(rules))
    if entry is not None and entry[0]() is rules:
        return entry[1]
    if not isinstance(rules, Rules):
        raise TypeError(f"expected a ccengine.rules.Rules or RulesTables, got {type(rules).__name__}")
    tables = _tables_by_rules.get(rules)
    if tables is None or tables.rules.name != rules.name:
        tables = RulesTables(rules)
        _tables_by_rules[rules] = tables
    _tables_by_id[id(rules)] = (weakref.ref(rules, _forget_rules(id(rules))), tables)
    return tables


# ---------------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------------


cdef inline void _init_end_state(const Tables* t, CState* s) noexcept nogil:
    """Progress tracking, result and hash of a freshly set position (as reference.py does)."""
    cdef int winner
    s.goal_best[0] = _goal_count(t, s, 0)
    s.goal_best[1] = _goal_count(t, s, 1)
    s.progress_ply = s.ply
    s.result = RESULT_NONE
    s.winners = 0
    s.hash = _hash_from_scratch(t, s)
    # A given position is judged as if the player not to move had just moved.
    if t.players != 2:
        _judge_multi(t, s)             # seen once: no repetition yet
        return
    if t.star:
        s.result = _star_end(t, s)     # seen once: no repetition yet
        return
    winner = _winner_after(t, s, 1 - s.to_move)
    if winner >= 0:
        s.result = 1 if winner == 0 else -1
    elif s.ply >= t.max_plies:
        s.result = _adjudicate(t, s)


cdef str _board_error(const Tables* t, const CState* s, object to_move, object ply):
    """Why a freshly read position is invalid, or None."""
    cdef int p
    for p in range(t.players):
        if _popcount2(s.bb[p]) != t.k:
            return (f"board holds {_popcount2(s.bb[p])} pieces of player {p}, "
                    f"the rules need exactly {t.k}")
    if not 0 <= to_move < t.players:
        return f"to_move={to_move!r} must be a player, 0..{t.players - 1}"
    if ply < 0:
        return f"ply={ply!r} must not be negative"
    return None


cdef str _owners(const Tables* t):
    """The valid cell values, for error messages: ``-1 (empty), 0, 1`` and so on."""
    return "-1 (empty), " + ", ".join(str(p) for p in range(t.players))


cdef int _read_board(const Tables* t, CState* s, object board) except -1:
    """Set s.bb from a sequence or array of -1 (empty) or a player (0 .. players - 1) per cell."""
    cdef int i, v
    cdef const int8_t[::1] view
    memset(s.bb, 0, sizeof(s.bb))
    if len(board) != t.cells:
        raise ValueError(f"board has {len(board)} cells, the rules need {t.cells}")
    if isinstance(board, np.ndarray) and board.dtype == np.int8 and board.ndim == 1:
        view = np.ascontiguousarray(board)
        for i in range(t.cells):
            v = view[i]
            if v < -1 or v >= t.players:
                raise ValueError(f"board cell {i} holds {v}; valid: {_owners(t)}")
            if v >= 0:
                s.bb[v][i >> 6] |= (<uint64_t>1) << (i & 63)
        return 0
    for i, value in enumerate(board):
        if value == -1:
            continue
        if value in range(t.players):
            v = value
            s.bb[v][i >> 6] |= (<uint64_t>1) << (i & 63)
        else:
            raise ValueError(f"board cell {i} holds {value!r}; valid: {_owners(t)}")
    return 0


cdef list _move_tuples(RulesTables tables):
    """The (s, e) tuple of every move, by index s * cells + e, built on first use: the list
    API then shares these tuples instead of allocating two ints and a tuple per move."""
    cdef int cells = tables.t.cells
    if tables.move_tuples is None:
        tables.move_tuples = [(i // cells, i % cells) for i in range(cells * cells)]
    return tables.move_tuples


cdef State wrap_state(RulesTables tables, const CState* s):
    """A new State of ``tables`` holding a copy of ``s`` (empty history)."""
    cdef State state = State.__new__(State)
    state.tables = tables
    state.s = s[0]
    return state


def _restore_state(rules, bytes packed, list history):
    """Unpickle a State (see State.__reduce__)."""
    cdef State state = State.__new__(State)
    state.tables = tables_for(rules)
    if PyBytes_GET_SIZE(packed) != sizeof(CState):
        raise ValueError("pickled State does not match this build of ccengine._core")
    memcpy(&state.s, PyBytes_AS_STRING(packed), sizeof(CState))
    state._history = history
    return state


cdef inline bytes _pack(const CState* s):
    return PyBytes_FromStringAndSize(<const char*>s, sizeof(CState))


cdef int _occurrences(State state):
    """How often the current position (board and side to move) occurred in this state's game,
    this time included: its hash against the snapshots of the undo history."""
    cdef int count = 1
    cdef uint64_t h = state.s.hash
    for packed in state._history:
        if (<const CState*>PyBytes_AS_STRING(packed)).hash == h:
            count += 1
    return count


cdef inline void _play(State state, int start, int end):
    """Play a legal move: the undo snapshot, the move, and on the star the repetition check."""
    cdef const Tables* t = &state.tables.t
    state._history.append(_pack(&state.s))
    apply_move(t, &state.s, start, end)
    if t.repetition:   # also on a move-limit ending: the repetition comes first (RULES.md)
        star_repetition_draw(t, &state.s, _occurrences(state))


cdef str _end_reason(State state):
    """Why a finished game ended, in the words of ``ReferenceState.end_reason``; None if it goes on.

    Recomputed from the position by the same checks in the same order as when the game ended,
    so CState needs no field for it.
    """
    cdef const Tables* t = &state.tables.t
    cdef const CState* s = &state.s
    cdef int p
    if s.result == RESULT_NONE:
        return None
    if t.players != 2:
        if s.winners and _filled_mask(t, s):   # else the winners of a distance adjudication
            for p in range(t.players):
                if (s.winners >> p) & 1 and not _all_home(t, s, p):
                    return "anti_block"
            return "all_home"
        if t.repetition and _occurrences(state) >= t.repetition:
            return "repetition"
        return "max_plies" if s.ply >= t.max_plies else "no_move"
    if not t.star:
        if _winner_after(t, s, 1 - s.to_move) >= 0:
            return "goal"
        return "max_plies" if s.ply >= t.max_plies else "progress_limit"
    if _all_home(t, s, 0) and _all_home(t, s, 1):
        return "both_home"
    if _all_home(t, s, 0):
        return "equal_turn" if s.result == 0 else "all_home"
    if _all_home(t, s, 1):
        return "all_home"
    if not t.win_all_own and (_goal_blocked(t, s, 0) or _goal_blocked(t, s, 1)):
        return "anti_block"
    if t.repetition and _occurrences(state) >= t.repetition:
        return "repetition"
    return "max_plies" if s.ply >= t.max_plies else "no_move"


cdef inline int _check_move_buffer(Py_ssize_t rows, int max_moves, str name) except -1:
    if rows < max_moves:
        raise ValueError(f"{name} holds {rows} moves, the rules need room for max_moves={max_moves}")
    return 0


cdef class State:
    """A game in progress, with the interface of ``ccengine.reference.ReferenceState``.

    ``State(rules, board=None, to_move=0, ply=0)``: ``rules`` is a ``Rules`` or a
    ``RulesTables``; ``board`` a sequence (or int8 numpy array) of -1 (empty) or the player
    (0 .. players - 1) per cell with exactly k pieces per player, the start position when None. A given position is judged as if the
    player not to move had just moved.
    """

    def __cinit__(self):
        self._history = []

    def __init__(self, rules, board=None, int to_move=0, int ply=0):
        self.tables = tables_for(rules)
        cdef const Tables* t = &self.tables.t
        if board is None:
            board = self.tables.rules.geometry.start_board()
        _read_board(t, &self.s, board)
        error = _board_error(t, &self.s, to_move, ply)
        if error is not None:
            raise ValueError(error)
        self.s.to_move = to_move
        self.s.ply = ply
        _init_end_state(t, &self.s)

    # -- position ----------------------------------------------------------------------------

    @property
    def rules(self):
        """The ``Rules`` of this game."""
        return self.tables.rules

    @property
    def board(self) -> tuple:
        """Who occupies each cell: a tuple of -1 (empty) or the player."""
        cdef int i
        return tuple([cell_owner(&self.s, i) for i in range(self.tables.t.cells)])

    def board_array(self, int8_t[::1] out) -> None:
        """Write the board into ``out`` (int8, shape (cells,)): -1 empty, else the player, per cell."""
        if out.shape[0] != self.tables.t.cells:
            raise ValueError(f"out has shape ({out.shape[0]},), needs ({self.tables.t.cells},)")
        _write_board(&self.tables.t, &self.s, &out[0])

    @property
    def players(self) -> int:
        """The number of players."""
        return self.tables.t.players

    @property
    def to_move(self) -> int:
        """The player to move, 0 .. players - 1."""
        return self.s.to_move

    @property
    def ply(self) -> int:
        """Plies played (passes included)."""
        return self.s.ply

    @property
    def hash(self) -> int:
        """Zobrist hash (64 bits) of the board and the side to move."""
        return self.s.hash

    @property
    def goal_best(self) -> tuple:
        """The most pieces each player has had in its goal so far (progress tracking)."""
        return (self.s.goal_best[0], self.s.goal_best[1])

    @property
    def progress_ply(self) -> int:
        """The ply at which either player last raised its ``goal_best``."""
        return self.s.progress_ply

    @property
    def max_moves(self) -> int:
        """Upper bound on the number of legal moves (rows a move buffer needs)."""
        return self.tables.t.max_moves

    # -- moves -------------------------------------------------------------------------------

    def legal_moves(self) -> list:
        """Legal moves sorted by ``(s, e)``; ``[PASS]`` when none; ``[]`` once the game is over."""
        cdef int16_t moves[2 * MAX_MOVES]
        cdef int count = generate_moves(&self.tables.t, &self.s, moves), i
        cdef int cells = self.tables.t.cells
        cdef list tuples = _move_tuples(self.tables)
        cdef list out = PyList_New(count)
        cdef object move
        for i in range(count):
            move = PASS if moves[2 * i] < 0 else tuples[moves[2 * i] * cells + moves[2 * i + 1]]
            Py_INCREF(move)   # PyList_SET_ITEM steals a reference
            PyList_SET_ITEM(out, i, move)
        return out

    def legal_moves_array(self, int16_t[:, ::1] out) -> int:
        """Write the legal moves into ``out`` (int16, shape (>= max_moves, 2)); return their count."""
        _check_move_buffer(out.shape[0], self.tables.t.max_moves, "out")
        if out.shape[1] != 2:
            raise ValueError(f"out must have shape (max_moves, 2), got second dimension {out.shape[1]}")
        return generate_moves(&self.tables.t, &self.s, &out[0, 0])

    def play(self, move) -> None:
        """Play a legal move (or ``PASS`` when it is the only one); raises ``IllegalMoveError``."""
        cdef int start, end
        start, end = _move_cells(move)
        if not is_legal_move(&self.tables.t, &self.s, start, end):
            raise IllegalMoveError(_illegal_reason(self, start, end))
        _play(self, start, end)

    def undo(self) -> None:
        """Take back the last move played on this state (``IllegalMoveError`` when none)."""
        if not self._history:
            raise IllegalMoveError("no move to undo")
        packed = self._history.pop()
        memcpy(&self.s, PyBytes_AS_STRING(packed), sizeof(CState))

    def is_terminal(self) -> bool:
        """Whether the game is over."""
        return self.s.result != RESULT_NONE

    @property
    def end_reason(self):
        """Why the game ended (``ReferenceState.end_reason``'s words), None while it goes on."""
        return _end_reason(self)

    @property
    def occurrences(self) -> int:
        """How often the current position (board, side to move) occurred in this game, this time
        included, as far as this state's history reaches (a position given as text starts at 1)."""
        return _occurrences(self)

    def result(self):
        """``+1 / 0 / -1`` from player 0's side once the game is over, else None (two players only;
        :meth:`scores` is the result of any number of players)."""
        if self.tables.t.players != 2:
            raise ValueError(
                f"result() is the two-player +1/0/-1; a game of {self.tables.t.players} players "
                "has scores() (one entry per player)"
            )
        return None if self.s.result == RESULT_NONE else self.s.result

    def scores(self):
        """The result as a vector, one entry per player summing to 1 (the winners share 1, a draw
        splits it equally), once the game is over; None while it goes on. The same floats as
        ``ReferenceState.scores``."""
        if self.s.result == RESULT_NONE:
            return None
        if self.tables.t.players == 2:
            return result_scores(self.s.result)
        return shared_scores([p for p in range(self.tables.t.players) if (self.s.winners >> p) & 1],
                             self.tables.t.players)

    def copy(self) -> State:
        """An independent copy (history included)."""
        cdef State other = wrap_state(self.tables, &self.s)
        other._history = list(self._history)
        return other

    # -- perft -------------------------------------------------------------------------------

    def perft(self, int depth) -> int:
        """Leaves of the legal-move tree of ``depth`` plies; a terminal position is a leaf."""
        if depth < 0:
            raise ValueError(f"perft depth {depth} must not be negative")
        cdef uint64_t total
        with nogil:
            total = perft_c(&self.tables.t, &self.s, depth)
        return total

    def divide(self, int depth) -> list:
        """``[((s, e), perft of the child at depth - 1), ...]`` for every legal move."""
        cdef int16_t moves[2 * MAX_MOVES]
        cdef CState child
        cdef int count, i
        cdef uint64_t total
        if depth < 1:
            raise ValueError(f"divide depth {depth} must be at least 1")
        count = generate_moves(&self.tables.t, &self.s, moves)
        out = []
        for i in range(count):
            child = self.s
            apply_move(&self.tables.t, &child, moves[2 * i], moves[2 * i + 1])
            with nogil:
                total = perft_c(&self.tables.t, &child, depth - 1)
            out.append(((moves[2 * i], moves[2 * i + 1]), total))
        return out

    # -- Python protocol ---------------------------------------------------------------------

    def __reduce__(self):
        return (_restore_state, (self.tables.rules, _pack(&self.s), list(self._history)))

    def __copy__(self) -> State:
        return self.copy()

    def __repr__(self) -> str:
        from .notation import Position, format_position
        text = format_position(self.tables.rules, Position(self.board, self.s.to_move, self.s.ply))
        return f"State({self.tables.rules.name!r}, {text!r})"


cdef str _illegal_reason(State state, int start, int end):
    """A message that says why (start, end) is not legal in ``state``."""
    cdef const Tables* t = &state.tables.t
    cdef int player = state.s.to_move
    head = f"move {[start, end]} is not legal for player {player} at ply {state.s.ply}: "
    if state.s.result != RESULT_NONE:
        return head + "the game is over"
    if start == -1 and end == -1:
        if t.star:
            return head + "the star has no pass"
        return head + "a pass is legal only when there is no other move"
    if not (0 <= start < t.cells and 0 <= end < t.cells):
        return head + f"cells must be in 0..{t.cells - 1} (or [-1, -1] for the pass)"
    owner = cell_owner(&state.s, start)
    if owner != player:
        what = "empty" if owner < 0 else f"a piece of player {owner}"
        return head + f"cell {start} holds {what}, not a piece of player {player}"
    return head + f"cell {end} is not reachable from {start} by a step or hops"


cdef inline tuple _move_cells(object move):
    """(s, e) of a move given as a pair of integers; IllegalMoveError for anything else."""
    try:
        start, end = move
        return int(start), int(end)
    except (TypeError, ValueError):
        raise IllegalMoveError(f"move {move!r} must be a pair of cell indices (s, e)") from None


cdef void _write_board(const Tables* t, const CState* s, int8_t* out) noexcept nogil:
    """Each cell's owner into out[0 .. cells): every cell empty, then each player's pieces."""
    cdef int p, word
    cdef uint64_t w
    memset(out, -1, t.cells)
    for p in range(t.players):
        for word in range(t.nwords):
            w = s.bb[p][word]
            while w:
                out[64 * word + cc_ctz64(w)] = <int8_t>p
                w &= w - 1


# ---------------------------------------------------------------------------------------------
# Batches: one Python call for many states
# ---------------------------------------------------------------------------------------------


cdef inline list _as_list(object states):
    return states if type(states) is list else list(states)


cdef inline int _check_batch(list states, Py_ssize_t rows, str name) except -1:
    if rows != len(states):
        raise ValueError(f"{name} has {rows} rows for {len(states)} states")
    return 0


def batch_legal_moves(states, int16_t[:, :, ::1] moves_out, int32_t[::1] counts_out) -> None:
    """Legal moves of many states at once.

    ``states``: a list of G ``State``. ``moves_out``: int16, C-contiguous, shape
    (G, M, 2) with M >= every state's ``max_moves``; row g gets state g's moves sorted by
    (s, e) in ``moves_out[g, :counts_out[g]]`` (the pass is (-1, -1)). ``counts_out``: int32,
    shape (G,); 0 for a finished game.
    """
    cdef list batch = _as_list(states)
    cdef Py_ssize_t g, size = len(batch)
    cdef State state
    _check_batch(batch, moves_out.shape[0], "moves_out")
    _check_batch(batch, counts_out.shape[0], "counts_out")
    if moves_out.shape[2] != 2:
        raise ValueError(f"moves_out must have shape (G, M, 2), got last dimension {moves_out.shape[2]}")
    for g in range(size):
        state = <State?>batch[g]
        _check_move_buffer(moves_out.shape[1], state.tables.t.max_moves, "moves_out")
        counts_out[g] = generate_moves(&state.tables.t, &state.s, &moves_out[g, 0, 0])


def batch_play(states, const int16_t[:, ::1] moves) -> None:
    """Play one move in each of many states: ``moves`` int16, shape (G, 2), row g for state g.

    Every move is checked first; if one is illegal, ``IllegalMoveError`` names it and no state
    changes. Each played move can be taken back with ``State.undo``.
    """
    cdef list batch = _as_list(states)
    cdef Py_ssize_t g, size = len(batch)
    cdef State state
    _check_batch(batch, moves.shape[0], "moves")
    if moves.shape[1] != 2:
        raise ValueError(f"moves must have shape (G, 2), got second dimension {moves.shape[1]}")
    for g in range(size):
        state = <State?>batch[g]
        if not is_legal_move(&state.tables.t, &state.s, moves[g, 0], moves[g, 1]):
            raise IllegalMoveError(f"batch_play row {g}: " + _illegal_reason(state, moves[g, 0], moves[g, 1]))
    for g in range(size):
        _play(<State>batch[g], moves[g, 0], moves[g, 1])


def batch_results(states, int8_t[::1] out) -> None:
    """Write each state's result into ``out`` (int8, shape (G,)): +1/0/-1, or RESULT_NONE (2).

    Two-player games only (a ``ValueError`` otherwise): ``batch_scores`` serves any number.
    """
    cdef list batch = _as_list(states)
    cdef Py_ssize_t g
    cdef State state
    _check_batch(batch, out.shape[0], "out")
    for g in range(len(batch)):
        state = <State?>batch[g]
        if state.tables.t.players != 2:
            raise ValueError(f"batch_results row {g}: a game of {state.tables.t.players} players has "
                             "no +1/0/-1 result; use batch_scores")
        out[g] = <int8_t>state.s.result


def batch_scores(states, float[:, ::1] out) -> None:
    """Write each state's score vector into ``out`` (float32, shape (G, P), P the number of
    players, every state of the same P): row g sums to 1 once game g is over (the winners share
    1, a draw splits it equally) and is all NaN while it goes on."""
    cdef list batch = _as_list(states)
    cdef Py_ssize_t g
    cdef int p
    cdef State state
    _check_batch(batch, out.shape[0], "out")
    for g in range(len(batch)):
        state = <State?>batch[g]
        if out.shape[1] != state.tables.t.players:
            raise ValueError(f"out has {out.shape[1]} columns, row {g}'s game has {state.tables.t.players} players")
        if state.s.result == RESULT_NONE:
            for p in range(state.tables.t.players):
                out[g, p] = NAN
        else:
            score_vector(&state.tables.t, &state.s, &out[g, 0])


def batch_boards(states, int8_t[:, ::1] out) -> None:
    """Write each state's board into ``out`` (int8, shape (G, cells)): -1 empty, else the player."""
    cdef list batch = _as_list(states)
    cdef Py_ssize_t g
    cdef State state
    _check_batch(batch, out.shape[0], "out")
    for g in range(len(batch)):
        state = <State?>batch[g]
        if out.shape[1] != state.tables.t.cells:
            raise ValueError(f"out has {out.shape[1]} columns, the board has {state.tables.t.cells} cells")
        _write_board(&state.tables.t, &state.s, &out[g, 0])


def batch_new_states(rules, const int8_t[:, ::1] boards, to_move=None, ply=None) -> list:
    """States from many positions: ``boards`` int8, shape (G, cells), -1 (empty) or the player per cell;
    ``to_move`` and ``ply``: integer arrays of shape (G,) (default all 0).
    """
    cdef RulesTables tables = tables_for(rules)
    cdef const Tables* t = &tables.t
    cdef Py_ssize_t g, size = boards.shape[0]
    cdef int i, v
    cdef State state
    if boards.shape[1] != t.cells:
        raise ValueError(f"boards has {boards.shape[1]} columns, the board has {t.cells} cells")
    sides = np.zeros(size, np.int64) if to_move is None else np.asarray(to_move, np.int64)
    plies = np.zeros(size, np.int64) if ply is None else np.asarray(ply, np.int64)
    if sides.shape != (size,) or plies.shape != (size,):
        raise ValueError(f"to_move and ply must have shape ({size},)")
    cdef const long long[::1] side_view = sides
    cdef const long long[::1] ply_view = plies
    out = []
    for g in range(size):
        state = State.__new__(State)
        state.tables = tables
        memset(state.s.bb, 0, sizeof(state.s.bb))
        for i in range(t.cells):
            v = boards[g, i]
            if v < -1 or v >= t.players:
                raise ValueError(f"boards[{g}, {i}] = {v}; valid: {_owners(t)}")
            if v >= 0:
                state.s.bb[v][i >> 6] |= (<uint64_t>1) << (i & 63)
        error = _board_error(t, &state.s, side_view[g], ply_view[g])
        if error is not None:
            raise ValueError(f"boards[{g}]: {error}")
        state.s.to_move = <int32_t>side_view[g]
        state.s.ply = <int32_t>ply_view[g]
        _init_end_state(t, &state.s)
        out.append(state)
    return out

