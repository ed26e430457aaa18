"""Evaluation: arena matches under the seed's protocol, gating, and the Elo ladder.

The arena (``evaluator.arena``) plays any two players against each other with random opening
moves and alternating sides. Gating (55% over complete pairs of games, optional SPRT) and the Elo
ladder anchored at ``greedy`` = 0 will live here too.
"""
