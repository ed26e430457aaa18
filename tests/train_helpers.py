"""The tiny training configuration the system tests share (test_train_system, test_multinode,
test_deploy_compose, test_deploy_observe): within a minute or two on a loaded 2-core machine the
learner steps, checkpoints are written, candidates are gated and greedy is measured."""

TINY = [
    "network.size=tiny",
    "stage1.games=120",
    "stage1.steps=40",
    "search.num_simulations=12",
    "selfplay.games_per_actor=8",
    "replay.min_positions=200",
    "replay.error_buffer=512",
    "learner.batch_size=32",
    "learner.checkpoint_every_steps=50",
    "evaluation.candidate_every_steps=60",
    "evaluation.simulations=6",
    "evaluation.parallel_games=4",
    "evaluation.greedy_games=2",
    "evaluation.gate.games=2",
    "evaluation.gate.min_games=2",
    "run.progress_every_s=2",
]

#: Any complete pair promotes: for tests of the promotion mechanism, not of strength.
PROMOTE_ANY = "evaluation.gate.threshold=0.01"
