# cython: language_level=3
"""Batched PUCT tree search over flat C arrays (private; use :mod:`ccengine.search`).

One :class:`SearchForest` holds one search tree per game for G games. The search knows nothing
about networks: each round, :meth:`SearchForest.select` descends every active tree to a leaf
and writes the leaves into caller-owned numpy buffers, the caller evaluates them in one batch,
and :meth:`SearchForest.expand_and_backup` takes the priors and values back. Terminal leaves
never leave the forest: they are backed up with their exact value inside ``select``.

Memory layout (per tree, no Python object per node):

- ``edges``: one growable array of :c:type:`Edge`. The edges of a node are contiguous
  (``first_edge .. first_edge + num_edges``) and carry the search statistics (N, W, virtual
  loss, prior P), the move and its policy index. An edge's child node exists only once the
  edge has been selected (``child == -1`` before), so a node costs nothing until it is visited.
- ``nodes``: one growable array of :c:type:`Node`, one per visited position: the engine state by
  value (a plain C struct), the piece-ID list, the range of its edges and the link to its parent.
  Node 0 is always the root (tree reuse compacts the kept subtree so that this stays true).
- The root has no incoming edge; its own N, W and virtual loss live in the tree.

Values: an edge's W is the sum of the backed-up values from the point of view of the player who
makes that move (the player to move at the edge's parent), so selection at a node maximises its
own mover's Q. A leaf value is from the point of view of the player to move at the leaf, and is
flipped on the way up for every edge whose mover differs from that player.

Three or more players (max-n, Petosa and Balch 2019): a leaf value is a vector, one entry per
seat (the evaluator's expected shares, kept as ``2 * share - 1``); every edge on the way up adds
the whole vector to its row of ``Tree.wv`` and its own mover's entry to ``Edge.W``, so selection
is unchanged and each node picks by its mover's entry. ``wv`` exists only then: two-player trees
take the scalar path above untouched.
"""

cimport cython
from libc.math cimport INFINITY, cos, isfinite, log, pow, sqrt
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove, memset

from ccengine._core cimport (
    MAX_CELLS,
    MAX_PIECES,
    MAX_PLAYERS,
    RESULT_NONE,
    CState,
    RulesTables,
    score_vector,
    State,
    Tables,
    apply_move,
    cell_owner,
    generate_moves,
    star_repetition_draw,
)
from ccengine._playout cimport _greedy_match, _greedy_pick
from ccengine._random cimport _below, _mix_seed, _uniform
from cpython.bytes cimport PyBytes_AS_STRING

import numpy as np


cimport numpy as cnp

cnp.import_array()

__all__ = [
    "MAX_HISTORY",
    "PASS_ACTION",
    "STATE_BYTES",
    "SearchForest",
    "canonical_pieces",
]

#: Policy index handed out for the pass move (it has no slot in the ``k * cells`` policy).
PASS_ACTION = -1
#: Most piece lists of history a leaf can report.
MAX_HISTORY = 16
#: Size in bytes of one engine state in the optional ``states`` output of ``select``.
STATE_BYTES = sizeof(CState)

cdef enum:
    _MAX_HISTORY = 16
    _BLOCK = MAX_PLAYERS * MAX_PIECES   # one piece list (every seat) in the history array
    _PASS_ACTION = -1
    # Node status. A node is created by the descent that first selects its edge and is at once
    # either TERMINAL or given its edges (PENDING); only a brand-new root is ever FRESH.
    ST_FRESH = 0       # state and pieces set, no edges yet
    ST_PENDING = 1     # edges generated, in the current batch, waiting for priors and value
    ST_EXPANDED = 2    # priors set: selection may descend through it
    ST_TERMINAL = 3    # game over here; `value` is exact
    # select_one outcomes
    SEL_LEAF = 1
    SEL_TERMINAL = 0
    SEL_COLLISION = -1
    SEL_NOMEM = -2
    # parent_visits modes
    PV_NODE = 0
    PV_CHILDREN_SUM = 1
    # first-play value modes
    FPU_PARENT = 0
    FPU_VALUE = 1
    # how the nodes of the players other than the root mover choose (opponent modelling)
    OPP_SOUND = 0      # PUCT, as the root mover's own nodes
    OPP_GREEDY = 1
    OPP_MODEL = 2
    OPP_POLICY = 3
    OPP_OBSERVED = 4   # greedy's rule for the players whose last AUTO_STREAK moves were greedy's
    # opponent=auto: how many of a player's moves in a row must be greedy's before the tree
    # plays greedy's rule for it (moves with no choice do not count either way)
    AUTO_STREAK = 4


cdef struct Edge:
    float P            # prior (after root noise, if any)
    float W            # sum of backed-up values, mover's point of view (completed visits only)
    int32_t N          # completed visits
    int32_t child      # node index, -1 until the edge is first selected
    int16_t vloss      # visits in flight through this edge (virtual loss)
    int16_t action     # policy index piece_id * cells + e; PASS_ACTION for a pass
    int8_t s           # move from (-1 for a pass)
    int8_t e           # move to (-1 for a pass)


cdef struct Node:
    CState state
    int32_t first_edge     # -1 until the edges are generated
    int32_t parent         # -1 at the root
    int32_t parent_edge    # the edge leading here, -1 at the root
    int16_t num_edges
    int8_t status          # ST_*
    int8_t proven          # solver: +1 / -1 = proven win / loss for state.to_move, 0 = unknown
    float value            # ST_TERMINAL: exact result from the view of state.to_move
    int8_t pieces[MAX_PLAYERS][MAX_PIECES]   # pieces[p][j]: cell of player p's piece with ID j


cdef struct Tree:
    Node* nodes
    Edge* edges
    int32_t n_nodes
    int32_t cap_nodes
    int32_t n_edges
    int32_t cap_edges
    int32_t root_N         # completed simulations through the root
    double root_W          # their values, from the root mover's point of view
    int32_t root_vloss
    int32_t remaining      # simulations still to start in the current search
    int32_t active         # 1 while the root is a position to search (not game over, set)
    int32_t noise_pending  # mix Dirichlet noise into the root priors when it gets expanded
    int32_t noised         # the root's priors already carry noise
    uint64_t rng
    int8_t* history        # [H][MAX_PLAYERS][MAX_PIECES]: the root (h = 0) and the game's earlier states
    # Repetition (rules with `repetition`, the star): the Zobrist hashes of the game's positions
    # before the root, oldest first. A node's own path adds the rest (see _repetition_count).
    uint64_t* seen
    int32_t n_seen
    int32_t cap_seen
    # model_opponent: row x (opp_width floats, node x's slot) holds the opponent-model logits the
    # evaluator gave for node x, over the reply of the player not to move there, by policy index.
    # Parallel to `nodes` (same capacity, same compaction); NULL without model_opponent.
    float* opp
    int32_t opp_width
    # Three or more players (max-n): wv[e * P + p] sums the backed-up values of edge e for every
    # seat p (each on the [-1, 1] scale 2 * share - 1); parallel to `edges`. Edge.W still holds
    # its mover's entry, so selection reads Edge.W whatever the number of players. NULL for two.
    float* wv
    int32_t nplayers
    double root_Wv[MAX_PLAYERS]
    # auto_opponent: how many moves in a row each player has made that greedy could have made,
    # up to the root (its last move without a choice left it unchanged)
    int32_t greedy_streak[MAX_PLAYERS]


# ---------------------------------------------------------------------------------------------
# Random numbers: the splitmix64 streams of ccengine/_random.pxd, one per tree; the Dirichlet
# noise's normal and gamma variates on top of them.
# ---------------------------------------------------------------------------------------------


cdef double _normal(uint64_t* s) noexcept nogil:
    """Standard normal (Box-Muller, one of the pair)."""
    return sqrt(-2.0 * log(_uniform(s))) * cos(6.283185307179586 * _uniform(s))


cdef double _gamma(uint64_t* s, double a) noexcept nogil:
    """Gamma(a, 1) by Marsaglia and Tsang; a < 1 through the boost Gamma(a + 1) * U^(1/a)."""
    cdef double d, c, x, v, u
    if a < 1.0:
        return _gamma(s, a + 1.0) * pow(_uniform(s), 1.0 / a)
    d = a - 1.0 / 3.0
    c = 1.0 / sqrt(9.0 * d)
    while True:
        x = _normal(s)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = _uniform(s)
        if u < 1.0 - 0.0331 * x * x * x * x:
            return d * v
        if log(u) < 0.5 * x * x + d * (1.0 - v + log(v)):
            return d * v


# ---------------------------------------------------------------------------------------------
# Piece lists
# ---------------------------------------------------------------------------------------------


cdef inline void _move_piece(int8_t[MAX_PLAYERS][MAX_PIECES] pieces, int player, int k, int s, int e) noexcept nogil:
    """The piece of `player` on `s` now stands on `e` (a pass changes nothing)."""
    cdef int j
    if s < 0:
        return
    for j in range(k):
        if pieces[player][j] == s:
            pieces[player][j] = <int8_t>e
            return


cdef inline int _piece_id(int8_t[MAX_PLAYERS][MAX_PIECES] pieces, int player, int k, int cell) noexcept nogil:
    cdef int j
    for j in range(k):
        if pieces[player][j] == cell:
            return j
    return -1


