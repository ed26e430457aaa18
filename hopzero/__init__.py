"""hopzero: configuration, command line and driver tying ccengine, actors, learner and evaluator together."""

__version__ = "0.1.0"
