"""``hopzero train``: the whole training system (``hopzero.train``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .args import CliError, int_arg


def add_parser(sub: Any) -> None:
    from hopzero.config import CONFIG_NAMES

    p = sub.add_parser("train", help="train by self-play (Ray actors, replay buffer, learner, 55%% gate)")
    p.add_argument("--config", choices=CONFIG_NAMES, default="fast",
                   help="training configuration (hopzero/configs; docs/TRAINING.md): demo (minutes), fast (ours, "
                        "the default), paper (Table 1), dqn (the paper's Deep Q-learning baseline), star2, star3, "
                        "star4, star6 (the star for 2, 3, 4, 6 players)")
    p.add_argument("--preset", metavar="P", default=None, help="the game (default: the config's; fast/demo: cc49)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="change a config field, e.g. --set learner.lr=0.01 (repeatable)")
    p.add_argument("--ray-address", metavar="ADDR", default=None, help="join this Ray cluster (default: local Ray)")
    p.add_argument("--redis-url", metavar="URL", default=None,
                   help="use this Redis as the replay buffer (implies --set replay.backend=redis); no password "
                        "in it: the password comes from $HOPZERO_REDIS_PASSWORD or --redis-password-file")
    p.add_argument("--redis-password-file", metavar="FILE", default=None,
                   help="the Redis password, on the first line of FILE (instead of $HOPZERO_REDIS_PASSWORD)")
    p.add_argument("--seed", type=int_arg(0), default=None, metavar="S", help="seed (default: the config's, 0)")
    p.add_argument("--run-dir", metavar="DIR", default=None,
                   help="run directory (default runs/CONFIG-PRESET); an existing one is resumed")
    p.add_argument("--init-model", metavar="MODEL", default=None,
                   help="start a new run from this network (a network file, a run directory's best model, "
                        "or 'shipped') instead of stage 1 or random weights")
    p.add_argument("--json", action="store_true", help="print the final summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import signal

    # The first Ctrl-C stops the run at any stage, even in a process started with SIGINT ignored
    # (a `&` in a script): loading the config imports torch, which takes seconds.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from hopzero.config import ConfigError, load_config
    from hopzero.train import TrainingFailed, redis_password, refuse_password_in_url, train

    overrides = list(args.overrides)
    if args.redis_url:
        overrides.append("replay.backend=redis")
    try:
        if args.redis_url:
            refuse_password_in_url(args.redis_url, "--redis-url")
        password = redis_password(args.redis_password_file)
        config = load_config(args.config, preset_name=args.preset, overrides=overrides, seed=args.seed)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    run_dir = args.run_dir or os.path.join("runs", f"{config.name}-{config.preset}")
    try:
        summary = train(config, run_dir=run_dir, ray_address=args.ray_address, redis_url=args.redis_url,
                        redis_password=password, init_model=args.init_model,
                        out=sys.stderr if args.json else sys.stdout)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    except TrainingFailed as exc:  # a component kept failing: the run stopped, not the user's typing
        sys.stderr.write(f"hopzero train: error: {exc}\n")
        return 1
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "text"}))
    return 0
