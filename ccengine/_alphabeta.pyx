# cython: language_level=3
"""Alpha-beta search in C, the classical baseline (private; use :mod:`ccengine.alphabeta`).

Negamax with alpha-beta and principal variation search (a null window for every move after the
first, re-searched when it lands inside the window), iterative deepening from depth 1 to D, and
a transposition table. Everything below :meth:`AlphaBetaSearch.search` runs in C without the GIL:
no Python object per node.

Scores are from the side to move's point of view, in integer units:

- a finished game scores exactly: a win ``MATE - d``, a loss ``-(MATE - d)``, a draw 0, where
  ``d`` is the number of plies from the root (faster wins and slower losses score higher);
- a position at the horizon scores by the evaluation (``_evaluate``), whose magnitude stays far
  below ``MATE - MAX_DEPTH``.

Transposition table: ``2^tt_bits`` entries, one per slot (always replaced). Its key is the
state's Zobrist ``hash`` (board and side to move) mixed with what the hash leaves out and the end
of the game reads: the ply, the progress ply and the goal high-water marks. With the ply in the
key, a position within one search is always at the same distance from the root, so a stored mate
score needs no ply adjustment and a stored value is the same depth's value (the search returns
the exact depth-D minimax value). Entries carry the search's generation: a new search ignores
every older one without clearing the table.

Three or more players (``star3``, ``star4``, ``star6``): *paranoid* search (Sturtevant and Korf,
"On pruning techniques for multi-player games", 2000): the player to move at the root (the
searcher) maximises, every other player is assumed to play against it and minimises the same
score, so the game is a two-sided minimax and alpha-beta prunes as for two players (plain
alpha-beta here, with the table; no null windows). Scores are from the searcher's point of view:
a finished game is ``MATE - d`` when the searcher won alone, ``MATE / 2 - d`` when it shares the
win, 0 for a draw and ``-(MATE - d)`` when another player won without it; at the horizon the
evaluation is the searcher's term minus the *largest* of the other players' terms (the
``distance`` or ``advance`` term of two players): a race is lost to the one opponent who finishes
first, so the searcher measures itself against the leader, which for two players is the
two-player evaluation. The ``linear`` evaluation is two-player only. The two-player search
(negamax, PVS) is unchanged.

Three or more players with ``opponents="still"`` (``_still``): a race plan instead of a game
tree. The searcher plays ``depth`` moves in a row while the others stand still, and the plan
ends scored as paranoid's horizon is, its term minus the leading opponent's (``MATE - d`` once
all its pieces are home): the others' terms do not change along a plan, so its own term decides
the move and the score stays on paranoid's scale. With five
opponents between two of its moves, a paranoid tree of depth 3 sees one move of the searcher and
two of its opponents; this sees the searcher's own follow-up moves, the hop ladders a move sets
up, which is what wins a race among players who mostly keep to their own paths.

Repetition (star2: ``repetition=3``, RULES.md "Repetition in the search"): a position reached in
the search counts its earlier occurrences in the game (the root's history, kept in a small hash
set) and on the current search path, exactly as the game would count them; at the
``repetition``-th occurrence it is a draw (``star_repetition_draw``), scored 0 before the table
is read. The table itself does not know the path (a value stored under one path may be reused
under another: the usual "graph history interaction" of a repetition rule, accepted).
"""

import math

from ccengine.rules import RulesError

cimport cython
from libc.stdint cimport int16_t, int32_t, uint8_t, uint16_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from ccengine._core cimport (
    MAX_CELLS,
    MAX_MOVES,
    MAX_PLAYERS,
    NO_CELL,
    RESULT_NONE,
    CState,
    RulesTables,
    State,
    Tables,
    apply_move,
    forward_distance,
    generate_moves,
    star_repetition_draw,
)

__all__ = ["EVALUATIONS", "FEATURES", "LINEAR_SCALE", "MATE", "MAX_DEPTH", "AlphaBetaSearch", "game_hashes"]

