"""Self-play: the paper's stage-1 greedy games (``heuristic``), stage-2 batched tree-search
games (``selfplay``), both plain classes, and the Ray service that runs them and streams the
finished games into the replay buffer (``service``), configured by ``config``."""
