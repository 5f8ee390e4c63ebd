"""``jaxcontrol train`` and ``jaxcontrol evaluate``.

    jaxcontrol train --env cartpole-balance --agent ppo --steps 2000000 --seed 0 --out runs/a
    jaxcontrol train ... --out runs/a --resume      # continue from the latest checkpoint
    jaxcontrol evaluate runs/a --episodes 100       # re-evaluate into runs/a/eval.json

Bad arguments give one line ``error: ...`` on stderr and exit status 2,
before anything is written. Config fields can be overridden with
``--set name=value`` (repeatable), e.g. ``--set num_envs=64``.
Multi-host: pass ``--distributed`` on every host (``jax.distributed.initialize``
reads the cluster from the environment, e.g. SLURM or the TPU metadata), or
name it by hand with ``--coordinator HOST:PORT --num-processes N --process-id I``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Any

from jaxcontrol.agents.registry import AGENTS, get_agent


class UsageError(Exception):
    """A bad command line; reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _parse_env(name: str) -> tuple[str, str]:
    import jaxcontrol  # pylint: disable=import-outside-toplevel
    from jaxcontrol.registry import unknown_name  # pylint: disable=import-outside-toplevel

    parts = name.split("-")
    if len(parts) != 2 or tuple(parts) not in jaxcontrol.ALL_TASKS:
        valid = [f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS]
        raise UsageError(str(unknown_name("env", name, valid, where=" (DOMAIN-TASK)")))
    return parts[0], parts[1]


def _convert(field: dataclasses.Field, text: str) -> Any:
    default = field.default
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if isinstance(default, int):
            return int(float(text)) if "e" in text.lower() else int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, tuple):
            return tuple(int(x) for x in text.split(",") if x)
        return text
    except ValueError as e:
        raise UsageError(f"bad value {text!r} for {field.name}") from e


def build_config(agent: str, steps: int, overrides: list[str]):
    """The agent's config with ``total_env_steps`` and ``name=value`` overrides.

    Raises:
      UsageError: for an unknown field, a bad value or a failed validation.
    """
    config_cls = get_agent(agent).config_cls
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    values: dict[str, Any] = {"total_env_steps": steps}
    for item in overrides:
        name, sep, text = item.partition("=")
        if not sep:
            raise UsageError(f"--set expects name=value, got {item!r}")
        if name not in fields:
            raise UsageError(
                f"unknown {agent} config field {name!r}; valid: {', '.join(sorted(fields))}"
            )
        values[name] = _convert(fields[name], text)
    try:
        return config_cls(**values)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from e


def _check_writable(out: str) -> bool:
    """Makes sure ``out`` is a writable directory; returns whether it was created."""
    created = not os.path.exists(out)
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".write-probe")
        with open(probe, "w") as f:
            f.write("ok")
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"cannot write to --out {out!r}: {e.strerror or e}") from e
    return created


def _make_mesh(devices: int | None):
    import jax  # pylint: disable=import-outside-toplevel

    from jaxcontrol.agents.common import sharding  # pylint: disable=import-outside-toplevel

    count = jax.device_count() if devices is None else devices
    if count < 1 or count > jax.device_count():
        raise UsageError(f"--devices {count}: only {jax.device_count()} devices exist")
    return sharding.make_mesh(count) if count > 1 else None


def _train_parser() -> _Parser:
    p = _Parser(prog="jaxcontrol train", description="Train an agent on a suite task.")
    p.add_argument("--env", required=True, help="DOMAIN-TASK, e.g. cartpole-balance")
    p.add_argument("--agent", required=True, help=f"one of {', '.join(AGENTS)}")
    p.add_argument("--steps", required=True, type=float, help="environment steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--resume", action="store_true", help="continue the run in --out")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a config field (repeatable)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        default=100,
        metavar="K",
        help="save every K updates (rounded up to whole chunks)",
    )
    p.add_argument("--eval-episodes", type=int, default=100)
    p.add_argument(
        "--devices",
        type=int,
        default=None,
        help="shard envs over this many local devices (default: all)",
    )
    p.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize() first (multi-host); the cluster is "
        "auto-detected (SLURM, Open MPI, TPU...) unless the next three flags are given",
    )
    p.add_argument("--coordinator", default=None, metavar="HOST:PORT", help="process 0's address")
    p.add_argument("--num-processes", type=int, default=None, help="processes in the run")
    p.add_argument("--process-id", type=int, default=None, help="this process's index")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return p