cdef enum:
    _MAX_DEPTH = 12
    _PATH = 64              # path slots: depth plus room, never reached
    _MATE = 1000000
    _INF = 2000000
    # transposition-table bound types
    TT_EXACT = 0
    TT_LOWER = 1            # the value is at least the stored score (a beta cut-off)
    TT_UPPER = 2            # at most (no move raised alpha)
    # evaluations
    EVAL_DISTANCE = 0
    EVAL_ADVANCE = 1
    EVAL_LINEAR = 2
    N_FEATURES = 7
    _LINEAR_SCALE = 1000
    # evaluation weights (EVAL_DISTANCE), documented in docs/ARCHITECTURE.md
    W_ADVANCE = 16
    W_GOAL = 8

#: Score of a win at the root's next ply is ``MATE - 1``; every evaluation is far below ``MATE - MAX_DEPTH``.
MATE = _MATE
#: Deepest search accepted.
MAX_DEPTH = _MAX_DEPTH
#: Evaluation names accepted by :class:`AlphaBetaSearch` (``linear``: weights over :data:`FEATURES`).
EVALUATIONS = ("distance", "advance", "linear")
#: What a search of three or more players assumes of the others: they all play against the
#: searcher (``paranoid``), or they stand still while it plans its own moves (``still``).
OPPONENTS = ("paranoid", "still")
#: The board features of one player that the ``linear`` evaluation weighs (its ``features``):
#: total advance (rows), pieces in the goal, pieces still at home, the rearmost piece's steps to
#: the goal, the sum of squared steps to the goal, hops that would advance a piece (one jump; a
#: chain's first hop), and pieces with no move forward (blocked: no advancing step or hop).
FEATURES = ("advance", "in_goal", "at_home", "rear_steps", "sum_sq_steps", "forward_hops", "blocked")
#: Units of the ``linear`` evaluation per unit of ``weights . features`` (integer scores).
LINEAR_SCALE = _LINEAR_SCALE

cdef struct TTEntry:
    uint64_t key
    int32_t score
    int16_t move_from       # best move (-2: none), -1 the pass
    int16_t move_to
    uint8_t depth
    uint8_t bound
    uint16_t generation


cdef struct Ctx:
    const Tables* t
    TTEntry* tt
    uint64_t tt_mask
    uint16_t generation
    int evaluation
    double weights[N_FEATURES]   # EVAL_LINEAR: the weight of (mine - theirs) of each feature
    int goal_dist[MAX_PLAYERS][MAX_CELLS]  # steps from each cell to the player's nearest goal cell
    int root_ply
    int root_player          # the searcher (paranoid search of three or more players)
    uint64_t nodes
    # repetition: the game's earlier positions (open addressing, 0 = empty) and the search path
    uint64_t* seen_keys
    int* seen_counts
    uint64_t seen_mask
    uint64_t path[_PATH]    # path[i]: hash of the position i plies below the root (path[0] = root)


cdef inline uint64_t _mix(uint64_t z) noexcept nogil:
    """splitmix64's finaliser: spreads the non-hashed fields over the key."""
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline uint64_t _tt_key(const CState* s) noexcept nogil:
    """The Zobrist hash plus what it does not cover but the end of the game reads."""
    cdef uint64_t extra = ((<uint64_t>s.ply) | (<uint64_t>s.progress_ply << 16)
                           | (<uint64_t>s.goal_best[0] << 32) | (<uint64_t>s.goal_best[1] << 40))
    return s.hash ^ _mix(extra + 1)


cdef extern from *:
    int _popcount "__builtin_popcountll"(unsigned long long x) nogil
    int _ctz "__builtin_ctzll"(unsigned long long x) nogil


cdef int _side_value(const Ctx* c, const CState* s, int p) noexcept nogil:
    """One player's term: see _evaluate."""
    cdef const Tables* t = c.t
    cdef int word, cell, behind, total = 0, in_goal = 0, lag = 0
    cdef uint64_t w
    for word in range(2):
        w = s.bb[p][word]
        in_goal += _popcount(w & t.goal[p][word])
        while w:
            cell = 64 * word + _ctz(w)
            w &= w - 1
            total += t.advance[p][cell]
            behind = c.goal_dist[p][cell]
            lag += behind * behind
    if c.evaluation == EVAL_ADVANCE:
        return total
    return W_ADVANCE * total + W_GOAL * in_goal - lag


