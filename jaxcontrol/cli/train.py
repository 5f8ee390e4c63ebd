"""``jaxcontrol train``: train an agent on a suite task into a run directory.

    jaxcontrol train --env cartpole-balance --agent ppo --steps 2000000 --seed 0 --out runs/a
    jaxcontrol train ... --out runs/a --resume      # continue from the latest checkpoint
    jaxcontrol train ... --steps 4000000 --out runs/a --resume   # extend the run's budget
    jaxcontrol train --env walker-walk --agent sac --action-repeat 2 ...
    jaxcontrol train --env cartpole-balance --agent d4pg --pixels ...   # 3 stacked 84x84 frames

Config fields can be overridden with ``--set name=value`` (repeatable), e.g.
``--set num_envs=64``. SIGINT or SIGTERM stops training after the current chunk
and a checkpoint (exit status 128 + the signal's number) and prints the command
that resumes; a failed write (a full disk) or checkpoints that cannot be trusted
stop it with one line ``error: ...`` and exit status 1.
Multi-host: pass ``--distributed`` on every host (``jax.distributed.initialize``
reads the cluster from the environment, e.g. SLURM or the TPU metadata), or
name it by hand with ``--coordinator HOST:PORT --num-processes N --process-id I``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import socket
import sys

from jaxcontrol.agents.registry import AGENTS
from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli import compile_cache
from jaxcontrol.cli.args import INT_MAX, SEED_MAX, UsageError, fail, integer
from jaxcontrol.user_input import parse_whole_number

SUMMARY = "train an agent (PPO, SAC, D4PG) on a task into a run directory"


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol train``."""
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

    p = args_lib.Parser(prog="jaxcontrol train", description="Train an agent on a suite task.")
    args_lib.add_env(p, required=True)
    p.add_argument("--agent", required=True, help=f"one of {', '.join(AGENTS)}")
    p.add_argument(
        "--steps", required=True, type=integer(1, 10**15), help="environment steps, e.g. 1e6"
    )
    p.add_argument("--seed", type=integer(0, SEED_MAX), default=0)
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument(
        "--action-repeat",
        type=integer(1, run_dir.MAX_ACTION_REPEAT),
        default=1,
        metavar="K",
        help="repeat each action K control steps (jaxcontrol.wrappers.ActionRepeat); "
        "--steps then counts the learner's steps, each K control steps, and D4PG's "
        "default value support (v_min, v_max) scales by K",
    )
    p.add_argument(
        "--pixels",
        action="store_true",
        help="learn from pixels: 84x84 images of camera 0, 3 frames stacked, through a "
        f"convolutional encoder ({', '.join(run_dir.PIXEL_AGENTS)}); the replay then defaults "
        f"to {run_dir.PIXEL_DEFAULTS['replay_capacity']} transitions",
    )
    p.add_argument(
        "--backend",
        help="physics: mjx (any device) or mujoco (dm_control's C MuJoCo on the host's CPU "
        "threads, behind the same jitted step). Default: mujoco when JAX runs on the CPU "
        "(the faster there: docs/backends.md), mjx on an accelerator or with --distributed; "
        "--resume keeps the run's",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out from its latest checkpoint; a larger --steps "
        "than the run's extends it",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a config field (repeatable)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=integer(1, INT_MAX),
        default=100,
        metavar="K",
        help="save every K updates (rounded up to whole chunks)",
    )
    p.add_argument(
        "--eval-episodes",
        type=integer(1, INT_MAX),
        default=100,
        help="episodes of the final evaluation (eval.json); the suite paper's protocol is 100",
    )
    p.add_argument(
        "--eval-every",
        type=integer(0, 10**15),
        default=0,
        metavar="N",
        help="also evaluate the policy after the first chunk that reaches each multiple of N "
        "env steps, into metrics.jsonl's eval_* entries (0, the default: never)",
    )
    p.add_argument(
        "--eval-every-episodes",
        type=integer(1, INT_MAX),
        default=10,
        metavar="K",
        help="episodes of each --eval-every evaluation",
    )
    p.add_argument(
        "--devices",
        type=integer(1, INT_MAX),
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
    p.add_argument(
        "--num-processes", type=integer(1, INT_MAX), default=None, help="processes in the run"
    )
    p.add_argument(
        "--process-id", type=integer(0, INT_MAX), default=None, help="this process's index"
    )
    compile_cache.add_flag(p)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--video",
        action="store_true",
        help="write an evaluation episode as DIR/video.mp4 at the end (needs jaxcontrol[video])",
    )
    return p


def extra_missing(command: str) -> int | None:
    """Exit status 2 and one line naming the agents extra, if a module of it is missing."""
    from jaxcontrol.agents import extras  # pylint: disable=import-outside-toplevel

    text = extras.message(f"jaxcontrol {command}")
    return None if text is None else fail(text)


