"""What every room of hopzero shares below them all: checked config fields (``fields``), the run
directory's shared files (``run_files``), Prometheus metrics (``metrics``) and logging (``logs``).
No game, no network, no Ray: the rooms (ccengine <- learner <- actors, evaluator <- hopzero) build on
it, and it imports none of them."""