cdef inline bint _has(const CState* s, int cell) noexcept nogil:
    """Whether ``cell`` holds a piece of either player."""
    return ((s.bb[0][cell >> 6] | s.bb[1][cell >> 6]) >> (cell & 63)) & 1


cdef int _hop_landing(const Tables* t, const CState* s, int cell, int d) noexcept nogil:
    """Where a single hop from ``cell`` along ``d`` lands (over the adjacent piece, onto the empty
    cell beyond: the rhombus's adjacent hop, the star's by table), or -1."""
    cdef int over, land, w
    if t.star:
        over = t.hop_over[cell][d]
        if over == NO_CELL or not _has(s, over):
            return -1
        for w in range(2):
            if t.hop_land[cell][d][w]:
                land = 64 * w + _ctz(t.hop_land[cell][d][w])
                return -1 if _has(s, land) else land
        return -1
    over = t.ray[cell][d][0]
    land = t.ray[cell][d][1]
    if over < 0 or land < 0 or not _has(s, over) or _has(s, land):
        return -1
    return land


cdef void _side_features(const Ctx* c, const CState* s, int p, double* f) noexcept nogil:
    """The :data:`FEATURES` of player ``p`` in ``s``, into ``f[0 .. N_FEATURES)``."""
    cdef const Tables* t = c.t
    cdef int word, cell, d, step, land, steps, forward, k, x
    cdef uint64_t w, free_nbrs
    for k in range(N_FEATURES):
        f[k] = 0.0
    for word in range(2):
        w = s.bb[p][word]
        f[1] += _popcount(w & t.goal[p][word])
        f[2] += _popcount(w & t.goal[1 - p][word])  # home: where the other player is going
        while w:
            cell = 64 * word + _ctz(w)
            w &= w - 1
            f[0] += t.advance[p][cell]
            steps = c.goal_dist[p][cell]
            if steps > f[3]:
                f[3] = steps
            f[4] += steps * steps
            forward = 0
            for x in range(2):
                free_nbrs = t.nbr[cell][x] & ~(s.bb[0][x] | s.bb[1][x])
                while free_nbrs:
                    step = 64 * x + _ctz(free_nbrs)
                    free_nbrs &= free_nbrs - 1
                    if t.advance[p][step] > t.advance[p][cell]:
                        forward = 1
            for d in range(6):
                land = _hop_landing(t, s, cell, d)
                if land >= 0 and t.advance[p][land] > t.advance[p][cell]:
                    f[5] += 1
                    forward = 1
            if not forward:
                f[6] += 1


cdef int _linear(const Ctx* c, const CState* s) noexcept nogil:
    """``LINEAR_SCALE * weights . (features(mover) - features(other))``, bounded far below MATE."""
    cdef double mine[N_FEATURES]
    cdef double theirs[N_FEATURES]
    cdef double v = 0.0
    cdef int k
    _side_features(c, s, s.to_move, mine)
    _side_features(c, s, 1 - s.to_move, theirs)
    for k in range(N_FEATURES):
        v += c.weights[k] * (mine[k] - theirs[k])
    v *= _LINEAR_SCALE
    if v > _MATE / 4:
        return _MATE / 4
    if v < -_MATE / 4:
        return -_MATE / 4
    return <int>v


cdef inline int _evaluate(const Ctx* c, const CState* s) noexcept nogil:
    """The side to move's term minus the other's.

    ``advance``: a player's term is its pieces' total advance (rows ahead of its home's tip, the
    quantity of distance adjudication). ``distance`` (default): ``16 * advance + 8 * pieces in
    goal - sum of steps^2``, where ``steps`` is how many single steps a piece is from the nearest
    cell of its goal (0 inside): the square weighs the pieces left behind most, so the search
    brings the last ones along instead of parking them at home (where on star2 they would also
    block the other side's goal to no end), and ``steps`` also counts sideways, which rows do
    not, so a last piece beside the goal walks to its door.

    ``linear``: learned weights over :data:`FEATURES` (``_linear``).
    """
    if c.evaluation == EVAL_LINEAR:
        return _linear(c, s)
    return _side_value(c, s, s.to_move) - _side_value(c, s, 1 - s.to_move)