def check_writable(out: str) -> bool:
    """Makes sure ``out`` is a writable directory; returns whether it was created.

    The probe file is named for this host and process: the processes of a multi-host
    run share ``out``, and one probe name would let one process delete another's.
    """
    created = not os.path.exists(out)
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, f".write-probe.{socket.gethostname()}.{os.getpid()}")
        with open(probe, "w") as f:
            f.write("ok")
        os.unlink(probe)
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise UsageError(
            f"cannot write to --out {out!r}: {getattr(e, 'strerror', None) or e}"
        ) from e
    return created


def default_backend(args: argparse.Namespace) -> str:
    """A resumed run's own backend, else the machine's (`cpu_physics.default_backend`).

    A --distributed run defaults to MJX: asking JAX for its platform would start
    the backend before `jax.distributed.initialize`, which JAX forbids, and
    multi-host runs are accelerator runs.
    """
    from jaxcontrol import cpu_physics  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

    if args.resume:  # a missing or damaged run.json stops here, named
        return run_dir.backend(read_for_resume(args.out))
    if args.distributed:
        return "mjx"
    return cpu_physics.default_backend()


def read_for_resume(out: str) -> dict:
    """The run.json that ``--resume`` continues; its problems as usage errors."""
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

    try:
        return run_dir.read_run_json(out)
    except run_dir.RunDirError as e:
        raise UsageError(f"--resume: {e}") from e


def _make_mesh(devices: int | None):
    import jax  # pylint: disable=import-outside-toplevel

    from jaxcontrol.agents.common import sharding  # pylint: disable=import-outside-toplevel

    count = jax.device_count() if devices is None else devices
    if count > jax.device_count():
        raise UsageError(
            f"--devices {count}: only {jax.device_count()} devices exist "
            f"(valid: 1 to {jax.device_count()})"
        )
    return sharding.make_mesh(count) if count > 1 else None


def _check_distributed(args: argparse.Namespace) -> None:
    hand_set = (args.coordinator, args.num_processes, args.process_id)
    if any(v is not None for v in hand_set) and not args.distributed:
        raise UsageError("--coordinator, --num-processes and --process-id need --distributed")
    if args.coordinator is not None:
        host, _, port = args.coordinator.rpartition(":")
        port_number = parse_whole_number(port)
        if not host or port_number is None or not 1 <= port_number <= 65535:
            raise UsageError(
                f"--coordinator expects HOST:PORT with PORT in [1, 65535], got {args.coordinator!r}"
            )
    pid, count = args.process_id, args.num_processes
    if pid is not None and count is not None and pid >= count:
        raise UsageError(
            f"--process-id must be in [0, {args.num_processes - 1}] "
            f"for --num-processes {args.num_processes}, got {args.process_id}"
        )


def check_video() -> None:
    """Fails before training if the end's video could not be written."""
    from jaxcontrol.render import gl, video  # pylint: disable=import-outside-toplevel

    try:
        video.require_encoder()
        gl.require()
    except (ImportError, gl.RenderingUnavailable) as e:
        raise UsageError(f"--video: {e}") from e


def write_video(run_dir: str, env, learner, params, seed: int) -> None:
    """One evaluation episode (the deterministic policy) as ``run_dir/video.mp4``."""
    from jaxcontrol.render import video  # pylint: disable=import-outside-toplevel

    path = os.path.join(run_dir, "video.mp4")
    seconds = env.episode_length * env.control_timestep
    frames = video.record(env, path, seconds, learner.policy, params, seed=seed)
    print(f"video: {path} ({frames} frames)")


def _is_main_process() -> bool:
    """Only process 0 writes run files in a multi-host run."""
    import jax  # pylint: disable=import-outside-toplevel

    return jax.process_index() == 0


def _with_resume(argv: list[str]) -> list[str]:
    return list(argv) if "--resume" in argv else [*argv, "--resume"]


def print_published(domain: str, task: str) -> None:
    """One line of the suite report's scores for the task, if it has any."""
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

    line = run_dir.published_line(domain, task)
    if line is not None:
        print(line)