def train_main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol train``; returns the exit status."""
    try:
        args = _train_parser().parse_args(argv)
        if args.agent not in AGENTS:
            raise UsageError(f"unknown agent {args.agent!r}; choose from {', '.join(AGENTS)}")
        if not args.steps > 0 or args.steps != int(args.steps):
            raise UsageError(f"--steps must be a positive integer, got {args.steps:g}")
        hand_set = (args.coordinator, args.num_processes, args.process_id)
        if any(v is not None for v in hand_set) and not args.distributed:
            raise UsageError("--coordinator, --num-processes and --process-id need --distributed")
        if args.eval_episodes < 1 or args.checkpoint_every < 1:
            raise UsageError("--eval-episodes and --checkpoint-every must be positive")
        domain, task = _parse_env(args.env)
        config = build_config(args.agent, int(args.steps), args.set)
        run_info = {
            "env": args.env,
            "agent": args.agent,
            "seed": args.seed,
            "config": _config_dict(config),
        }
        run_json = os.path.join(args.out, "run.json")
        if args.resume:
            if not os.path.exists(run_json):
                raise UsageError(f"--resume: no run in {args.out!r} (run.json missing)")
            with open(run_json) as f:
                saved = json.load(f)
            diffs = _differences(saved, run_info)
            if diffs:
                raise UsageError(f"--resume with a different config: {'; '.join(diffs)}")
        elif os.path.exists(run_json):
            raise UsageError(
                f"{args.out!r} already holds a run; pass --resume or choose another --out"
            )
        created = _check_writable(args.out)
        try:
            if args.distributed:
                import jax  # pylint: disable=import-outside-toplevel

                jax.distributed.initialize(
                    coordinator_address=args.coordinator,
                    num_processes=args.num_processes,
                    process_id=args.process_id,
                )
            mesh = _make_mesh(args.devices)
            import jaxcontrol  # pylint: disable=import-outside-toplevel

            env = jaxcontrol.load(domain, task)
            learner = get_agent(args.agent).make_learner(config, env, mesh=mesh)
        except (UsageError, ValueError):
            if created:
                os.rmdir(args.out)
            raise
    except (UsageError, ValueError) as e:  # ValueError: config or mesh validation
        return _fail(str(e))

    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    if not args.resume and _is_main_process():
        run_lib.write_atomic(run_json, json.dumps(run_info, indent=2) + "\n")
    every = max(1, -(-args.checkpoint_every // learner.updates_per_chunk))
    state, meta = run_lib.train_loop(
        learner,
        args.out,
        args.seed,
        checkpoint_every_chunks=every,
        resume=args.resume,
        progress=not args.no_progress,
    )
    result = run_lib.evaluate_policy(
        env, learner, learner.policy_params(state), args.seed, args.eval_episodes
    )
    if _is_main_process():
        _write_eval(args.out, result, meta, domain, task)
    print(
        f"eval: mean_return {result['mean_return']:.1f} +- {result['stderr']:.1f} "
        f"over {result['episodes']} episodes after {meta['env_steps']} env steps "
        f"({meta['wall_seconds']:.0f} s)"
    )
    _print_published(domain, task)
    return 0


def _is_main_process() -> bool:
    """Only process 0 writes run files in a multi-host run."""
    import jax  # pylint: disable=import-outside-toplevel

    return jax.process_index() == 0


def _config_dict(config) -> dict:
    from jaxcontrol.agents.common.config import to_dict  # pylint: disable=import-outside-toplevel

    return to_dict(config)


def _differences(saved: dict, current: dict) -> list[str]:
    diffs = []
    for key in ("env", "agent", "seed"):
        if saved.get(key) != current[key]:
            diffs.append(f"{key} {saved.get(key)!r} != {current[key]!r}")
    old, new = saved.get("config", {}), current["config"]
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            diffs.append(f"{name} {old.get(name)!r} != {new.get(name)!r}")
    return diffs


def _print_published(domain: str, task: str) -> None:
    """One line of the suite report's scores for the task, if it has any."""
    from jaxcontrol import baselines  # pylint: disable=import-outside-toplevel

    reference = baselines.reference(domain, task)
    if reference is None:
        return
    published = ", ".join(
        f"{agent.upper()} {s['mean']:.1f} +- {s['stderr']:.1f}"
        for agent, s in reference["after_1e8_steps"].items()
    )
    print(f"published after 1e8 steps (tech report, Table 1): {published}")