cdef inline int _terminal_score(const CState* s, int distance) noexcept nogil:
    """The exact score of a finished game for the side to move, ``distance`` plies from the root."""
    cdef int v = s.result if s.to_move == 0 else -s.result
    if v > 0:
        return _MATE - distance
    if v < 0:
        return distance - _MATE
    return 0


cdef int _evaluate_paranoid(const Ctx* c, const CState* s) noexcept nogil:
    """Three or more players: the searcher's term minus the largest of the others' (module docstring)."""
    cdef int q, v, best = -_INF
    for q in range(c.t.players):
        if q != c.root_player:
            v = _side_value(c, s, q)
            if v > best:
                best = v
    return _side_value(c, s, c.root_player) - best


cdef inline int _terminal_paranoid(const Ctx* c, const CState* s, int distance) noexcept nogil:
    """The exact score of a finished game of three or more players for the searcher."""
    cdef int mine = 1 << c.root_player
    if s.winners == 0:
        return 0  # a draw
    if s.winners & mine:
        return _MATE - distance if s.winners == mine else _MATE // 2 - distance
    return distance - _MATE


cdef inline bint _tt_probe(Ctx* c, uint64_t key, int depth, int alpha, int beta, int distance,
                           int* tt_from, int* tt_to, int* score) noexcept nogil:
    """Look ``key`` up in the transposition table: its stored move goes to ``tt_from``/``tt_to``
    (tried first), and True (with ``score``) when the entry is deep enough to answer within
    (alpha, beta). Never at the root (``distance`` 0), which must return a move."""
    cdef TTEntry* e = &c.tt[key & c.tt_mask]
    if e.key != key or e.generation != c.generation:
        return False
    tt_from[0] = e.move_from
    tt_to[0] = e.move_to
    if e.depth < depth or distance <= 0:
        return False
    score[0] = e.score
    return (e.bound == TT_EXACT or (e.bound == TT_LOWER and e.score >= beta)
            or (e.bound == TT_UPPER and e.score <= alpha))


cdef inline void _tt_store(Ctx* c, uint64_t key, int depth, int score, int move_from, int move_to,
                           int bound) noexcept nogil:
    """Keep a searched node's value, its bound and its best move (always replace)."""
    cdef TTEntry* e = &c.tt[key & c.tt_mask]
    e.key = key
    e.generation = c.generation
    e.score = score
    e.depth = depth
    e.move_from = move_from
    e.move_to = move_to
    e.bound = bound


cdef int _paranoid(Ctx* c, const CState* s, int depth, int alpha, int beta, int distance,
                   int16_t* best_out) noexcept nogil:
    """The paranoid value of ``s`` for the searcher, ``depth`` plies deep, within (alpha, beta)
    (fail-soft): the searcher maximises, every other player minimises. ``best_out`` (or NULL)
    receives the best move of the side to move under that assumption."""
    cdef int16_t moves[2 * MAX_MOVES]
    cdef int32_t keys[MAX_MOVES]
    cdef CState child
    cdef int count, i, score, best, alpha0 = alpha, beta0 = beta, tt_from = -2, tt_to = -2, bf = -2, bt = -2
    cdef bint maximising = s.to_move == c.root_player
    cdef uint64_t key
    c.nodes += 1
    if s.result != RESULT_NONE:
        return _terminal_paranoid(c, s, distance)
    if depth <= 0:
        return _evaluate_paranoid(c, s)
    key = _tt_key(s)
    if _tt_probe(c, key, depth, alpha, beta, distance, &tt_from, &tt_to, &score):
        return score
    count = generate_moves(c.t, s, moves)
    if count == 0:
        return _evaluate_paranoid(c, s)  # not reached: a position without a move is terminal
    _order(c, s, moves, count, keys, tt_from, tt_to)
    best = -_INF if maximising else _INF
    c.path[distance] = s.hash
    for i in range(count):
        _pick(moves, keys, i, count)
        child = s[0]
        apply_move(c.t, &child, moves[2 * i], moves[2 * i + 1])
        if c.t.repetition and child.result == RESULT_NONE:
            _repetition(c, &child, distance + 1)
        score = _paranoid(c, &child, depth - 1, alpha, beta, distance + 1, NULL)
        if (score > best) if maximising else (score < best):
            best = score
            bf = moves[2 * i]
            bt = moves[2 * i + 1]
            if maximising and best > alpha:
                alpha = best
            elif not maximising and best < beta:
                beta = best
            if alpha >= beta:
                break
    _tt_store(c, key, depth, best, bf, bt,
              TT_LOWER if best >= beta0 else (TT_UPPER if best <= alpha0 else TT_EXACT))
    if best_out != NULL:
        best_out[0] = bf
        best_out[1] = bt
    return best


