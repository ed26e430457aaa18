# C-level interface of the Cython engine, for other Cython modules (the tree search).
#
# Bitboards: cell i (= r * n + c on the rhombus, the star's numbering on the star) is bit
# (i % 64) of word (i // 64); one pair of words per player (two on the rhombus, up to six on the
# star; the bitboards of absent players stay empty). Boards up to 8 x 8 use word 0 only (the 64-bit path); 9 x 9 to
# 11 x 11 and the 121-hole star use both words (the 128-bit path; the star by table look-up).
# Everything here is nogil and allocation-free: a state is a small POD struct, so "undo" is a
# struct copy and a search tree can keep states by value.

from libc.stdint cimport int16_t, int32_t, uint64_t

cdef enum:
    MAX_CELLS = 128
    MAX_PIECES = 15
    MAX_PLAYERS = 6       # the star seats 2, 3, 4 or 6 players
    RESULT_NONE = 2       # CState.result while the game goes on
    NO_CELL = 127         # a bit no board uses (cells <= 121): an impossible hop never matches
    MAX_MOVES = 1365      # largest Tables.max_moves of any valid Rules (n = 11, k = 15)

cdef struct Tables:
    # Geometry and rule options of one Rules object, built once by RulesTables.
    int n
    int cells
    int k
    int nwords            # 1 for n <= 8, else 2
    int max_moves         # exact upper bound on legal moves: k * (cells - 2k), at least 1 (pass)
    int hops_mirror       # 0 adjacent, 1 mirror
    int win_all_own       # 0 filled, 1 all_own
    int max_plies
    int goal_lock
    int adjudicate        # 0 none, 1 distance
    int distance_margin
    int progress_limit    # 0 = off
    # The star's options (zero on the rhombus), beside the others: read on every call.
    int star              # 1 on the 121-hole star: hops by table, the star's end of the game
    int goal_lock_chain   # goal_lock="chain": every landing of a piece in its goal stays in it
    int repetition        # draw at this many occurrences of a position (0 = off)
    int equal_turn        # two-player equal turns (RULES.md star2 check 2)
    int players           # 2 on the rhombus; 2, 3, 4 or 6 on the star
    int diag[MAX_CELLS]                # r - c of each cell
    int advance[MAX_PLAYERS][MAX_CELLS]  # rows a piece of player p on cell i is ahead of its home tip
    int start_advance[MAX_PLAYERS]     # total advance of each player's pieces in the start position
    uint64_t goal[MAX_PLAYERS][2]      # goal[p][word]: the cells player p must fill
    uint64_t board_mask[2]             # all cells of the board
    uint64_t not_col0[2]               # cells with c > 0 (sources allowed to shift to c - 1)
    uint64_t not_collast[2]            # cells with c < n - 1
    int ray[MAX_CELLS][6][12]          # ray[i][d][j]: the cell j + 1 steps from i along d, -1 off board
    uint64_t zobrist[MAX_PLAYERS][MAX_CELLS]
    uint64_t zobrist_side              # two players: XORed in while player 1 is to move
    uint64_t zobrist_turn[MAX_PLAYERS] # XORed in while player p is to move (0 for p = 0, zobrist_side for 1)
    # Added with the implementation (mirror hops and steps by table look-up). Directions d
    # follow rules.DIRECTIONS: odd d raise the cell index, even d lower it.
    uint64_t raymask[MAX_CELLS][6][2]  # the cells of ray[i][d] as a bitboard
    uint64_t nbr[MAX_CELLS][2]         # the neighbours of cell i as a bitboard
    # Star tables (board="star"), after the rhombus's so that its hot fields keep their lines.
    int hop_over[MAX_CELLS][6]         # star: the cell hopped over from i along d; NO_CELL if no hop
    uint64_t hop_land[MAX_CELLS][6][2] # star: the landing two cells along d as a bitboard, 0 if none

cdef struct CState:
    uint64_t bb[MAX_PLAYERS][2]  # bb[player][word]: occupancy
    int32_t to_move       # 0 .. players - 1
    int32_t ply
    int32_t progress_ply  # ply at which either side last raised its goal_best
    int32_t goal_best[2]  # most pieces player p has had in its goal so far
    int32_t result        # RESULT_NONE, else two players: +1 / 0 / -1 from player 0's side; more: 0
    int32_t winners       # three or more players, once over: bitmask of the winners (0: a draw)
    uint64_t hash         # Zobrist hash of board and side to move (not ply or progress)

# Legal moves of the side to move, written as (s, e) pairs into out[0 .. 2 * count); returns
# count. With no move, writes the pass (-1, -1) and returns 1. A terminal state returns 0.
# out must hold 2 * t.max_moves int16. Moves come sorted by (s, e).
cdef int generate_moves(const Tables* t, const CState* s, int16_t* out) noexcept nogil

# Destinations of the piece on `cell` as a bitboard pair (no legality check of the owner).
cdef void piece_destinations(const Tables* t, const CState* s, int cell, uint64_t* dest) noexcept nogil

# Whether (from_, to) is legal for the side to move (the pass only when nothing else is).
cdef bint is_legal_move(const Tables* t, const CState* s, int from_, int to) noexcept nogil

# Plays (from_, to) for the side to move (pass = (-1, -1)) and updates ply, progress, result
# and hash. Does not check legality: callers pass moves produced by generate_moves.
# On the star it runs RULES.md's end-of-game checks except repetition, which needs the game's
# history: State.play and batch_play add it (star_repetition_draw); a search path has none.
cdef void apply_move(const Tables* t, CState* s, int from_, int to) noexcept nogil

# Star: the draw by repetition after apply_move, given how often the new position occurred
# (this time included). Sets the result to a draw when the count reaches Tables.repetition and the
# game was going on or had just been adjudicated by distance at the move limit (three or more
# players: a draw, or the win of the players whose goal is filled in this round); does nothing
# otherwise.
cdef void star_repetition_draw(const Tables* t, CState* s, int occurrences) noexcept nogil

# The result of a finished game as a score vector, one entry per player into out[0 .. players):
# the winners share 1, a draw splits it equally (RULES.md; two players: (1, 0), (0, 1) or
# (0.5, 0.5)). Only for a state whose result is not RESULT_NONE.
cdef void score_vector(const Tables* t, const CState* s, float* out) noexcept nogil

# Leaves of the legal-move tree of `depth` plies (terminal positions are leaves).
cdef uint64_t perft_c(const Tables* t, const CState* s, int depth) noexcept nogil

# Owner of a cell: -1 empty, else the player (0 .. players - 1).
cdef int cell_owner(const CState* s, int cell) noexcept nogil

# Forward distance psi of a move for `player` (seed section 3.2; on the star along the player's
# own progress axis): the gain in advance.
cdef inline int forward_distance(const Tables* t, int player, int from_, int to) noexcept nogil:
    return t.advance[player][to] - t.advance[player][from_]

cdef class RulesTables:
    # The Tables of one Rules object, shared by every State of that game.
    cdef Tables t
    cdef readonly object rules
    cdef list move_tuples   # (s, e) tuples by s * cells + e, shared by State.legal_moves()

cdef class State:
    cdef CState s
    cdef readonly RulesTables tables
    cdef list _history   # CState snapshots for undo(), packed as bytes

# A new State of `tables` holding a copy of `s` (empty history): how a search hands a node
# back to Python.
cdef State wrap_state(RulesTables tables, const CState* s)