cdef void _canonical(const Tables* t, const CState* s, int8_t[MAX_PLAYERS][MAX_PIECES] out) noexcept nogil:
    """Canonical piece IDs of a position without history (docs/RULES.md "Piece identities").

    Rhombus: player 0 ``r - c`` descending, then ``c`` ascending; player 1 ``c - r`` descending,
    then ``c`` descending. Star: player 0 by cell index ascending, player 1 descending (the image
    of player 0's order under the 180-degree rotation ``i -> cells - 1 - i``). Cells are scanned
    in key order, so the IDs come out sorted.
    """
    cdef int n = t.n, p, d, c, r, cell, j
    memset(out, -1, MAX_PLAYERS * MAX_PIECES)
    if t.star:
        for p in range(2):
            j = 0
            for c in range(t.cells):
                cell = c if p == 0 else t.cells - 1 - c
                if cell_owner(s, cell) == p and j < MAX_PIECES:
                    out[p][j] = <int8_t>cell
                    j += 1
            while j < MAX_PIECES:
                out[p][j] = -1
                j += 1
        return
    for p in range(2):
        j = 0
        for d in range(n - 1, -n, -1):        # d = r - c for player 0, c - r for player 1
            if p == 0:
                for c in range(n):            # c ascending
                    r = d + c
                    if 0 <= r < n:
                        cell = r * n + c
                        if cell_owner(s, cell) == 0 and j < MAX_PIECES:
                            out[0][j] = <int8_t>cell
                            j += 1
            else:
                for c in range(n - 1, -1, -1):  # c descending
                    r = c - d
                    if 0 <= r < n:
                        cell = r * n + c
                        if cell_owner(s, cell) == 1 and j < MAX_PIECES:
                            out[1][j] = <int8_t>cell
                            j += 1
        while j < MAX_PIECES:
            out[p][j] = -1
            j += 1


def canonical_pieces(State state not None):
    """Canonical piece-ID list of ``state``'s position: int8 ``[P, k]``, cell of piece j of player p."""
    cdef int8_t buf[MAX_PLAYERS][MAX_PIECES]
    cdef int k = state.tables.t.k, p, j
    if state.tables.t.players > 2:
        from ccengine.encoding import canonical_ids
        return canonical_ids(state.tables.rules, state.board).astype(np.int8)
    _canonical(&state.tables.t, &state.s, buf)
    out = np.empty((2, k), dtype=np.int8)
    cdef int8_t[:, ::1] o = out
    for p in range(2):
        for j in range(k):
            o[p, j] = buf[p][j]
    return out


cdef inline float _exact_value(const CState* s) noexcept nogil:
    """Result of a finished game from the view of the player to move there."""
    return <float>(s.result if s.to_move == 0 else -s.result)


# ---------------------------------------------------------------------------------------------
# Tree storage
# ---------------------------------------------------------------------------------------------


cdef int _tree_alloc(Tree* tr, int cap_nodes, int cap_edges, int history, int opp_width,
                     int players) noexcept nogil:
    memset(tr, 0, sizeof(Tree))
    tr.nplayers = players
    if players > 2:
        tr.wv = <float*>malloc(<size_t>cap_edges * players * sizeof(float))
        if tr.wv == NULL:
            return -1
    tr.nodes = <Node*>malloc(cap_nodes * sizeof(Node))
    tr.edges = <Edge*>malloc(cap_edges * sizeof(Edge))
    tr.history = <int8_t*>malloc(history * _BLOCK)
    tr.seen = <uint64_t*>malloc(64 * sizeof(uint64_t))
    if tr.nodes == NULL or tr.edges == NULL or tr.history == NULL or tr.seen == NULL:
        return -1
    tr.opp_width = opp_width
    if opp_width > 0:
        tr.opp = <float*>malloc(<size_t>cap_nodes * opp_width * sizeof(float))
        if tr.opp == NULL:
            return -1
    tr.cap_seen = 64
    tr.cap_nodes = cap_nodes
    tr.cap_edges = cap_edges
    memset(tr.history, -1, history * _BLOCK)
    return 0


cdef void _tree_free(Tree* tr) noexcept nogil:
    free(tr.nodes)
    free(tr.edges)
    free(tr.history)
    free(tr.seen)
    free(tr.opp)
    free(tr.wv)
    tr.opp = NULL
    tr.wv = NULL
    tr.nodes = NULL
    tr.edges = NULL
    tr.history = NULL
    tr.seen = NULL


cdef int _reserve_nodes(Tree* tr, int extra) noexcept nogil:
    """Room for `extra` more nodes. Invalidates Node pointers; callers hold indices."""
    cdef int cap = tr.cap_nodes
    cdef Node* p
    cdef float* o
    if tr.n_nodes + extra <= cap:
        return 0
    while cap < tr.n_nodes + extra:
        cap *= 2
    p = <Node*>realloc(tr.nodes, cap * sizeof(Node))
    if p == NULL:
        return -1
    tr.nodes = p
    if tr.opp_width > 0:
        o = <float*>realloc(tr.opp, <size_t>cap * tr.opp_width * sizeof(float))
        if o == NULL:
            return -1   # cap_nodes unchanged: the nodes' larger block is merely not used yet
        tr.opp = o
    tr.cap_nodes = cap
    return 0


cdef int _reserve_edges(Tree* tr, int extra) noexcept nogil:
    """Room for `extra` more edges. Invalidates Edge pointers; callers hold indices."""
    cdef int cap = tr.cap_edges
    cdef Edge* p
    cdef float* w
    if tr.n_edges + extra <= cap:
        return 0
    while cap < tr.n_edges + extra:
        cap *= 2
    p = <Edge*>realloc(tr.edges, cap * sizeof(Edge))
    if p == NULL:
        return -1
    tr.edges = p
    if tr.wv != NULL:
        w = <float*>realloc(tr.wv, <size_t>cap * tr.nplayers * sizeof(float))
        if w == NULL:
            return -1   # cap_edges unchanged: the edges' larger block is merely not used yet
        tr.wv = w
    tr.cap_edges = cap
    return 0


cdef void _tree_set_root(Tree* tr, const CState* s, int8_t[MAX_PLAYERS][MAX_PIECES] pieces) noexcept nogil:
    """Discard everything and make `s` the (fresh) root; the arrays keep their capacity."""
    cdef Node* root = &tr.nodes[0]
    memset(root, 0, sizeof(Node))
    root.state = s[0]
    memcpy(root.pieces, pieces, sizeof(root.pieces))
    root.first_edge = -1
    root.parent = -1
    root.parent_edge = -1
    root.num_edges = 0
    if s.result != RESULT_NONE:
        root.status = ST_TERMINAL
        root.value = _exact_value(s)   # the root is never backed up: only its status matters
    else:
        root.status = ST_FRESH
    tr.n_nodes = 1
    tr.n_edges = 0
    tr.root_N = 0
    tr.root_W = 0.0
    memset(tr.root_Wv, 0, sizeof(tr.root_Wv))
    tr.root_vloss = 0
    tr.remaining = 0
    tr.noise_pending = 0
    tr.noised = 0
    tr.active = 1 if s.result == RESULT_NONE else 0


cdef inline void _push_history(Tree* tr, int history, int8_t[MAX_PLAYERS][MAX_PIECES] pieces) noexcept nogil:
    """The root moved one ply on: shift the game history and put the new root first."""
    cdef int block = _BLOCK
    if history > 1:
        memmove(tr.history + block, tr.history, (history - 1) * block)
    memcpy(tr.history, pieces, block)


cdef int _push_seen(Tree* tr, uint64_t h) noexcept nogil:
    """Record a position of the game before the root (its hash); -1 when out of memory."""
    cdef uint64_t* p
    if tr.n_seen == tr.cap_seen:
        p = <uint64_t*>realloc(tr.seen, 2 * tr.cap_seen * sizeof(uint64_t))
        if p == NULL:
            return -1
        tr.seen = p
        tr.cap_seen *= 2
    tr.seen[tr.n_seen] = h
    tr.n_seen += 1
    return 0


cdef int _occurrences_below(const Tree* tr, int x, uint64_t h) noexcept nogil:
    """How often the position with hash h occurs in a child of node x, that child included:
    once for itself, plus the path from x up to the root, plus the game before the root."""
    cdef int count = 1, i
    while x >= 0:
        if tr.nodes[x].state.hash == h:
            count += 1
        x = tr.nodes[x].parent
    for i in range(tr.n_seen):
        if tr.seen[i] == h:
            count += 1
    return count


# ---------------------------------------------------------------------------------------------
# The forest
# ---------------------------------------------------------------------------------------------