cdef int _still(Ctx* c, const CState* s, int depth, int distance, int16_t* best_out) noexcept nogil:
    """The searcher's best score after ``depth`` moves in a row, the others standing still
    (module docstring); ``best_out`` (or NULL) receives the first move. ``s.to_move`` is the
    searcher: children keep it, as only the searcher's pieces move."""
    cdef int16_t moves[2 * MAX_MOVES]
    cdef int32_t keys[MAX_MOVES]
    cdef CState child
    cdef int count, i, a, b, score, best = -_INF, bf = -2, bt = -2, p = c.root_player
    cdef const Tables* t = c.t
    c.nodes += 1
    if _popcount(s.bb[p][0] & t.goal[p][0]) + _popcount(s.bb[p][1] & t.goal[p][1]) == t.k:
        return _MATE - distance  # home: a sooner finish scores higher
    if depth <= 0:
        return _evaluate_paranoid(c, s)
    count = generate_moves(t, s, moves)
    if count == 0:
        return _evaluate_paranoid(c, s)  # only the root can be finished; it is searched on a live game
    _order(c, s, moves, count, keys, -2, -2)
    for i in range(count):
        _pick(moves, keys, i, count)
        a = moves[2 * i]
        b = moves[2 * i + 1]
        child = s[0]
        if a >= 0:  # move the piece's bit; the hash and the counters are not read below
            child.bb[p][a >> 6] &= ~((<uint64_t>1) << (a & 63))
            child.bb[p][b >> 6] |= (<uint64_t>1) << (b & 63)
        score = _still(c, &child, depth - 1, distance + 1, NULL)
        if score > best:  # the first of equal scores: greedy's order breaks ties
            best = score
            bf = a
            bt = b
    if best_out != NULL:
        best_out[0] = bf
        best_out[1] = bt
    return best


cdef void _repetition(Ctx* c, CState* child, int distance) noexcept nogil:
    """Star: draw ``child`` (``distance`` plies below the root) at its repetition-th occurrence,
    counting the game's history and the search path above it."""
    cdef int count = 1, i
    cdef uint64_t h = child.hash, slot
    if c.seen_mask:
        slot = _mix(h) & c.seen_mask
        while c.seen_keys[slot] != 0:
            if c.seen_keys[slot] == h:
                count += c.seen_counts[slot]
                break
            slot = (slot + 1) & c.seen_mask
    # the search path above the child: the root (not in the game's history) and the positions below it
    for i in range(distance):
        if c.path[i] == h:
            count += 1
    star_repetition_draw(c.t, child, count)


cdef int _order(const Ctx* c, const CState* s, int16_t* moves, int count, int32_t* keys,
                int tt_from, int tt_to) noexcept nogil:
    """Ordering keys: the table's move first, then the mover's forward distance psi, then the
    least advanced start (greedy's order). Returns how many moves there are."""
    cdef const Tables* t = c.t
    cdef int i, a, b, p = s.to_move
    for i in range(count):
        a = moves[2 * i]
        b = moves[2 * i + 1]
        if a == tt_from and b == tt_to:
            keys[i] = 1 << 30
        elif a < 0:
            keys[i] = 0
        else:
            keys[i] = forward_distance(t, p, a, b) * 256 - t.advance[p][a]
    return count