def _write_eval(run_dir: str, result: dict, meta: dict, domain: str, task: str) -> None:
    from jaxcontrol import baselines  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    payload = {
        "mean_return": result["mean_return"],
        "stderr": result["stderr"],
        "episodes": result["episodes"],
        "env_steps": meta["env_steps"],
        "wall_seconds": meta["wall_seconds"],
        "eval_seconds": result["eval_seconds"],
        "returns": result["returns"],
        "evaluated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "env": f"{domain}-{task}",
        # The suite report's mean and standard error over seeds, same protocol (None if the
        # task was not among its benchmarks).
        "published": baselines.reference(domain, task),
    }
    run_lib.write_atomic(os.path.join(run_dir, "eval.json"), json.dumps(payload, indent=2) + "\n")
    run_lib.plot_learning_curve(run_dir, payload)


def evaluate_main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol evaluate``: re-evaluates the latest checkpoint."""
    p = _Parser(
        prog="jaxcontrol evaluate",
        description="Re-evaluate a run's latest checkpoint into DIR/eval.json.",
    )
    p.add_argument("dir")
    p.add_argument("--episodes", type=int, default=100)
    try:
        args = p.parse_args(argv)
        if args.episodes < 1:
            raise UsageError("--episodes must be positive")
        run_json = os.path.join(args.dir, "run.json")
        if not os.path.exists(run_json):
            raise UsageError(f"no run in {args.dir!r} (run.json missing)")
        with open(run_json) as f:
            info = json.load(f)
        domain, task = _parse_env(info["env"])
        from jaxcontrol.agents.common.config import config_from_dict  # pylint: disable=import-outside-toplevel

        config = config_from_dict(get_agent(info["agent"]).config_cls, info["config"])
    except (UsageError, ValueError, KeyError) as e:
        return _fail(str(e))

    import jax  # pylint: disable=import-outside-toplevel

    import jaxcontrol  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import checkpoint as ckpt_lib  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    env = jaxcontrol.load(domain, task)
    learner = get_agent(info["agent"]).make_learner(config, env)
    checkpointer = ckpt_lib.Checkpointer(os.path.join(args.dir, "checkpoints"))
    step = checkpointer.latest_step()
    if step is None:
        return _fail(f"no checkpoint in {args.dir!r}")
    train_key, _ = run_lib.split_run_key(info["seed"])
    abstract = ckpt_lib.abstract_single_device(
        jax.eval_shape(lambda k: learner.policy_params(learner.init(k)), train_key)
    )
    params, meta = checkpointer.restore_policy(step, abstract)
    checkpointer.close()
    result = run_lib.evaluate_policy(env, learner, params, info["seed"], args.episodes)
    _write_eval(args.dir, result, meta, domain, task)
    print(
        f"eval: mean_return {result['mean_return']:.1f} +- {result['stderr']:.1f} "
        f"over {result['episodes']} episodes (checkpoint {step}, "
        f"{meta['env_steps']} env steps)"
    )
    _print_published(domain, task)
    return 0