cdef class SearchForest:
    """G independent PUCT search trees advanced in lock-step, one batch of leaves per round.

    Parameters (keyword-only after ``num_games``):

    - ``tables``: the game's ``RulesTables`` (every root must be a ``State`` of the same rules).
    - ``num_games``: G, the number of trees.
    - ``history``: H, piece lists reported per leaf (1..16): the leaf, its parent, ... and
      beyond the root the game's own history given to :meth:`set_root`.
    - ``c_puct``: exploration constant c of ``U = c P sqrt(N_parent) / (1 + N)``.
    - ``parent_visits``: ``"node"``: N_parent is the node's own visit count (1 at a fresh node,
      so the first pick follows the prior); ``"children_sum"``: the sum of its children's
      visits, as the seed paper's code (0 at a fresh node: every U is 0 and ties are broken at
      random).
    - ``fpu``: Q of an unvisited child: ``"parent"`` = the node's own mean value (from its
      mover's view) minus ``fpu_reduction``; ``"value"`` = the constant ``fpu_value`` (the seed
      paper's code: 0).
    - ``leaves_per_game``: L, leaves one ``select`` may take per game, kept apart by virtual loss
      (each visit in flight counts as a visit with value ``-virtual_loss`` for its mover).
    - ``dirichlet_alpha``, ``dirichlet_weight``: root noise ``P <- (1 - w) P + w Dir(alpha)``,
      applied once per root when a search is started with ``noise=True``.
    - ``node_capacity``, ``edge_capacity``: initial array sizes per tree (they grow by doubling).
    - ``solver``: MCTS-Solver (Winands et al. 2008): exact wins and losses found at terminal
      nodes are backed up as proofs (a node is won if one move wins, lost if every move loses);
      selection takes a proven win at once, avoids proven losses, and a descent that reaches a
      proven node below the root backs up its exact value without going deeper.
    - ``greedy_opponent``: opponent modelling: at the nodes where the root mover's opponent
      moves, the descent plays what RULES.md's greedy player would (largest forward distance,
      then the least advanced piece, then at random) instead of the opponent's best reply, so
      the search computes a best response to greedy rather than to a perfect opponent.
    - ``model_opponent``: opponent modelling by a learned model (Knegt, Drugan and Wiering 2018):
      at the nodes where the root mover's opponent moves, the descent plays the reply the
      evaluator's opponent model rates most likely (its largest logit among the legal replies,
      ties at random), given at the parent, the node where the root mover chose the move replied
      to. :meth:`expand_and_backup` then takes each leaf's opponent logits as a third array.
    - ``policy_opponent``: opponent modelling by the searching network's own policy: at the nodes
      where a player other than the root mover moves, the descent plays that node's move of
      largest prior (ties at random), so every simulation deepens the root mover's own choices.
    - ``auto_opponent``: opponent modelling by observation: at the nodes of a player other than
      the root mover whose last four moves in the game were each one greedy could have chosen,
      the descent plays greedy's move; every other node is searched as with a sound opponent.
      The game's moves come from the root ``State``'s own history and from :meth:`advance`.
    - ``forced_playouts``: k of KataGo's forced playouts (Wu 2019, "Forced Playouts"), root only: a
      root child that has been visited but has fewer than ``sqrt(k * P * N_children)`` visits
      (P its prior, noise included; ``N_children`` the root children's visits) is selected
      before any other. 0 (the default): off.

    Repetition (rules with ``repetition``, the star): the rule is applied exactly. A node whose
    position occurs for the ``repetition``-th time, counting its path from the root and the
    game before the root (the root ``State``'s own history, and each :meth:`advance`), is a
    terminal draw. A node's path is fixed (the tree is a tree), so its status never changes.

    Ties in ``Q + U`` are broken uniformly at random with the tree's own random stream (seeded
    by :meth:`set_root`), so a game's search is the same whatever else shares its batch.
    """

    cdef RulesTables tables
    cdef const Tables* t
    cdef Tree* trees
    cdef readonly int num_games
    cdef readonly int history
    cdef readonly int leaves_per_game
    cdef readonly int max_moves
    cdef readonly int k
    cdef readonly int cells
    cdef readonly int players
    cdef readonly double c_puct
    cdef readonly double fpu_value
    cdef readonly double fpu_reduction
    cdef readonly double virtual_loss
    cdef readonly double dirichlet_alpha
    cdef readonly double dirichlet_weight
    cdef int pv_mode
    cdef int fpu_mode
    cdef readonly bint solver
    cdef readonly bint greedy_opponent
    cdef readonly bint model_opponent
    cdef readonly bint policy_opponent
    cdef readonly bint auto_opponent
    cdef readonly double forced_playouts
    cdef int opponent_mode         # OPP_*: how the others' nodes choose, from the four flags above
    cdef int16_t* movebuf          # generate_moves scratch: 2 * max_moves
    cdef double* noisebuf          # Dirichlet scratch: max_moves
    cdef int32_t* queue            # compaction scratch (grown on demand)
    cdef int queue_cap
    # The batch in flight: leaf i of the last select is node pend_node[i] of tree pend_game[i].
    cdef int32_t* pend_game
    cdef int32_t* pend_node
    cdef readonly int num_pending

    def __cinit__(self):
        self.trees = NULL
        self.movebuf = NULL
        self.noisebuf = NULL
        self.queue = NULL
        self.pend_game = NULL
        self.pend_node = NULL
        self.num_games = 0

    def __init__(
        self,
        RulesTables tables not None,
        int num_games,
        *,
        int history=1,
        double c_puct=3.5,
        str parent_visits="node",
        str fpu="parent",
        double fpu_value=0.0,
        double fpu_reduction=0.0,
        int leaves_per_game=1,
        double virtual_loss=1.0,
        double dirichlet_alpha=0.03,
        double dirichlet_weight=0.25,
        int node_capacity=256,
        int edge_capacity=8192,
        bint solver=False,
        bint greedy_opponent=False,
        bint model_opponent=False,
        bint policy_opponent=False,
        bint auto_opponent=False,
        double forced_playouts=0.0,
    ):
        cdef int g
        if self.trees != NULL:
            raise RuntimeError("SearchForest.__init__ called twice")
        if tables.t.players > 2 and model_opponent:
            raise ValueError(f"model_opponent models the one opponent of a two-player game; the "
                             f"{tables.rules.name} rules seat {tables.t.players} players")
        if num_games < 1:
            raise ValueError(f"num_games={num_games} must be at least 1")
        if not 1 <= history <= _MAX_HISTORY:
            raise ValueError(f"history={history} must be in 1..{_MAX_HISTORY}")
        if leaves_per_game < 1:
            raise ValueError(f"leaves_per_game={leaves_per_game} must be at least 1")
        if parent_visits not in ("node", "children_sum"):
            raise ValueError(f"parent_visits={parent_visits!r}; valid: 'node', 'children_sum'")
        if fpu not in ("parent", "value"):
            raise ValueError(f"fpu={fpu!r}; valid: 'parent', 'value'")
        if solver and greedy_opponent:
            raise ValueError("solver proves against a sound opponent; it cannot be combined with greedy_opponent")
        if solver and model_opponent:
            raise ValueError("solver proves against a sound opponent; it cannot be combined with model_opponent")
        if greedy_opponent + model_opponent + policy_opponent + auto_opponent > 1:
            raise ValueError("the opponent is modelled by one of greedy, a model, the policy or "
                             "observation, not several")
        if solver and policy_opponent:
            raise ValueError("solver proves against a sound opponent; it cannot be combined with policy_opponent")
        if solver and auto_opponent:
            raise ValueError("solver proves against a sound opponent; it cannot be combined with auto_opponent")
        if not forced_playouts >= 0:
            raise ValueError(f"forced_playouts={forced_playouts} must be >= 0 (0: off)")
        if c_puct < 0 or virtual_loss < 0 or dirichlet_alpha <= 0 or not 0 <= dirichlet_weight <= 1:
            raise ValueError("c_puct and virtual_loss must be >= 0, dirichlet_alpha > 0, dirichlet_weight in [0, 1]")
        self.tables = tables
        self.t = &tables.t
        self.num_games = num_games
        self.history = history
        self.leaves_per_game = leaves_per_game
        self.max_moves = self.t.max_moves
        self.k = self.t.k
        self.cells = self.t.cells
        self.players = self.t.players
        self.c_puct = c_puct
        self.pv_mode = PV_NODE if parent_visits == "node" else PV_CHILDREN_SUM
        self.fpu_mode = FPU_PARENT if fpu == "parent" else FPU_VALUE
        self.fpu_value = fpu_value
        self.fpu_reduction = fpu_reduction
        self.virtual_loss = virtual_loss
        self.dirichlet_alpha = dirichlet_alpha
        self.dirichlet_weight = dirichlet_weight
        self.solver = solver
        self.greedy_opponent = greedy_opponent
        self.model_opponent = model_opponent
        self.policy_opponent = policy_opponent
        self.auto_opponent = auto_opponent
        self.opponent_mode = (OPP_GREEDY if greedy_opponent else OPP_MODEL if model_opponent
                              else OPP_POLICY if policy_opponent else OPP_OBSERVED if auto_opponent
                              else OPP_SOUND)
        self.forced_playouts = forced_playouts
        node_capacity = max(node_capacity, 4)
        edge_capacity = max(edge_capacity, 2 * self.max_moves)
        self.trees = <Tree*>malloc(num_games * sizeof(Tree))
        self.movebuf = <int16_t*>malloc(2 * self.max_moves * sizeof(int16_t))
        self.noisebuf = <double*>malloc(self.max_moves * sizeof(double))
        self.pend_game = <int32_t*>malloc(num_games * leaves_per_game * sizeof(int32_t))
        self.pend_node = <int32_t*>malloc(num_games * leaves_per_game * sizeof(int32_t))
        if (self.trees == NULL or self.movebuf == NULL or self.noisebuf == NULL
                or self.pend_game == NULL or self.pend_node == NULL):
            raise MemoryError()
        memset(self.trees, 0, num_games * sizeof(Tree))
        for g in range(num_games):
            if _tree_alloc(&self.trees[g], node_capacity, edge_capacity, history,
                           self.k * self.cells if model_opponent else 0, self.players) != 0:
                raise MemoryError()
        self.num_pending = 0

    def __dealloc__(self):
        cdef int g
        if self.trees != NULL:
            for g in range(self.num_games):
                _tree_free(&self.trees[g])
            free(self.trees)
        free(self.movebuf)
        free(self.noisebuf)
        free(self.queue)
        free(self.pend_game)
        free(self.pend_node)

    # -- roots ---------------------------------------------------------------------------------

    cdef Tree* _tree(self, int g) except NULL:
        if not 0 <= g < self.num_games:
            raise IndexError(f"game {g} out of range 0..{self.num_games - 1}")
        return &self.trees[g]

    def set_root(self, int g, State state not None, history=None, *, uint64_t seed=0):
        """Start game ``g``'s tree afresh at ``state`` (the previous tree is dropped).

        ``history``: int8 ``[h, 2, k]`` piece lists of the game, ``history[0]`` for ``state``
        itself, then the states before it (``-1`` where missing); ``h`` may be shorter than H.
        Without it, the canonical piece IDs of ``state`` and no earlier states.
        ``seed`` seeds the tree's random stream (tie-breaks and root noise).
        A finished game is accepted but inactive: :meth:`start` refuses it.
        """
        cdef Tree* tr = self._tree(g)
        cdef int8_t pieces[MAX_PLAYERS][MAX_PIECES]
        cdef int8_t[:, :, :] h
        cdef int i, p, j, cell, hl
        if self.num_pending:
            raise RuntimeError("set_root while a batch is pending: call expand_and_backup first")
        if state.tables.rules != self.tables.rules:
            raise ValueError("state is of other rules than this forest")
        memset(tr.history, -1, self.history * _BLOCK)
        if history is None and self.players > 2:
            # the canonical IDs of three or more players are defined once, in ccengine.encoding
            from ccengine.encoding import canonical_ids
            history = canonical_ids(self.tables.rules, state.board)[None]
        if history is None:
            _canonical(self.t, &state.s, pieces)
            memcpy(tr.history, pieces, _BLOCK)
        else:
            h = np.ascontiguousarray(history, dtype=np.int8)
            if h.shape[0] < 1 or h.shape[1] != self.players or h.shape[2] != self.k:
                raise ValueError(f"history must be int8 [h >= 1, {self.players}, {self.k}], "
                                 f"got shape {np.shape(history)}")
            memset(pieces, -1, sizeof(pieces))
            for p in range(self.players):
                for j in range(self.k):
                    cell = h[0, p, j]
                    if not 0 <= cell < self.cells or cell_owner(&state.s, cell) != p:
                        raise ValueError(f"history[0]: piece {j} of player {p} on cell {cell}, "
                                         f"which does not hold a piece of player {p} in the state")
                    pieces[p][j] = <int8_t>cell
                for j in range(self.k):
                    for i in range(j):
                        if pieces[p][i] == pieces[p][j]:
                            raise ValueError(f"history[0]: two pieces of player {p} on cell {pieces[p][j]}")
            hl = min(h.shape[0], self.history)
            for i in range(hl):
                for p in range(self.players):
                    for j in range(self.k):
                        tr.history[i * _BLOCK + p * MAX_PIECES + j] = h[i, p, j]
        tr.n_seen = 0
        if self.t.repetition:
            for packed in state._history:
                if _push_seen(tr, (<const CState*>PyBytes_AS_STRING(packed)).hash) != 0:
                    raise MemoryError()
        tr.rng = _mix_seed(seed, 0x5EED)
        if self.opponent_mode == OPP_OBSERVED:
            self._observe_game(tr, state)
        _tree_set_root(tr, &state.s, pieces)

    def advance(self, int g, int s, int e, *, bint reuse=True):
        """Play move ``(s, e)`` at game ``g``'s root; the child becomes the root.

        With ``reuse`` and the child already in the tree, its subtree is kept with all its
        statistics, compacted to the front of fresh arrays (node 0 is the new root); the rest is
        freed. Otherwise the tree restarts at the child. The game history shifts by one ply
        either way. Returns True when a subtree was kept. Raises ValueError for a move that is
        not legal at the root.
        """
        cdef Tree* tr = self._tree(g)
        cdef Node* root
        cdef int i, found = -1, child
        cdef CState st
        cdef int8_t pieces[MAX_PLAYERS][MAX_PIECES]
        cdef int count
        if self.num_pending:
            raise RuntimeError("advance while a batch is pending: call expand_and_backup first")
        root = &tr.nodes[0]
        if root.status == ST_TERMINAL:
            raise ValueError("the game is over at this root")
        if root.status == ST_FRESH:
            count = generate_moves(self.t, &root.state, self.movebuf)
            for i in range(count):
                if self.movebuf[2 * i] == s and self.movebuf[2 * i + 1] == e:
                    found = i
            if found < 0:
                raise ValueError(f"move [{s}, {e}] is not legal at the root of game {g}")
            child = -1
        else:
            for i in range(root.num_edges):
                if tr.edges[root.first_edge + i].s == s and tr.edges[root.first_edge + i].e == e:
                    found = root.first_edge + i
            if found < 0:
                raise ValueError(f"move [{s}, {e}] is not legal at the root of game {g}")
            child = tr.edges[found].child
        if self.t.repetition and _push_seen(tr, root.state.hash) != 0:
            raise MemoryError()
        if self.opponent_mode == OPP_OBSERVED:
            self._observe(tr, &root.state, s, e)
        if reuse and child > 0 and tr.nodes[child].status != ST_TERMINAL:
            if self._compact(tr, child) != 0:
                raise MemoryError()
            _push_history(tr, self.history, tr.nodes[0].pieces)
            return True
        st = root.state
        memcpy(pieces, root.pieces, sizeof(pieces))
        apply_move(self.t, &st, s, e)
        if self.t.repetition:
            star_repetition_draw(self.t, &st, _occurrences_below(tr, -1, st.hash))
        _move_piece(pieces, root.state.to_move, self.k, s, e)
        _tree_set_root(tr, &st, pieces)
        _push_history(tr, self.history, pieces)
        return False

    cdef int _compact(self, Tree* tr, int new_root) except -2:
        """Copy the subtree of `new_root` into fresh arrays in breadth-first order.

        Invariants kept: node 0 is the root; a node's edges are contiguous; every edge's child
        index points into the new arrays. The new root's N and W come from its incoming edge
        (W flipped to the new root mover's view).
        """
        cdef Node* new_nodes
        cdef Edge* new_edges
        cdef float* new_opp
        cdef float* new_wv
        cdef int P = tr.nplayers, q
        cdef int32_t nn = 0, ne = 0, qi, x, i, c
        cdef int32_t sub_nodes = 0, sub_edges = 0
        cdef Node* nd
        cdef Edge* ed
        cdef Edge* inc = &tr.edges[tr.nodes[new_root].parent_edge]
        cdef int32_t root_N = inc.N
        cdef double root_W = inc.W
        if P > 2:
            root_W = tr.wv[<size_t>tr.nodes[new_root].parent_edge * P + tr.nodes[new_root].state.to_move]
        elif tr.nodes[tr.nodes[new_root].parent].state.to_move != tr.nodes[new_root].state.to_move:
            root_W = -root_W
        # Count the subtree first, to size the new arrays exactly (with room to grow).
        if self.queue_cap < tr.n_nodes:
            free(self.queue)
            self.queue = <int32_t*>malloc(tr.n_nodes * sizeof(int32_t))
            if self.queue == NULL:
                self.queue_cap = 0
                return -1
            self.queue_cap = tr.n_nodes
        self.queue[0] = new_root
        sub_nodes = 1
        qi = 0
        while qi < sub_nodes:
            nd = &tr.nodes[self.queue[qi]]
            qi += 1
            if nd.first_edge < 0:
                continue
            sub_edges += nd.num_edges
            for i in range(nd.num_edges):
                c = tr.edges[nd.first_edge + i].child
                if c >= 0:
                    self.queue[sub_nodes] = c
                    sub_nodes += 1
        new_nodes = <Node*>malloc(max(2 * sub_nodes, 64) * sizeof(Node))
        new_edges = <Edge*>malloc(max(2 * sub_edges, 2 * self.max_moves) * sizeof(Edge))
        new_opp = NULL
        if tr.opp_width > 0:
            new_opp = <float*>malloc(<size_t>max(2 * sub_nodes, 64) * tr.opp_width * sizeof(float))
        new_wv = NULL
        if P > 2:
            new_wv = <float*>malloc(<size_t>max(2 * sub_edges, 2 * self.max_moves) * P * sizeof(float))
        if (new_nodes == NULL or new_edges == NULL or (tr.opp_width > 0 and new_opp == NULL)
                or (P > 2 and new_wv == NULL)):
            free(new_nodes)
            free(new_edges)
            free(new_opp)
            free(new_wv)
            return -1
        if P > 2:
            for q in range(P):
                tr.root_Wv[q] = tr.wv[<size_t>tr.nodes[new_root].parent_edge * P + q]
        # Breadth-first order is the queue order: queue[i] becomes node i.
        for qi in range(sub_nodes):
            new_nodes[qi] = tr.nodes[self.queue[qi]]
            if new_opp != NULL:
                memcpy(&new_opp[<size_t>qi * tr.opp_width], &tr.opp[<size_t>self.queue[qi] * tr.opp_width],
                       tr.opp_width * sizeof(float))
        nn = 1
        for qi in range(sub_nodes):
            nd = &new_nodes[qi]
            if nd.first_edge < 0:
                continue
            memcpy(&new_edges[ne], &tr.edges[nd.first_edge], nd.num_edges * sizeof(Edge))
            if P > 2:
                memcpy(&new_wv[<size_t>ne * P], &tr.wv[<size_t>nd.first_edge * P], nd.num_edges * P * sizeof(float))
            nd.first_edge = ne
            for i in range(nd.num_edges):
                ed = &new_edges[ne + i]
                if ed.child >= 0:
                    # children are enqueued in this same order, so the next one is number nn
                    ed.child = nn
                    new_nodes[nn].parent = qi
                    new_nodes[nn].parent_edge = ne + i
                    nn += 1
            ne += nd.num_edges
        new_nodes[0].parent = -1
        new_nodes[0].parent_edge = -1
        free(tr.nodes)
        free(tr.edges)
        free(tr.opp)
        free(tr.wv)
        tr.nodes = new_nodes
        tr.edges = new_edges
        tr.opp = new_opp
        tr.wv = new_wv
        tr.n_nodes = sub_nodes
        tr.cap_nodes = max(2 * sub_nodes, 64)
        tr.n_edges = ne
        tr.cap_edges = max(2 * sub_edges, 2 * self.max_moves)
        tr.root_N = root_N
        tr.root_W = root_W
        tr.root_vloss = 0
        tr.remaining = 0
        tr.noise_pending = 0
        tr.noised = 0
        tr.active = 1
        return 0

    cdef void _observe(self, Tree* tr, const CState* before, int s, int e) noexcept nogil:
        """Count the move (s, e) played in ``before`` in its mover's greedy streak."""
        cdef int count = generate_moves(self.t, before, self.movebuf)
        cdef int match = _greedy_match(self.t, before, self.movebuf, count, s, e)
        if match > 0:
            tr.greedy_streak[before.to_move] += 1
        elif match == 0:
            tr.greedy_streak[before.to_move] = 0

    cdef void _observe_game(self, Tree* tr, State state):
        """The greedy streaks of every player over the game that led to ``state`` (its history
        of positions, each move read off the mover's pieces that changed)."""
        cdef const CState* before
        cdef const CState* after
        cdef int i, cell, s, e, n = len(state._history)
        memset(tr.greedy_streak, 0, sizeof(tr.greedy_streak))
        for i in range(n):
            before = <const CState*>PyBytes_AS_STRING(state._history[i])
            after = &state.s if i + 1 == n else <const CState*>PyBytes_AS_STRING(state._history[i + 1])
            s = e = -1
            for cell in range(self.cells):
                if cell_owner(before, cell) == before.to_move and cell_owner(after, cell) != before.to_move:
                    s = cell
                elif cell_owner(after, cell) == before.to_move and cell_owner(before, cell) != before.to_move:
                    e = cell
            self._observe(tr, before, s, e)

    def greedy_seats(self, int g):
        """With ``auto_opponent``: the players game ``g``'s tree models by greedy's rule (at their
        own nodes below the root), as a sorted list; empty otherwise."""
        cdef Tree* tr = self._tree(g)
        cdef int p
        if self.opponent_mode != OPP_OBSERVED:
            return []
        return [p for p in range(self.players)
                if p != tr.nodes[0].state.to_move and tr.greedy_streak[p] >= AUTO_STREAK]

    def start(self, int g, int num_simulations, *, bint noise=False):
        """Schedule ``num_simulations`` new simulations for game ``g`` (on top of a kept subtree).

        With ``noise`` (and ``dirichlet_weight > 0``), Dirichlet noise is mixed into the root
        priors once per root: now if the root is expanded, else when it gets expanded.
        """
        cdef Tree* tr = self._tree(g)
        if not tr.active:
            raise ValueError(f"game {g} has no root to search (game over or never set)")
        if num_simulations < 0:
            raise ValueError("num_simulations must be >= 0")
        tr.remaining = num_simulations
        if noise and self.dirichlet_weight > 0 and not tr.noised:
            if tr.nodes[0].status == ST_EXPANDED:
                self._mix_noise(tr)
            else:
                tr.noise_pending = 1

    def pending_simulations(self):
        """Simulations still to start, summed over the games."""
        cdef int g, total = 0
        for g in range(self.num_games):
            if self.trees[g].active:
                total += self.trees[g].remaining
        return total

    def is_active(self, int g):
        """Whether game ``g`` has a root to search (set, and not game over)."""
        return bool(self._tree(g).active)

    # -- selection -----------------------------------------------------------------------------

    cdef void _mix_noise(self, Tree* tr) noexcept nogil:
        cdef Node* root = &tr.nodes[0]
        cdef int i, n = root.num_edges, best = 0
        cdef double total = 0.0, w = self.dirichlet_weight
        for i in range(n):
            self.noisebuf[i] = _gamma(&tr.rng, self.dirichlet_alpha)
            total += self.noisebuf[i]
        if not total > 0.0:      # every draw underflowed: the mass goes to one child at random
            best = _below(&tr.rng, n)
            for i in range(n):
                self.noisebuf[i] = 1.0 if i == best else 0.0
            total = 1.0
        for i in range(n):
            tr.edges[root.first_edge + i].P = <float>((1.0 - w) * tr.edges[root.first_edge + i].P
                                                      + w * self.noisebuf[i] / total)
        tr.noise_pending = 0
        tr.noised = 1

    cdef int _pick_edge(self, Tree* tr, int x) noexcept nogil:
        """Index of the edge of expanded node x with the largest Q + U (random among ties)."""
        cdef Node* nd = &tr.nodes[x]
        cdef int p = nd.state.to_move, i, first = nd.first_edge, cnt = nd.num_edges, pick = 0, ties = 0
        cdef double n_par, w_par, vl_par, total, sq, fpu, q, score, best = -1e300, n
        cdef double forced_scale = 0.0   # k * N_children at the root with forced playouts, else 0
        cdef int proof
        cdef Edge* pe
        cdef Edge* ed
        if self.opponent_mode != OPP_SOUND and p != tr.nodes[0].state.to_move:
            if self.opponent_mode == OPP_GREEDY or (self.opponent_mode == OPP_OBSERVED
                                                    and tr.greedy_streak[p] >= AUTO_STREAK):
                return self._greedy_edge(tr, x)
            if self.opponent_mode == OPP_MODEL:
                return self._model_edge(tr, x)
            if self.opponent_mode == OPP_POLICY:
                return self._policy_edge(tr, x)
            # OPP_OBSERVED, a player not seen playing greedy: PUCT below, as a sound opponent
        if x == 0:
            n_par = tr.root_N
            w_par = tr.root_W
            vl_par = tr.root_vloss
        else:
            pe = &tr.edges[nd.parent_edge]
            n_par = pe.N
            if tr.wv != NULL:   # max-n: this node's mover's own entry of the incoming edge
                w_par = tr.wv[<size_t>nd.parent_edge * tr.nplayers + p]
            else:
                w_par = pe.W if tr.nodes[nd.parent].state.to_move == p else -pe.W
            vl_par = pe.vloss
        if self.pv_mode == PV_NODE:
            total = n_par + vl_par
        else:
            total = 0.0
            for i in range(cnt):
                total += tr.edges[first + i].N + tr.edges[first + i].vloss
        sq = self.c_puct * sqrt(total)
        if self.fpu_mode == FPU_PARENT:
            fpu = (w_par / n_par if n_par > 0 else 0.0) - self.fpu_reduction
        else:
            fpu = self.fpu_value
        if x == 0 and self.forced_playouts > 0:
            for i in range(cnt):
                forced_scale += tr.edges[first + i].N
            forced_scale *= self.forced_playouts
        for i in range(cnt):
            ed = &tr.edges[first + i]
            n = ed.N + ed.vloss
            if n == 0:
                q = fpu
            else:
                q = (ed.W - ed.vloss * self.virtual_loss) / n
            score = q + sq * ed.P / (1.0 + n)
            if n > 0 and n * n < forced_scale * ed.P:
                score = 1e300   # a forced playout: visited, below sqrt(k P N_children)
            if self.solver and ed.child >= 0 and tr.nodes[ed.child].proven != 0:
                proof = self._proof_for(tr, ed.child, p)
                if proof > 0:
                    return first + i    # a proven win: nothing else needs looking at
                score = -1e299          # a proven loss: only when every move loses
            if score > best:
                best = score
                pick = i
                ties = 1
            elif score == best:
                ties += 1
                if _below(&tr.rng, ties) == 0:
                    pick = i
        return first + pick

    cdef int _greedy_edge(self, Tree* tr, int x) noexcept nogil:
        """The edge of node x that RULES.md's greedy player picks (the playouts' ``_greedy_pick``)."""
        cdef Node* nd = &tr.nodes[x]
        cdef int i
        for i in range(nd.num_edges):
            self.movebuf[2 * i] = tr.edges[nd.first_edge + i].s
            self.movebuf[2 * i + 1] = tr.edges[nd.first_edge + i].e
        return nd.first_edge + _greedy_pick(self.t, &nd.state, self.movebuf, nd.num_edges, &tr.rng)

    cdef int _model_edge(self, Tree* tr, int x) noexcept nogil:
        """The edge of node x (not the root) whose move the opponent model, asked at x's parent,
        rates highest (random among ties); a lone pass is its only edge."""
        return self._largest_edge(tr, x, &tr.opp[<size_t>tr.nodes[x].parent * tr.opp_width])

    cdef int _policy_edge(self, Tree* tr, int x) noexcept nogil:
        """The edge of expanded node x with the largest prior (random among ties)."""
        return self._largest_edge(tr, x, NULL)

    cdef int _largest_edge(self, Tree* tr, int x, const float* row) noexcept nogil:
        """The edge of node x with the largest score, random among ties: ``row[action]`` (the
        pass: -inf) when a row of logits is given, else the edge's prior."""
        cdef Node* nd = &tr.nodes[x]
        cdef int i, a, pick = 0, ties = 0
        cdef float score, best = -INFINITY
        for i in range(nd.num_edges):
            if row == NULL:
                score = tr.edges[nd.first_edge + i].P
            else:
                a = tr.edges[nd.first_edge + i].action
                score = row[a] if a >= 0 else -INFINITY
            if score > best:
                best = score
                pick = i
                ties = 1
            elif score == best:
                ties += 1
                if _below(&tr.rng, ties) == 0:
                    pick = i
        return nd.first_edge + pick

    cdef inline int _proof_for(self, Tree* tr, int c, int player) noexcept nogil:
        """Node c's proof (+1 won, -1 lost, 0 unknown) from ``player``'s view."""
        if tr.wv != NULL:
            return self._proof_vec(tr, c, player)
        return tr.nodes[c].proven if tr.nodes[c].state.to_move == player else -tr.nodes[c].proven

    cdef int _proof_vec(self, Tree* tr, int c, int player) noexcept nogil:
        """Three or more players: only a finished game is proven; +1 when ``player`` won it
        alone (its whole share), -1 when it has no share, 0 for a shared result."""
        cdef float sv[MAX_PLAYERS]
        if tr.nodes[c].status != ST_TERMINAL:
            return 0
        score_vector(self.t, &tr.nodes[c].state, sv)
        return 1 if sv[player] >= 1.0 else (-1 if sv[player] <= 0.0 else 0)

    cdef void _prove_upwards(self, Tree* tr, int x) noexcept nogil:
        """After node x got a proof, prove its ancestors that now follow from it."""
        cdef int y = tr.nodes[x].parent, p, i, c, proof, all_lost
        while y >= 0 and tr.nodes[y].proven == 0 and tr.nodes[y].status == ST_EXPANDED:
            p = tr.nodes[y].state.to_move
            all_lost = 1
            for i in range(tr.nodes[y].num_edges):
                c = tr.edges[tr.nodes[y].first_edge + i].child
                proof = self._proof_for(tr, c, p) if c >= 0 else 0
                if proof > 0:
                    tr.nodes[y].proven = 1
                    break
                if proof == 0:
                    all_lost = 0
            if tr.nodes[y].proven == 0:
                if not all_lost:
                    return
                tr.nodes[y].proven = -1
            y = tr.nodes[y].parent

    cdef int _new_child(self, Tree* tr, int x, int e) noexcept nogil:
        """Create the node that edge e of node x leads to; returns its index (-1: no memory)."""
        cdef int c
        cdef Node* ch
        cdef Node* par
        cdef Edge* ed
        if _reserve_nodes(tr, 1) != 0:
            return -1
        c = tr.n_nodes
        tr.n_nodes += 1
        ch = &tr.nodes[c]
        par = &tr.nodes[x]
        ed = &tr.edges[e]
        ch.state = par.state
        apply_move(self.t, &ch.state, ed.s, ed.e)
        if self.t.repetition:
            star_repetition_draw(self.t, &ch.state, _occurrences_below(tr, x, ch.state.hash))
        memcpy(ch.pieces, par.pieces, sizeof(ch.pieces))
        _move_piece(ch.pieces, par.state.to_move, self.k, ed.s, ed.e)
        ch.parent = x
        ch.parent_edge = e
        ch.first_edge = -1
        ch.num_edges = 0
        ch.proven = 0
        if ch.state.result != RESULT_NONE:
            ch.status = ST_TERMINAL
            if tr.wv != NULL:   # max-n: the exact vector is read again from the state (_proof_vec)
                ch.value = 0.0
            else:
                ch.value = _exact_value(&ch.state)
                ch.proven = 1 if ch.value > 0 else (-1 if ch.value < 0 else 0)
        else:
            ch.status = ST_FRESH
            ch.value = 0.0
        ed.child = c
        return c

    cdef int _gen_edges(self, Tree* tr, int x) noexcept nogil:
        """FRESH -> PENDING: the legal moves of node x become its (prior-less) edges."""
        cdef int cnt = generate_moves(self.t, &tr.nodes[x].state, self.movebuf), i, first, s, e, pid
        cdef Node* nd
        cdef Edge* ed
        if _reserve_edges(tr, cnt) != 0:
            return -1
        nd = &tr.nodes[x]
        first = tr.n_edges
        tr.n_edges += cnt
        for i in range(cnt):
            ed = &tr.edges[first + i]
            s = self.movebuf[2 * i]
            e = self.movebuf[2 * i + 1]
            ed.s = <int8_t>s
            ed.e = <int8_t>e
            ed.P = 0.0
            ed.W = 0.0
            ed.N = 0
            ed.vloss = 0
            ed.child = -1
            if s < 0:
                ed.action = _PASS_ACTION
            else:
                pid = _piece_id(nd.pieces, nd.state.to_move, self.k, s)
                ed.action = <int16_t>(pid * self.cells + e)
        if tr.wv != NULL:
            memset(&tr.wv[<size_t>first * tr.nplayers], 0, <size_t>cnt * tr.nplayers * sizeof(float))
        nd.first_edge = first
        nd.num_edges = <int16_t>cnt
        nd.status = ST_PENDING
        return 0

    cdef void _backup(self, Tree* tr, int x, double v, int remove_vloss) noexcept nogil:
        """Add value v (view of the player to move at node x) to every edge from the root to x."""
        cdef int leaf_player = tr.nodes[x].state.to_move, par
        cdef Edge* ed
        while x != 0:
            par = tr.nodes[x].parent
            ed = &tr.edges[tr.nodes[x].parent_edge]
            ed.N += 1
            ed.W += <float>(v if tr.nodes[par].state.to_move == leaf_player else -v)
            if remove_vloss:
                ed.vloss -= 1
            x = par
        tr.root_N += 1
        tr.root_W += v if tr.nodes[0].state.to_move == leaf_player else -v
        if remove_vloss:
            tr.root_vloss -= 1

    cdef void _backup_vec(self, Tree* tr, int x, const double* v, int remove_vloss) noexcept nogil:
        """Max-n backup: add the value vector v (one entry per seat, each on the [-1, 1] scale)
        to every edge from the root to x; an edge's W takes its own mover's entry."""
        cdef int par, q, P = tr.nplayers
        cdef Edge* ed
        cdef float* w
        while x != 0:
            par = tr.nodes[x].parent
            ed = &tr.edges[tr.nodes[x].parent_edge]
            ed.N += 1
            ed.W += <float>v[tr.nodes[par].state.to_move]
            w = &tr.wv[<size_t>tr.nodes[x].parent_edge * P]
            for q in range(P):
                w[q] += <float>v[q]
            if remove_vloss:
                ed.vloss -= 1
            x = par
        tr.root_N += 1
        tr.root_W += v[tr.nodes[0].state.to_move]
        for q in range(P):
            tr.root_Wv[q] += v[q]
        if remove_vloss:
            tr.root_vloss -= 1

    cdef void _backup_terminal(self, Tree* tr, int x) noexcept nogil:
        """Back up the exact result of finished node x: its score vector for three or more
        players (as 2 * share - 1), its scalar value for two."""
        cdef float sv[MAX_PLAYERS]
        cdef double v[MAX_PLAYERS]
        cdef int q
        if tr.wv == NULL:
            self._backup(tr, x, tr.nodes[x].value, 1)
            return
        score_vector(self.t, &tr.nodes[x].state, sv)
        for q in range(tr.nplayers):
            v[q] = 2.0 * sv[q] - 1.0
        self._backup_vec(tr, x, v, 1)

    cdef void _undo_vloss(self, Tree* tr, int x) noexcept nogil:
        while x != 0:
            tr.edges[tr.nodes[x].parent_edge].vloss -= 1
            x = tr.nodes[x].parent
        tr.root_vloss -= 1

    cdef int _select_one(self, Tree* tr, int* leaf) noexcept nogil:
        """One descent from the root, adding virtual loss on the way. Returns a SEL_* code."""
        cdef int x = 0, e, c
        tr.root_vloss += 1
        while True:
            if self.solver and x != 0 and tr.nodes[x].proven != 0:
                self._backup(tr, x, tr.nodes[x].proven, 1)   # exact: no need to look deeper
                self._prove_upwards(tr, x)
                return SEL_TERMINAL
            if tr.nodes[x].status == ST_EXPANDED:
                e = self._pick_edge(tr, x)
                tr.edges[e].vloss += 1
                c = tr.edges[e].child
                if c < 0:
                    c = self._new_child(tr, x, e)
                    if c < 0:
                        self._undo_vloss(tr, x)
                        tr.edges[e].vloss -= 1
                        return SEL_NOMEM
                x = c
            elif tr.nodes[x].status == ST_TERMINAL:
                self._backup_terminal(tr, x)
                return SEL_TERMINAL
            elif tr.nodes[x].status == ST_PENDING:
                self._undo_vloss(tr, x)
                return SEL_COLLISION
            else:  # ST_FRESH
                if self._gen_edges(tr, x) != 0:
                    self._undo_vloss(tr, x)
                    return SEL_NOMEM
                leaf[0] = x
                return SEL_LEAF

    cdef void _write_leaf(self, int b, int g, Tree* tr, int x, int8_t[:, :, :, ::1] pieces,
                          int8_t[::1] to_move, int32_t[:, ::1] legal, int32_t[::1] counts,
                          uint8_t[:, ::1] states, bint want_states) noexcept nogil:
        cdef int h = 0, j, p, i, k = self.k, cnt
        cdef int hist_i = 1
        cdef int y = x
        cdef Node* nd = &tr.nodes[x]
        # History: the path from the leaf up to the root, then the game's history before the root.
        while h < self.history and y >= 0:
            for p in range(self.players):
                for j in range(k):
                    pieces[b, h, p, j] = tr.nodes[y].pieces[p][j]
            h += 1
            y = tr.nodes[y].parent
        while h < self.history:
            for p in range(self.players):
                for j in range(k):
                    pieces[b, h, p, j] = tr.history[hist_i * _BLOCK + p * MAX_PIECES + j]
            h += 1
            hist_i += 1
        to_move[b] = <int8_t>nd.state.to_move
        cnt = nd.num_edges
        if cnt == 1 and tr.edges[nd.first_edge].s < 0:
            cnt = 0     # the pass alone: no policy index, only the value is wanted
        counts[b] = cnt
        for i in range(cnt):
            legal[b, i] = tr.edges[nd.first_edge + i].action
        for i in range(cnt, legal.shape[1]):
            legal[b, i] = 0
        if want_states:
            memcpy(&states[b, 0], &nd.state, sizeof(CState))

    def select(self, int8_t[:, :, :, ::1] pieces not None, int8_t[::1] to_move not None,
               int32_t[:, ::1] legal not None, int32_t[::1] counts not None,
               uint8_t[:, ::1] states=None, int32_t[::1] games=None):
        """Descend every game with simulations left to up to L leaves; returns the leaf count n.

        Rows ``0 .. n-1`` of the caller-owned buffers receive the leaves to evaluate (B >= G * L):

        - ``pieces``: int8 ``[B, H, 2, k]``: piece lists of the leaf (h = 0), its parent, ...,
          then the game's history before the root; ``-1`` where there is none.
        - ``to_move``: int8 ``[B]``: the player to move at the leaf.
        - ``legal``: int32 ``[B, max_moves]``: policy indices ``piece_id * cells + e`` of the
          leaf's legal moves in the order the priors must come back, 0 beyond ``counts``.
        - ``counts``: int32 ``[B]``: the number of legal moves; 0 when the only legal move is
          the pass (it has no policy index; the prior is ignored, only the value counts).
        - ``states`` (optional): uint8 ``[B, STATE_BYTES]``: the leaves' engine states.
        - ``games`` (optional): int32 ``[B]``: the game each leaf belongs to.

        A descent that ends in a finished game backs up the exact result at once (it counts as
        a simulation and is not in the batch). A game stops taking leaves for this round when a
        descent runs into a leaf already in the batch.
        """
        cdef int g, b = 0, r, leaf = 0, want, cap
        cdef Tree* tr
        cdef bint want_states = states is not None, want_games = games is not None
        cdef bint nomem = False
        if self.num_pending:
            raise RuntimeError("select called twice: expand_and_backup the previous batch first")
        cap = self.num_games * self.leaves_per_game
        if (pieces.shape[0] < cap or pieces.shape[1] != self.history or pieces.shape[2] != self.players
                or pieces.shape[3] != self.k):
            raise ValueError(f"pieces must be int8 [>= {cap}, {self.history}, {self.players}, {self.k}]")
        if to_move.shape[0] < cap or counts.shape[0] < cap:
            raise ValueError(f"to_move and counts need >= {cap} rows")
        if legal.shape[0] < cap or legal.shape[1] < self.max_moves:
            raise ValueError(f"legal must be int32 [>= {cap}, >= {self.max_moves}]")
        if want_states and (states.shape[0] < cap or states.shape[1] != sizeof(CState)):
            raise ValueError(f"states must be uint8 [>= {cap}, {sizeof(CState)}]")
        if want_games and games.shape[0] < cap:
            raise ValueError(f"games needs >= {cap} rows")
        with nogil:
            for g in range(self.num_games):
                tr = &self.trees[g]
                if not tr.active:
                    continue
                want = self.leaves_per_game
                while want > 0 and tr.remaining > 0:
                    r = self._select_one(tr, &leaf)
                    if r == SEL_COLLISION:
                        break
                    if r == SEL_NOMEM:
                        nomem = True
                        break
                    tr.remaining -= 1
                    if r == SEL_LEAF:
                        self.pend_game[b] = g
                        self.pend_node[b] = leaf
                        self._write_leaf(b, g, tr, leaf, pieces, to_move, legal, counts, states, want_states)
                        if want_games:
                            games[b] = g
                        b += 1
                        want -= 1
                if nomem:
                    break
        self.num_pending = b
        if nomem:
            raise MemoryError("search tree arrays could not grow")
        return b

    def expand_and_backup(self, float[:, ::1] priors not None, values not None,
                          float[:, ::1] opponent=None):
        """Expand the leaves of the last :meth:`select` and back their values up.

        - ``priors``: float32 ``[>= n, >= max count]``: row i, entries ``0 .. counts[i]-1``, the
          priors of leaf i's legal moves in the order of ``legal``. They are renormalised over
          the legal moves (negative or non-finite entries count as 0; an all-zero row becomes
          uniform; a single legal move gets 1).
        - ``values``: float32 ``[>= n, P]``: row i, each seat's expected share of the result at
          leaf i, by absolute seat (negative or non-finite entries count as 0, the row is
          renormalised to sum 1, an all-zero row becomes 1/P each); the tree keeps them as
          ``2 * share - 1`` so that two and more players share one scale (two players: the
          mover's entry alone). Two players may also give float32 ``[>= n]``, the fast form of
          the same: the mover's ``2 * share - 1`` in [-1, 1] (clipped; NaN counts as 0), what a
          two-player network's one tanh output and the C playouts give.
        - ``opponent`` (``model_opponent`` only, and then required): float32
          ``[>= n, k * cells]``: row i, the opponent model's logits at leaf i over the reply of
          the player not to move there, by absolute policy index (only their order matters).

        Removes the virtual loss of the batch. A root expanded here with noise pending gets its
        Dirichlet noise now.
        """
        cdef int i, j, g, x, cnt, n = self.num_pending
        cdef Tree* tr
        cdef Node* nd
        cdef double total, p, v
        cdef double vv[MAX_PLAYERS]
        cdef float[::1] v1
        cdef float[:, ::1] vn
        cdef int q, P = self.players, scalar = 0
        if n == 0:
            return
        if P == 2 and np.ndim(values) == 1:  # the two-player fast form: the mover's value
            v1 = values
            vn = None
            scalar = 1
            if priors.shape[0] < n or v1.shape[0] < n:
                raise ValueError(f"priors and values need >= {n} rows")
        else:
            if np.ndim(values) != 2 or np.shape(values)[1] != P:
                raise ValueError(f"values must be float32 [>= {n}, {P}] (one share per seat: {P} players"
                                 + (", or one value per leaf" if P == 2 else "") + f"), got shape {np.shape(values)}")
            vn = values
            v1 = None
            if priors.shape[0] < n or vn.shape[0] < n:
                raise ValueError(f"priors and values need >= {n} rows")
        if self.model_opponent:
            if opponent is None:
                raise ValueError("model_opponent: expand_and_backup needs the leaves' opponent logits")
            if opponent.shape[0] < n or opponent.shape[1] != self.k * self.cells:
                raise ValueError(f"opponent must be float32 [>= {n}, {self.k * self.cells}]")
        for i in range(n):
            if self.trees[self.pend_game[i]].nodes[self.pend_node[i]].num_edges > priors.shape[1]:
                raise ValueError(f"priors has {priors.shape[1]} columns, leaf {i} has more legal moves")
        with nogil:
            for i in range(n):
                g = self.pend_game[i]
                x = self.pend_node[i]
                tr = &self.trees[g]
                nd = &tr.nodes[x]
                cnt = nd.num_edges
                total = 0.0
                for j in range(cnt):
                    p = priors[i, j]
                    if isfinite(p) and p > 0:
                        total += p
                for j in range(cnt):
                    p = priors[i, j]
                    if cnt == 1:
                        p = 1.0
                    elif total > 0:
                        p = p / total if (isfinite(p) and p > 0) else 0.0
                    else:
                        p = 1.0 / cnt
                    tr.edges[nd.first_edge + j].P = <float>p
                nd.status = ST_EXPANDED
                if self.model_opponent:
                    memcpy(&tr.opp[<size_t>x * tr.opp_width], &opponent[i, 0], tr.opp_width * sizeof(float))
                if x == 0 and tr.noise_pending:
                    self._mix_noise(tr)
                if scalar:
                    v = v1[i]
                    if not isfinite(v):
                        v = 0.0
                    v = 1.0 if v > 1.0 else (-1.0 if v < -1.0 else v)
                    self._backup(tr, x, v, 1)
                else:
                    total = 0.0
                    for q in range(P):
                        v = vn[i, q]
                        vv[q] = v if (isfinite(v) and v > 0) else 0.0
                        total += vv[q]
                    for q in range(P):
                        vv[q] = 2.0 * (vv[q] / total if total > 0 else 1.0 / P) - 1.0
                    if P == 2:  # the two-player tree keeps the mover's value only
                        self._backup(tr, x, vv[nd.state.to_move], 1)
                    else:
                        self._backup_vec(tr, x, vv, 1)
            self.num_pending = 0

    # -- results -------------------------------------------------------------------------------

    def root_stats(self, int g, int16_t[:, ::1] moves not None, int32_t[::1] actions not None,
                   int32_t[::1] visits not None, float[::1] q not None, float[::1] prior not None):
        """Statistics of game ``g``'s root edges; returns ``(count, root_visits, root_value)``.

        Row i of ``moves`` (int16 ``[>= count, 2]``), ``actions`` (int32 policy indices),
        ``visits`` (int32), ``q`` (float32, mean value from the root mover's view, NaN if
        unvisited) and ``prior`` (float32, with noise if any) describes legal move i, in the
        engine's move order. ``root_value`` is the mean backed-up value from the root mover's
        view (NaN before any simulation). A root never expanded reports count 0.
        """
        cdef Tree* tr = self._tree(g)
        cdef Node* root = &tr.nodes[0]
        cdef int i, cnt
        cdef Edge* ed
        if root.status != ST_EXPANDED:
            cnt = 0
        else:
            cnt = root.num_edges
        if moves.shape[0] < cnt or moves.shape[1] != 2 or actions.shape[0] < cnt or visits.shape[0] < cnt \
                or q.shape[0] < cnt or prior.shape[0] < cnt:
            raise ValueError(f"root_stats buffers need >= {cnt} rows")
        for i in range(cnt):
            ed = &tr.edges[root.first_edge + i]
            moves[i, 0] = ed.s
            moves[i, 1] = ed.e
            actions[i] = ed.action
            visits[i] = ed.N
            q[i] = ed.W / ed.N if ed.N > 0 else float("nan")
            prior[i] = ed.P
        return cnt, tr.root_N, (tr.root_W / tr.root_N if tr.root_N > 0 else float("nan"))

    def root_value_vector(self, int g):
        """float32 ``[P]``: the mean backed-up expected share of each absolute seat at game
        ``g``'s root (three or more players; NaN before any simulation). For two players, the
        root mover's mean value v as the shares ``((1 + v) / 2, (1 - v) / 2)`` in seat order."""
        cdef Tree* tr = self._tree(g)
        cdef int q, P = self.players
        out = np.full(P, np.nan, dtype=np.float32)
        if tr.root_N == 0:
            return out
        if P == 2:
            v = tr.root_W / tr.root_N
            if tr.nodes[0].state.to_move == 1:
                v = -v
            out[0] = (1.0 + v) / 2.0
            out[1] = (1.0 - v) / 2.0
            return out
        for q in range(P):
            out[q] = (1.0 + tr.root_Wv[q] / tr.root_N) / 2.0
        return out

    def root_proofs(self, int g, int8_t[::1] out not None):
        """Solver proofs of game ``g``'s root edges, in :meth:`root_stats` order, from the root
        mover's view (+1 the move wins, -1 it loses, 0 unknown); returns their count."""
        cdef Tree* tr = self._tree(g)
        cdef Node* root = &tr.nodes[0]
        cdef int i, c, cnt = root.num_edges if root.status == ST_EXPANDED else 0
        if out.shape[0] < cnt:
            raise ValueError(f"root_proofs needs >= {cnt} rows")
        for i in range(cnt):
            c = tr.edges[root.first_edge + i].child
            out[i] = self._proof_for(tr, c, root.state.to_move) if c >= 0 else 0
        return cnt

    def root_moves(self, int g, int16_t[:, ::1] out not None):
        """Legal moves of game ``g``'s root into ``out`` (int16 ``[>= max_moves, 2]``, engine
        order, the pass as ``(-1, -1)``); returns their count (0 when the game is over)."""
        cdef Tree* tr = self._tree(g)
        cdef int cnt, i
        if out.shape[0] < self.max_moves or out.shape[1] != 2:
            raise ValueError(f"out must be int16 [>= {self.max_moves}, 2]")
        cnt = generate_moves(self.t, &tr.nodes[0].state, self.movebuf)
        for i in range(cnt):
            out[i, 0] = self.movebuf[2 * i]
            out[i, 1] = self.movebuf[2 * i + 1]
        return cnt

    def root_state(self, int g):
        """``(to_move, ply, pieces int8 [P, k])`` of game ``g``'s root (P = players)."""
        cdef Tree* tr = self._tree(g)
        out = np.empty((self.players, self.k), dtype=np.int8)
        cdef int8_t[:, ::1] o = out
        cdef int p, j
        for p in range(self.players):
            for j in range(self.k):
                o[p, j] = tr.nodes[0].pieces[p][j]
        return tr.nodes[0].state.to_move, tr.nodes[0].state.ply, out

    def root_history(self, int g):
        """int8 ``[H, P, k]``: the root's piece list and the game's earlier ones (-1 missing)."""
        cdef Tree* tr = self._tree(g)
        out = np.empty((self.history, self.players, self.k), dtype=np.int8)
        cdef int8_t[:, :, ::1] o = out
        cdef int h, p, j
        for h in range(self.history):
            for p in range(self.players):
                for j in range(self.k):
                    o[h, p, j] = tr.history[h * _BLOCK + p * MAX_PIECES + j]
        return out

    def tree_size(self, int g):
        """``(nodes, edges, bytes allocated)`` of game ``g``'s tree."""
        cdef Tree* tr = self._tree(g)
        return (tr.n_nodes, tr.n_edges,
                tr.cap_nodes * sizeof(Node) + tr.cap_edges * sizeof(Edge) + self.history * _BLOCK)

    def node_edges(self, int g, path=()):
        """Edges of the node reached from game ``g``'s root by ``path`` (a sequence of ``(s, e)``
        moves), or None when the path leaves the expanded tree. For tests and inspection.

        Returns ``(moves int16 [n, 2], visits int32 [n], value_sums float32 [n] (mover's view),
        priors float32 [n], visits of the node itself)``.
        """
        cdef Tree* tr = self._tree(g)
        cdef int x = 0, i, found, n_node
        cdef Edge* ed
        for mv in path:
            if tr.nodes[x].status != ST_EXPANDED:
                return None
            found = -1
            for i in range(tr.nodes[x].num_edges):
                ed = &tr.edges[tr.nodes[x].first_edge + i]
                if ed.s == mv[0] and ed.e == mv[1]:
                    found = tr.nodes[x].first_edge + i
                    break
            if found < 0 or tr.edges[found].child < 0:
                return None
            x = tr.edges[found].child
        if tr.nodes[x].status != ST_EXPANDED:
            return None
        n_node = tr.root_N if x == 0 else tr.edges[tr.nodes[x].parent_edge].N
        cnt = tr.nodes[x].num_edges
        moves = np.empty((cnt, 2), dtype=np.int16)
        visits = np.empty(cnt, dtype=np.int32)
        wsum = np.empty(cnt, dtype=np.float32)
        priors = np.empty(cnt, dtype=np.float32)
        for i in range(cnt):
            ed = &tr.edges[tr.nodes[x].first_edge + i]
            moves[i, 0] = ed.s
            moves[i, 1] = ed.e
            visits[i] = ed.N
            wsum[i] = ed.W
            priors[i] = ed.P
        return moves, visits, wsum, priors, n_node

    def check_invariants(self, int g):
        """Assert the tree's bookkeeping (for tests): visit sums, no virtual loss left, links."""
        cdef Tree* tr = self._tree(g)
        cdef int x, i, total, nvis
        cdef Node* nd
        cdef Edge* ed
        if self.num_pending:
            raise AssertionError("batch pending")
        if tr.root_vloss != 0:
            raise AssertionError(f"root virtual loss {tr.root_vloss}")
        for x in range(tr.n_nodes):
            nd = &tr.nodes[x]
            nvis = tr.root_N if x == 0 else tr.edges[nd.parent_edge].N
            if x > 0 and tr.edges[nd.parent_edge].child != x:
                raise AssertionError(f"node {x}: parent edge does not point back")
            if nd.status == ST_EXPANDED:
                total = 0
                for i in range(nd.num_edges):
                    ed = &tr.edges[nd.first_edge + i]
                    if ed.vloss != 0:
                        raise AssertionError(f"node {x}: virtual loss left on an edge")
                    if ed.N > 0 and ed.child < 0:
                        raise AssertionError(f"node {x}: visited edge without child")
                    total += ed.N
                # one visit expanded the node; every later one went to a child, except that
                # the solver stops a descent at a proven node (below the root)
                if total != nvis - 1 and not (self.solver and x > 0 and nd.proven != 0 and total < nvis):
                    raise AssertionError(f"node {x}: children visits {total} != node visits {nvis} - 1")
            elif nd.status == ST_PENDING:
                raise AssertionError(f"node {x} pending")
        return True