cdef inline void _pick(int16_t* moves, int32_t* keys, int i, int count) noexcept nogil:
    """Selection sort step: bring the best remaining move to position i (stable: the first of
    equal keys, so the order is deterministic)."""
    cdef int j, best = i
    cdef int32_t k
    cdef int16_t m0, m1
    for j in range(i + 1, count):
        if keys[j] > keys[best]:
            best = j
    if best != i:
        k = keys[best]; keys[best] = keys[i]; keys[i] = k
        m0 = moves[2 * best]; m1 = moves[2 * best + 1]
        moves[2 * best] = moves[2 * i]; moves[2 * best + 1] = moves[2 * i + 1]
        moves[2 * i] = m0; moves[2 * i + 1] = m1


cdef int _negamax(Ctx* c, const CState* s, int depth, int alpha, int beta, int distance,
                  int16_t* best_out) noexcept nogil:
    """The value of ``s`` for its side to move, ``depth`` plies deep, within (alpha, beta)
    (fail-soft). ``best_out`` (or NULL) receives the best move."""
    cdef int16_t moves[2 * MAX_MOVES]
    cdef int32_t keys[MAX_MOVES]
    cdef int16_t child_best[2]
    cdef CState child
    cdef int count, i, score, best, alpha0 = alpha, tt_from = -2, tt_to = -2, bf = -2, bt = -2
    cdef uint64_t key
    c.nodes += 1
    if s.result != RESULT_NONE:
        return _terminal_score(s, distance)
    if depth <= 0:
        return _evaluate(c, s)
    key = _tt_key(s)
    if _tt_probe(c, key, depth, alpha, beta, distance, &tt_from, &tt_to, &score):
        return score
    count = generate_moves(c.t, s, moves)
    if count == 0:
        return _evaluate(c, s)  # not reached: a position without a move is terminal (a pass is a move)
    _order(c, s, moves, count, keys, tt_from, tt_to)
    best = -_INF
    c.path[distance] = s.hash
    for i in range(count):
        _pick(moves, keys, i, count)
        child = s[0]
        apply_move(c.t, &child, moves[2 * i], moves[2 * i + 1])
        if c.t.repetition and child.result == RESULT_NONE:
            _repetition(c, &child, distance + 1)
        if i == 0:
            score = -_negamax(c, &child, depth - 1, -beta, -alpha, distance + 1, NULL)
        else:
            score = -_negamax(c, &child, depth - 1, -alpha - 1, -alpha, distance + 1, NULL)
            if alpha < score < beta:
                score = -_negamax(c, &child, depth - 1, -beta, -alpha, distance + 1, NULL)
        if score > best:
            best = score
            bf = moves[2 * i]
            bt = moves[2 * i + 1]
            if score > alpha:
                alpha = score
                if alpha >= beta:
                    break
    _tt_store(c, key, depth, best, bf, bt, TT_LOWER if best >= beta else (TT_EXACT if best > alpha0 else TT_UPPER))
    if best_out != NULL:
        best_out[0] = bf
        best_out[1] = bt
    return best


cdef void _goal_distances(const Tables* t, int p, int* out) noexcept nogil:
    """Breadth-first search from the player's goal over single steps: ``out[cell]`` is the number
    of steps from ``cell`` to the nearest goal cell (a cell off the board keeps 0)."""
    cdef int queue[MAX_CELLS]
    cdef int head = 0, tail = 0, i, j, w
    cdef uint64_t bits
    for i in range(MAX_CELLS):
        out[i] = -1
    for i in range(t.cells):
        if (t.goal[p][i >> 6] >> (i & 63)) & 1:
            out[i] = 0
            queue[tail] = i
            tail += 1
    while head < tail:
        i = queue[head]
        head += 1
        for w in range(2):
            bits = t.nbr[i][w]
            while bits:
                j = 64 * w + _ctz(bits)
                bits &= bits - 1
                if out[j] < 0:
                    out[j] = out[i] + 1
                    queue[tail] = j
                    tail += 1
    for i in range(MAX_CELLS):
        if out[i] < 0:
            out[i] = 0


