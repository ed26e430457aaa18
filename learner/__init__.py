"""The network and its training.

What lives here: the PyTorch residual policy/value network (the seed paper's ``paper`` model and
configurable variants), batched inference with legal-move masking, and, later, the learner loop
(loss, optimiser, checkpoints, weight publishing) and the replay-buffer client.
"""
