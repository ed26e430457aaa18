"""Ray self-play actors.

What will live here (see docs/ARCHITECTURE.md): actors that each own G concurrent games, step
them together through the batched tree search with one network call per step, pull the newest
best weights between moves, and stream finished game records into the replay buffer; plus the
heuristic-guided (stage 1) data generator of the seed paper.
"""