def game_hashes(State state not None) -> list:
    """Zobrist hashes of the positions before ``state`` in its game (its undo history), oldest
    first; the current position is not included."""
    cdef bytes packed
    out = []
    for packed in state._history:
        out.append((<const CState*><const char*>packed).hash)
    return out


cdef class AlphaBetaSearch:
    """Iterative-deepening alpha-beta of one game's rules; reusable, not thread-safe.

    ``AlphaBetaSearch(tables, tt_bits=18, evaluation="distance", opponents="paranoid")``:
    ``tables`` from ``ccengine._core.tables_for(rules)``; the table holds ``2^tt_bits`` entries
    (16 bytes each). ``opponents`` (three or more players): ``paranoid``, or ``still`` for the
    searcher's race plan (module docstring).
    """

    cdef RulesTables tables
    cdef Ctx ctx
    cdef readonly int tt_bits
    cdef readonly str evaluation
    cdef readonly str opponents

    def __cinit__(self):
        self.ctx.tt = NULL
        self.ctx.seen_keys = NULL
        self.ctx.seen_counts = NULL

    def __init__(self, RulesTables tables not None, int tt_bits=18, str evaluation="distance", weights=None,
                 str opponents="paranoid"):
        cdef int p, k
        if opponents not in OPPONENTS:
            raise ValueError(f"opponents {opponents!r} is unknown; valid: {', '.join(OPPONENTS)}")
        if opponents == "still" and tables.t.players == 2:
            raise RulesError(
                f"opponents=still plans a race among three or more players; the {tables.rules.name} rules "
                "seat two (their search is negamax)"
            )
        if tables.t.players != 2 and evaluation == "linear":
            raise RulesError(
                f"the linear evaluation weighs two players' features; the {tables.rules.name} rules seat "
                f"{tables.t.players} players (use distance or advance)"
            )
        if not 10 <= tt_bits <= 26:
            raise ValueError(f"tt_bits={tt_bits} must be in 10..26")
        if evaluation not in EVALUATIONS:
            raise ValueError(f"evaluation {evaluation!r} is unknown; valid: {', '.join(EVALUATIONS)}")
        self.tables = tables
        self.tt_bits = tt_bits
        self.evaluation = evaluation
        self.opponents = opponents
        self.ctx.t = &tables.t
        self.ctx.evaluation = {"advance": EVAL_ADVANCE, "linear": EVAL_LINEAR}.get(evaluation, EVAL_DISTANCE)
        if (evaluation == "linear") != (weights is not None):
            raise ValueError("weights go with the linear evaluation, and it needs them")
        for k in range(N_FEATURES):
            self.ctx.weights[k] = 0.0
        if weights is not None:
            if len(weights) != N_FEATURES or not all(math.isfinite(float(x)) for x in weights):
                raise ValueError(f"weights: give {N_FEATURES} finite numbers, one per feature {FEATURES}")
            for k in range(N_FEATURES):
                self.ctx.weights[k] = float(weights[k])
        self.ctx.tt = <TTEntry*>calloc(<size_t>1 << tt_bits, sizeof(TTEntry))
        if self.ctx.tt == NULL:
            raise MemoryError("no memory for the transposition table")
        self.ctx.tt_mask = (<uint64_t>1 << tt_bits) - 1
        self.ctx.generation = 0
        for p in range(tables.t.players):
            _goal_distances(&tables.t, p, self.ctx.goal_dist[p])

    def __dealloc__(self):
        free(self.ctx.tt)
        free(self.ctx.seen_keys)
        free(self.ctx.seen_counts)

    cdef int _load_history(self, list history) except -1:
        """The game's earlier positions into the hash set (a count per distinct hash)."""
        cdef Py_ssize_t size = 16
        cdef uint64_t h, slot
        free(self.ctx.seen_keys)
        free(self.ctx.seen_counts)
        self.ctx.seen_keys = NULL
        self.ctx.seen_counts = NULL
        self.ctx.seen_mask = 0
        if not self.tables.t.repetition or not history:
            return 0
        while size < 2 * len(history) + 16:
            size *= 2
        self.ctx.seen_keys = <uint64_t*>calloc(size, sizeof(uint64_t))
        self.ctx.seen_counts = <int*>calloc(size, sizeof(int))
        if self.ctx.seen_keys == NULL or self.ctx.seen_counts == NULL:
            raise MemoryError("no memory for the repetition history")
        self.ctx.seen_mask = size - 1
        for value in history:
            h = value
            if h == 0:
                continue  # the empty-slot marker; a zero hash is a 2^-64 event and only misses a draw
            slot = _mix(h) & self.ctx.seen_mask
            while self.ctx.seen_keys[slot] != 0 and self.ctx.seen_keys[slot] != h:
                slot = (slot + 1) & self.ctx.seen_mask
            self.ctx.seen_keys[slot] = h
            self.ctx.seen_counts[slot] += 1
        return 0

    def features(self, State state not None):
        """The :data:`FEATURES` of both players in ``state``: ``[[player 0's], [player 1's]]``."""
        cdef double f[N_FEATURES]
        cdef int p
        if state.tables is not self.tables:
            raise ValueError("the state belongs to other rules than this search")
        out = []
        for p in range(2):
            _side_features(&self.ctx, &state.s, p, f)
            out.append([f[k] for k in range(N_FEATURES)])
        return out

    def search(self, State state not None, int depth, history=None):
        """Search ``state`` to ``depth`` plies (1..MAX_DEPTH) by iterative deepening.

        ``history``: Zobrist hashes of the game's positions before ``state`` (for the draw by
        repetition); None reads them from ``state``'s own undo history (:func:`game_hashes`).
        Returns ``(move, score, nodes)``: the best move (``(-1, -1)`` the pass), its score for the
        side to move (see the module's docstring) and the nodes visited.
        """
        cdef int d, score = 0
        cdef int16_t best[2]
        cdef int16_t moves[2 * MAX_MOVES]
        if state.tables is not self.tables:
            raise ValueError("the state belongs to other rules than this search")
        if not 1 <= depth <= _MAX_DEPTH:
            raise ValueError(f"depth={depth} must be in 1..{_MAX_DEPTH}")
        if state.s.result != RESULT_NONE:
            raise ValueError("the game is over: there is no move to search")
        if generate_moves(self.ctx.t, &state.s, moves) == 0:
            raise ValueError("the side to move has no legal move")
        self._load_history(game_hashes(state) if history is None else list(history))
        self.ctx.generation = <uint16_t>(self.ctx.generation + 1)
        if self.ctx.generation == 0:  # wrapped: entries of generation 0 may be 65,536 searches old
            memset(self.ctx.tt, 0, (<size_t>1 << self.tt_bits) * sizeof(TTEntry))
            self.ctx.generation = 1
        self.ctx.nodes = 0
        self.ctx.root_ply = state.s.ply
        self.ctx.root_player = state.s.to_move
        best[0] = best[1] = -2
        if self.opponents == "still":
            with nogil:
                score = _still(&self.ctx, &state.s, depth, 0, best)
            return (int(best[0]), int(best[1])), score, int(self.ctx.nodes)
        if self.tables.t.players > 2:
            with nogil:
                for d in range(1, depth + 1):
                    score = _paranoid(&self.ctx, &state.s, d, -_INF, _INF, 0, best)
                    if score >= _MATE - d or score <= d - _MATE:
                        break  # a sole win or a loss is within reach: deeper iterations change nothing
            return (int(best[0]), int(best[1])), score, int(self.ctx.nodes)
        with nogil:
            for d in range(1, depth + 1):
                score = _negamax(&self.ctx, &state.s, d, -_INF, _INF, 0, best)
                if score >= _MATE - d or score <= d - _MATE:
                    break  # the game's end is within reach: deeper iterations change nothing
        return (int(best[0]), int(best[1])), score, int(self.ctx.nodes)
