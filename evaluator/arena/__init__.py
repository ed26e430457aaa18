"""Matches between any number of players under the seed paper's evaluation protocol.

``schedule``: which game is which (seeds, seats, the shared random opening); ``runner``: the
scheduler that plays games in flight and batches the search players; ``workers``: the same on
several processes; ``results``: the finished games and the match's summary; ``match``: the one
entry point, :func:`play_match`, for two players as for six.
"""

from .match import check_match_options, play_match
from .results import MatchGame, MatchResult, PlayerRecord, SideRecord
from .runner import Side
from .schedule import SEATINGS, game_seeds, seat_of, set_seatings

__all__ = [
    "SEATINGS", "MatchGame", "MatchResult", "PlayerRecord", "Side", "SideRecord", "check_match_options", "game_seeds",
    "play_match", "seat_of", "set_seatings",
]