def _prepare(args: argparse.Namespace):
    """Checks the command line against the machine and the run directory, and builds the
    run's pieces: (domain, task, run_info, extended_from, env, learner).

    Raises:
      UsageError, ValueError: a bad command line, before anything is written.
    """
    from jaxcontrol import (
        cpu_physics,  # pylint: disable=import-outside-toplevel
        registry,  # pylint: disable=import-outside-toplevel
    )
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.registry import get_agent  # pylint: disable=import-outside-toplevel

    if args.agent not in AGENTS:
        raise UsageError(str(registry.unknown_name("agent", args.agent, AGENTS)))
    if args.pixels and args.agent not in run_dir.PIXEL_AGENTS:
        raise UsageError(
            f"--pixels: {args.agent} learns from state observations only; "
            f"the agents that learn from pixels are {', '.join(run_dir.PIXEL_AGENTS)}"
        )
    _check_distributed(args)
    if args.backend is None:
        args.backend = default_backend(args)
    cpu_physics.check_backend(args.backend)
    domain, task = args_lib.parse_env(args.env)
    if args.video:
        check_video()
    try:
        defaults = run_dir.run_defaults(args.agent, args.pixels, args.action_repeat)
        config = run_dir.build_config(args.agent, args.steps, args.set, defaults)
    except run_dir.RunDirError as e:
        raise UsageError(str(e)) from e
    info = run_dir.run_info(
        args.env, args.agent, args.seed, config, args.action_repeat, args.pixels, args.backend
    )
    extended_from = None  # the run's budget, when --steps extends it
    if args.resume:
        saved = read_for_resume(args.out)
        diffs = run_dir.differences(saved, info)
        if diffs:
            raise UsageError(f"--resume with a different config: {'; '.join(diffs)}")
        try:
            extended_from = run_dir.extended_from(saved, config)
        except run_dir.RunDirError as e:
            raise UsageError(f"--resume with --steps {args.steps}: {e}") from e
    elif run_dir.holds_run(args.out):
        raise UsageError(f"{args.out!r} already holds a run; pass --resume or choose another --out")
    created = check_writable(args.out)
    try:
        compile_cache.use(args.compile_cache)  # once the command line is known to be valid
        if args.distributed:
            import jax  # pylint: disable=import-outside-toplevel

            jax.distributed.initialize(
                coordinator_address=args.coordinator,
                num_processes=args.num_processes,
                process_id=args.process_id,
            )
        mesh = _make_mesh(args.devices)
        env = run_dir.make_env(domain, task, args.action_repeat, args.pixels, args.backend)
        learner = get_agent(args.agent).make_learner(config, env, mesh=mesh)
        if extended_from is not None:
            before = dataclasses.replace(config, total_env_steps=extended_from)
            try:
                run_dir.check_same_chunks(
                    learner, get_agent(args.agent).make_learner(before, env, mesh=mesh)
                )
            except run_dir.RunDirError as e:
                raise UsageError(f"--resume with a larger --steps: {e}") from e
    except (UsageError, ValueError):
        if created:
            os.rmdir(args.out)
        raise
    return domain, task, info, extended_from, env, learner


def main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol train``; returns the exit status."""
    status = extra_missing("train")
    if status is not None:
        return status
    try:
        args = parser().parse_args(argv)
        domain, task, info, extended_from, env, learner = _prepare(args)
    except (UsageError, ValueError) as e:  # ValueError: config or mesh validation
        return fail(str(e))

    from jaxcontrol.agents.common import checkpoint as ckpt_lib  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

    resume = f"resume with: jaxcontrol train {shlex.join(_with_resume(argv))}"
    try:
        if (not args.resume or extended_from is not None) and _is_main_process():
            if extended_from is not None:
                print(
                    f"resume: extending the run from {extended_from} to {args.steps} env steps",
                    file=sys.stderr,
                )
            run_lib.write_atomic(
                os.path.join(args.out, "run.json"), json.dumps(info, indent=2) + "\n"
            )
        every = max(1, -(-args.checkpoint_every // learner.updates_per_chunk))
        state, meta = run_lib.train_loop(
            learner,
            args.out,
            args.seed,
            checkpoint_every_chunks=every,
            resume=args.resume,
            progress=not args.no_progress,
            run_info=info,
            run_differences=run_dir.differences,
            periodic_eval=(
                run_lib.PeriodicEval(env, args.eval_every, args.eval_every_episodes)
                if args.eval_every
                else None
            ),
        )
        result = run_lib.evaluate_policy(
            env, learner, learner.policy_params(state), args.seed, args.eval_episodes
        )
        if _is_main_process():
            run_dir.write_eval(
                args.out, result, meta, domain, task, args.action_repeat, args.pixels
            )
            if args.video:
                write_video(args.out, env, learner, learner.policy_params(state), args.seed)
    except run_lib.Stopped as e:
        print(f"{e}; {resume}", file=sys.stderr)
        return 128 + e.signal
    except ckpt_lib.CheckpointError as e:
        return fail(str(e), status=1)
    except (run_lib.RunError, OSError) as e:
        return fail(f"{e}; {resume}", status=1)
    print(
        f"eval: mean_return {result['mean_return']:.1f} +- {result['stderr']:.1f} "
        f"over {result['episodes']} episodes after {meta['env_steps']} env steps "
        f"({meta['wall_seconds']:.0f} s, {args.backend} physics)"
    )
    print_published(domain, task)
    return 0
