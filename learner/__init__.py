"""The network and everything that trains it or reads what training wrote.

The residual policy/value network (``model``) and its batched inference (``inference``), the
network as the search's evaluator (``network_evaluator``) and as the ``mcts`` player
(``network_player``), the training step and checkpoints (``training``, ``checkpoint``), game
records and the replay buffer package (``records``, ``replay``), model files and the run
directory's shared files (``model_files``, ``run_files``), metrics and logging for every process
(``metrics``, ``logs``), and the learner's Ray service (``service``). Depends on ``ccengine``
only; ``actors``, ``evaluator`` and ``hopzero`` build on it.
"""
