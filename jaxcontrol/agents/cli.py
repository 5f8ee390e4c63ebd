"""``jaxcontrol train`` and ``jaxcontrol evaluate``.

    jaxcontrol train --env cartpole-balance --agent ppo --steps 2000000 --seed 0 --out runs/a
    jaxcontrol train ... --out runs/a --resume      # continue from the latest checkpoint
    jaxcontrol train ... --steps 4000000 --out runs/a --resume   # extend the run's budget
    jaxcontrol train --env walker-walk --agent sac --action-repeat 2 ...
    jaxcontrol train --env cartpole-balance --agent d4pg --pixels ...   # 3 stacked 84x84 frames
    jaxcontrol evaluate runs/a --episodes 100       # re-evaluate into runs/a/eval.json

Bad arguments give one line ``error: ...`` on stderr and exit status 2,
before anything is written; each names the valid values or range. Config
fields can be overridden with ``--set name=value`` (repeatable), e.g.
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
import math
import os
import shlex
import socket
import sys
import time
from typing import Any

from jaxcontrol.agents.registry import AGENTS, get_agent


class UsageError(Exception):
    """A bad command line; reported as one line, exit status 2."""


INT_MAX = 2**31 - 1  # JAX's default integers are 32-bit
MAX_ACTION_REPEAT = 1000  # a suite episode's length in control steps
# --pixels: the suite paper's pixel setting (84x84 from camera 0, 3 stacked frames), for the
# agents with a pixel encoder; a replay row of two uint8 84x84x9 stacks is 127 kB, so the
# replay holds 50k transitions (6.4 GB) unless --set replay_capacity says otherwise.
PIXEL_AGENTS = ("d4pg", "sac")
PIXEL_FRAMES = 3
PIXEL_DEFAULTS = {"replay_capacity": 50_000}
# A value support (D4PG's v_min, v_max) is sized for the discounted return of rewards in
# [0, 1] per step; ActionRepeat(k) sums k rewards per step, so its default scales by k.
# Unscaled, cartpole-balance's returns at k = 8 (up to 800) all sat on the support's top
# atom: the critic could not rank actions (BENCHMARKS.md, "Learning from pixels").
SUPPORT_FIELDS = ("v_min", "v_max")


def run_defaults(agent: str, pixels: bool, action_repeat: int) -> dict:
    """Config defaults that depend on the run: the pixel replay size, a value support
    scaled by the action repeat. `--set` overrides them."""
    defaults = dict(PIXEL_DEFAULTS) if pixels else {}
    fields = {f.name: f for f in dataclasses.fields(get_agent(agent).config_cls)}
    for name in SUPPORT_FIELDS:
        if name in fields and action_repeat > 1:
            defaults[name] = fields[name].default * action_repeat
    return defaults


class _Parser(argparse.ArgumentParser):
    """Raises UsageError instead of exiting; an unknown flag gets close matches."""

    def __init__(self, **kwargs):
        super().__init__(allow_abbrev=False, **kwargs)

    def error(self, message):
        raise UsageError(message)

    def parse_args(self, args=None, namespace=None):
        from jaxcontrol.registry import unknown_name  # pylint: disable=import-outside-toplevel

        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            if not extras[0].startswith("-") or extras[0] == "-":
                raise UsageError(f"unexpected argument {extras[0]!r}")
            flags = [f for a in self._actions for f in a.option_strings if f.startswith("--")]
            raise UsageError(str(unknown_name("flag", extras[0].split("=")[0], flags)))
        return parsed


def _integer(low: int, high: int) -> Any:
    """An argparse type: an integer in [low, high] ('1e6' allowed), else a message naming it."""

    def parse(text: str) -> int:
        value = _parse_int(text)
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected an integer in [{low}, {high}], got {text!r}"
            )
        return value

    return parse


def _parse_int(text: str) -> int | None:
    """``text`` as an int ('1000', '1e6', '2.0'), or None if it is not a whole number."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value.is_integer() else None


def _fail(message: str, status: int = 2) -> int:
    flat = " ".join(str(message).splitlines())
    print(f"error: {flat}", file=sys.stderr)
    return status


def _parse_env(name: str) -> tuple[str, str]:
    import jaxcontrol  # pylint: disable=import-outside-toplevel
    from jaxcontrol.registry import unknown_name  # pylint: disable=import-outside-toplevel

    parts = name.split("-")
    if len(parts) != 2 or tuple(parts) not in jaxcontrol.ALL_TASKS:
        valid = [f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS]
        raise UsageError(str(unknown_name("env", name, valid, where=" (DOMAIN-TASK)")))
    return parts[0], parts[1]


def _convert(field: dataclasses.Field, text: str) -> Any:
    """A ``--set`` value as the field's type; the error names what was expected."""
    default = field.default
    if isinstance(default, bool):
        expected = "true or false (or 1 or 0)"
        value = {"true": True, "1": True, "false": False, "0": False}.get(text.lower())
    elif isinstance(default, int):
        expected, value = "an integer", _parse_int(text)
    elif isinstance(default, float):
        expected, value = "a finite number", None
        try:
            value = float(text) if math.isfinite(float(text)) else None
        except ValueError:
            pass
    elif isinstance(default, tuple):
        expected = "comma-separated positive integers, e.g. 64,64"
        widths = [_parse_int(x) for x in text.split(",")] if text else []
        ok = all(w is not None and 0 < w <= INT_MAX for w in widths)
        value = tuple(widths) if ok else None
    else:
        expected, value = "text", text
    if value is None:
        raise UsageError(f"bad value {text!r} for {field.name}: expected {expected}")
    return value


def build_config(agent: str, steps: int, overrides: list[str], defaults: dict | None = None):
    """The agent's config with ``total_env_steps``, then ``defaults``, then ``name=value`` overrides.

    Raises:
      UsageError: for an unknown field, a bad value or a failed validation.
    """
    from jaxcontrol.registry import unknown_name  # pylint: disable=import-outside-toplevel

    config_cls = get_agent(agent).config_cls
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    values: dict[str, Any] = {"total_env_steps": steps, **(defaults or {})}
    for item in overrides:
        name, sep, text = item.partition("=")
        if not sep:
            raise UsageError(f"--set expects name=value, got {item!r}")
        if name == "total_env_steps":
            raise UsageError("--set total_env_steps: give the budget with --steps instead")
        if name not in fields:
            raise UsageError(str(unknown_name(f"{agent} config field", name, fields)))
        values[name] = _convert(fields[name], text)
    try:
        return config_cls(**values)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from e


def _check_writable(out: str) -> bool:
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


COMPILE_CACHE_HELP = (
    "JAX's persistent compilation cache: a later run (or --resume, or evaluate) of the same "
    "task and config loads its compiled programs instead of compiling them again (minutes "
    "for the large contact models on a GPU). Default: JAX_COMPILATION_CACHE_DIR where set, "
    "else JAXCONTROL_COMPILE_CACHE, else ~/.cache/jaxcontrol/xla (under XDG_CACHE_HOME where "
    "set); 'none' turns it off"
)


def add_compile_cache(parser: argparse.ArgumentParser) -> None:
    """Adds `--compile-cache DIR`, which `use_compile_cache` applies."""
    parser.add_argument("--compile-cache", default=None, metavar="DIR", help=COMPILE_CACHE_HELP)


def use_compile_cache(directory: str | None) -> str | None:
    """Points JAX's persistent compilation cache at `directory` (see `--compile-cache`);
    returns the directory in use, or None when the cache is off."""
    import jax  # pylint: disable=import-outside-toplevel
    from jax.experimental.compilation_cache import compilation_cache  # pylint: disable=import-outside-toplevel

    if directory is None:
        if jax.config.jax_compilation_cache_dir:  # the user's own setting
            return jax.config.jax_compilation_cache_dir
        directory = os.environ.get("JAXCONTROL_COMPILE_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "jaxcontrol", "xla"
        )
    if directory.lower() == "none":
        return None
    try:
        os.makedirs(directory, exist_ok=True)
        if not os.access(directory, os.W_OK):
            raise PermissionError("not writable")
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        print(f"warning: no compilation cache: {directory!r}: {e}", file=sys.stderr)
        return None
    if directory != jax.config.jax_compilation_cache_dir:
        jax.config.update("jax_compilation_cache_dir", directory)
        compilation_cache.reset_cache()  # a cache JAX already looked for is found again
    return directory


def _train_parser() -> _Parser:
    p = _Parser(prog="jaxcontrol train", description="Train an agent on a suite task.")
    p.add_argument("--env", required=True, help="DOMAIN-TASK, e.g. cartpole-balance")
    p.add_argument("--agent", required=True, help=f"one of {', '.join(AGENTS)}")
    p.add_argument(
        "--steps", required=True, type=_integer(1, 10**15), help="environment steps, e.g. 1e6"
    )
    p.add_argument("--seed", type=_integer(0, 2**32 - 1), default=0)
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument(
        "--action-repeat",
        type=_integer(1, MAX_ACTION_REPEAT),
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
        f"convolutional encoder ({', '.join(PIXEL_AGENTS)}); the replay then defaults to "
        f"{PIXEL_DEFAULTS['replay_capacity']} transitions",
    )
    p.add_argument(
        "--backend",
        help="physics: mjx (any device) or mujoco (dm_control's C MuJoCo on the host's CPU "
        "threads, behind the same jitted step). Default: mujoco when JAX runs on the CPU "
        "(the faster there: BENCHMARKS.md), mjx on an accelerator or with --distributed; "
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
        type=_integer(1, INT_MAX),
        default=100,
        metavar="K",
        help="save every K updates (rounded up to whole chunks)",
    )
    p.add_argument("--eval-episodes", type=_integer(1, INT_MAX), default=100)
    p.add_argument(
        "--devices",
        type=_integer(1, INT_MAX),
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
        "--num-processes", type=_integer(1, INT_MAX), default=None, help="processes in the run"
    )
    p.add_argument(
        "--process-id", type=_integer(0, INT_MAX), default=None, help="this process's index"
    )
    add_compile_cache(p)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--video",
        action="store_true",
        help="write an evaluation episode as DIR/video.mp4 at the end (needs jaxcontrol[video])",
    )
    return p


def _extra_missing(command: str) -> int | None:
    """Exit status 2 and one line naming the agents extra, if a module of it is missing."""
    from jaxcontrol.agents import extras  # pylint: disable=import-outside-toplevel

    text = extras.message(f"jaxcontrol {command}")
    return None if text is None else _fail(text)


def train_main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol train``; returns the exit status."""
    status = _extra_missing("train")
    if status is not None:
        return status
    try:
        args = _train_parser().parse_args(argv)
        if args.agent not in AGENTS:
            from jaxcontrol.registry import unknown_name  # pylint: disable=import-outside-toplevel

            raise UsageError(str(unknown_name("agent", args.agent, AGENTS)))
        if args.pixels and args.agent not in PIXEL_AGENTS:
            raise UsageError(
                f"--pixels: {args.agent} learns from state observations only; "
                f"the agents that learn from pixels are {', '.join(PIXEL_AGENTS)}"
            )
        _check_distributed(args)
        from jaxcontrol import cpu_physics  # pylint: disable=import-outside-toplevel

        if args.backend is None:
            args.backend = _default_backend(args)
        cpu_physics.check_backend(args.backend)
        domain, task = _parse_env(args.env)
        if args.video:
            _check_video()
        defaults = run_defaults(args.agent, args.pixels, args.action_repeat)
        config = build_config(args.agent, args.steps, args.set, defaults)
        run_info = {
            "env": args.env,
            "action_repeat": args.action_repeat,
            "agent": args.agent,
            "seed": args.seed,
            "config": _config_dict(config),
        }
        if args.pixels:  # absent for state runs, as in runs from before --pixels
            run_info["pixels"] = True
        if args.backend != "mjx":  # absent for MJX runs, as in runs from before --backend
            run_info["backend"] = args.backend
        run_json = os.path.join(args.out, "run.json")
        extended_from = None  # the run's budget, when --steps extends it
        if args.resume:
            saved = _read_run_json(args.out)
            diffs = _differences(saved, run_info)
            if diffs:
                raise UsageError(f"--resume with a different config: {'; '.join(diffs)}")
            extended_from = _extended_from(saved, config)
        elif os.path.exists(run_json) or os.path.exists(os.path.join(args.out, "checkpoints")):
            raise UsageError(
                f"{args.out!r} already holds a run; pass --resume or choose another --out"
            )
        created = _check_writable(args.out)
        try:
            use_compile_cache(args.compile_cache)  # once the command line is known to be valid
            if args.distributed:
                import jax  # pylint: disable=import-outside-toplevel

                jax.distributed.initialize(
                    coordinator_address=args.coordinator,
                    num_processes=args.num_processes,
                    process_id=args.process_id,
                )
            mesh = _make_mesh(args.devices)
            env = make_env(domain, task, args.action_repeat, args.pixels, args.backend)
            learner = get_agent(args.agent).make_learner(config, env, mesh=mesh)
            if extended_from is not None:
                before = dataclasses.replace(config, total_env_steps=extended_from)
                _check_same_chunks(
                    learner, get_agent(args.agent).make_learner(before, env, mesh=mesh)
                )
        except (UsageError, ValueError):
            if created:
                os.rmdir(args.out)
            raise
    except (UsageError, ValueError) as e:  # ValueError: config or mesh validation
        return _fail(str(e))

    from jaxcontrol.agents.common import checkpoint as ckpt_lib  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    resume = f"resume with: jaxcontrol train {shlex.join(_with_resume(argv))}"
    try:
        if (not args.resume or extended_from is not None) and _is_main_process():
            if extended_from is not None:
                print(
                    f"resume: extending the run from {extended_from} to {args.steps} env steps",
                    file=sys.stderr,
                )
            run_lib.write_atomic(run_json, json.dumps(run_info, indent=2) + "\n")
        every = max(1, -(-args.checkpoint_every // learner.updates_per_chunk))
        state, meta = run_lib.train_loop(
            learner,
            args.out,
            args.seed,
            checkpoint_every_chunks=every,
            resume=args.resume,
            progress=not args.no_progress,
            run_info=run_info,
            run_differences=_differences,
        )
        result = run_lib.evaluate_policy(
            env, learner, learner.policy_params(state), args.seed, args.eval_episodes
        )
        if _is_main_process():
            _write_eval(args.out, result, meta, domain, task, args.action_repeat, args.pixels)
            if args.video:
                _write_video(args.out, env, learner, learner.policy_params(state), args.seed)
    except run_lib.Stopped as e:
        print(f"{e}; {resume}", file=sys.stderr)
        return 128 + e.signal
    except ckpt_lib.CheckpointError as e:
        return _fail(str(e), status=1)
    except (run_lib.RunError, OSError) as e:
        return _fail(f"{e}; {resume}", status=1)
    print(
        f"eval: mean_return {result['mean_return']:.1f} +- {result['stderr']:.1f} "
        f"over {result['episodes']} episodes after {meta['env_steps']} env steps "
        f"({meta['wall_seconds']:.0f} s, {args.backend} physics)"
    )
    _print_published(domain, task)
    return 0


def make_env(
    domain: str, task: str, action_repeat: int = 1, pixels: bool = False, backend: str = "mjx"
):
    """The environment a run trains on.

    The task on ``backend``'s physics, under ``ActionRepeat`` when k > 1; with
    ``pixels``, observed as the suite paper's 84x84 images of camera 0, the last ``PIXEL_FRAMES`` stacked:
    ``FrameStack(Pixels(...))``, uint8 (84, 84, 9), rendered once per (repeated) step.
    """
    import jaxcontrol  # pylint: disable=import-outside-toplevel
    from jaxcontrol import wrappers  # pylint: disable=import-outside-toplevel

    env = jaxcontrol.load(domain, task, backend=backend)
    if action_repeat > 1:
        env = wrappers.ActionRepeat(env, action_repeat)
    if pixels:
        env = wrappers.FrameStack(wrappers.Pixels(env), PIXEL_FRAMES)
    return env


def _check_video() -> None:
    """Fails before training if the end's video could not be written."""
    from jaxcontrol.render import gl, video  # pylint: disable=import-outside-toplevel

    try:
        video.require_encoder()
        gl.require()
    except (ImportError, gl.RenderingUnavailable) as e:
        raise UsageError(f"--video: {e}") from e


def _write_video(run_dir: str, env, learner, params, seed: int) -> None:
    """One evaluation episode (the deterministic policy) as ``run_dir/video.mp4``."""
    from jaxcontrol.render import video  # pylint: disable=import-outside-toplevel

    path = os.path.join(run_dir, "video.mp4")
    seconds = env.episode_length * env.control_timestep
    frames = video.record(env, path, seconds, learner.policy, params, seed=seed)
    print(f"video: {path} ({frames} frames)")


def _check_distributed(args: argparse.Namespace) -> None:
    hand_set = (args.coordinator, args.num_processes, args.process_id)
    if any(v is not None for v in hand_set) and not args.distributed:
        raise UsageError("--coordinator, --num-processes and --process-id need --distributed")
    if args.coordinator is not None:
        host, _, port = args.coordinator.rpartition(":")
        if not host or _parse_int(port) is None or not 1 <= _parse_int(port) <= 65535:
            raise UsageError(
                f"--coordinator expects HOST:PORT with PORT in [1, 65535], got {args.coordinator!r}"
            )
    pid, count = args.process_id, args.num_processes
    if pid is not None and count is not None and pid >= count:
        raise UsageError(
            f"--process-id must be in [0, {args.num_processes - 1}] "
            f"for --num-processes {args.num_processes}, got {args.process_id}"
        )


def _read_run_json(out: str) -> dict:
    """The run.json of ``out``; a missing or unreadable one is named."""
    path = os.path.join(out, "run.json")
    if not os.path.exists(path):
        if os.path.exists(os.path.join(out, "checkpoints")):
            raise UsageError(
                f"--resume: {path} is missing, so the checkpoints beside it cannot be "
                "matched to this command; restore it, or choose another --out"
            )
        raise UsageError(f"--resume: no run in {out!r} ({path} missing)")
    try:
        with open(path) as f:
            saved = json.load(f)
    except (OSError, ValueError) as e:  # ValueError: json.JSONDecodeError, bad UTF-8
        saved = f"{e}"
    if not isinstance(saved, dict):
        reason = saved if isinstance(saved, str) else "not a JSON object"
        raise UsageError(f"{path}: damaged ({reason}); restore it, or choose another --out")
    return saved


def _with_resume(argv: list[str]) -> list[str]:
    return list(argv) if "--resume" in argv else [*argv, "--resume"]


def _is_main_process() -> bool:
    """Only process 0 writes run files in a multi-host run."""
    import jax  # pylint: disable=import-outside-toplevel

    return jax.process_index() == 0


def _config_dict(config) -> dict:
    from jaxcontrol.agents.common.config import to_dict  # pylint: disable=import-outside-toplevel

    return to_dict(config)


def _default_backend(args) -> str:
    """A resumed run's own backend, else the machine's (`cpu_physics.default_backend`).

    A --distributed run defaults to MJX: asking JAX for its platform would start
    the backend before `jax.distributed.initialize`, which JAX forbids, and
    multi-host runs are accelerator runs.
    """
    from jaxcontrol import cpu_physics  # pylint: disable=import-outside-toplevel

    if args.resume:  # a missing or damaged run.json stops here, named
        return backend(_read_run_json(args.out))
    if args.distributed:
        return "mjx"
    return cpu_physics.default_backend()


BUDGET = "total_env_steps"  # the one config field that --resume may change (upwards)
_ADDED_FIELDS = {"stagger_episodes": False, "state_dependent_std": False, "random_shift": 0}


def _differences(saved: dict, current: dict) -> list[str]:
    """What differs between a run's saved identity (run.json, or a checkpoint's
    manifest) and this command's; the budget is `_extended_from`'s to judge."""
    diffs = []
    # Runs from before --action-repeat, --pixels and --backend leave them out, as state
    # and MJX runs still do.
    saved = {"action_repeat": 1, "pixels": False, "backend": "mjx", **saved}
    current = {"pixels": False, "backend": "mjx", **current}
    for key in ("env", "action_repeat", "pixels", "backend", "agent", "seed"):
        if saved.get(key) != current[key]:
            diffs.append(f"{key} {saved.get(key)!r} != {current[key]!r}")
    old, new = saved.get("config"), current["config"]
    old = old if isinstance(old, dict) else {}  # a run.json edited by hand
    # A field added after the run began holds what that run did (PPO ran in lock-step,
    # with a state-independent std; off-policy learners shifted no images).
    old = {**{name: v for name, v in _ADDED_FIELDS.items() if name in new}, **old}
    for name in sorted((set(old) | set(new)) - {BUDGET}):
        if old.get(name) != new.get(name):
            diffs.append(f"{name} {old.get(name)!r} != {new.get(name)!r}")
    return diffs


def _extended_from(saved: dict, config) -> int | None:
    """The run's budget when --steps extends it; None when --steps is the run's own.

    Raises:
      UsageError: --steps below the budget, a budget the config's training depends
        on (``budget_fixed_by``), or a run.json without a budget.
    """
    old = saved["config"].get(BUDGET) if isinstance(saved.get("config"), dict) else None
    new = getattr(config, BUDGET)
    if old == new:
        return None
    if not isinstance(old, int) or isinstance(old, bool):
        raise UsageError(f"run.json: config.{BUDGET} must be an integer, got {old!r}")
    if new < old:
        raise UsageError(
            f"--resume with --steps {new}: the run's budget is {old} env steps; "
            "a run can be extended, not shortened"
        )
    reason = config.budget_fixed_by()
    if reason is not None:
        raise UsageError(
            f"--resume with --steps {new}: the run's budget is {old} env steps, and {reason}, "
            "so the run cannot be extended; start a new run"
        )
    return old


def _check_same_chunks(learner, before) -> None:
    """An extended run must be cut into the chunks it was cut into (see
    `run._check_chunks`): only a budget under one chunk shortens them."""
    if (learner.env_steps_at_init, learner.env_steps_per_chunk) != (
        before.env_steps_at_init,
        before.env_steps_per_chunk,
    ):
        raise UsageError(
            f"--resume with a larger --steps: the run's budget was under one chunk, so its "
            f"chunks hold {before.env_steps_per_chunk} env steps, and the new budget's would "
            f"hold {learner.env_steps_per_chunk}; start a new run"
        )


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


def _eval_payload(
    result: dict, meta: dict, domain: str, task: str, action_repeat: int, pixels: bool
) -> dict:
    """What eval.json (and eval_dm_control.json) record of an evaluation."""
    from jaxcontrol import baselines  # pylint: disable=import-outside-toplevel

    return {
        "mean_return": result["mean_return"],
        "stderr": result["stderr"],
        "episodes": result["episodes"],
        "env_steps": meta["env_steps"],
        "wall_seconds": meta["wall_seconds"],
        "eval_seconds": result["eval_seconds"],
        "returns": result["returns"],
        "evaluated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "env": f"{domain}-{task}",
        # env_steps count the learner's steps; each is this many control steps of the task.
        "action_repeat": action_repeat,
        "pixels": pixels,
        # The suite report's mean and standard error over seeds, same protocol (None if the
        # task was not among its benchmarks).
        "published": baselines.reference(domain, task),
    }


def _write_eval(
    run_dir: str,
    result: dict,
    meta: dict,
    domain: str,
    task: str,
    action_repeat: int,
    pixels: bool = False,
) -> None:
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    payload = _eval_payload(result, meta, domain, task, action_repeat, pixels)
    run_lib.write_atomic(os.path.join(run_dir, "eval.json"), json.dumps(payload, indent=2) + "\n")
    run_lib.plot_learning_curve(run_dir, payload)


def action_repeat(info: dict) -> int:
    """A run's action repeat (1 for runs from before ``--action-repeat``)."""
    k = info.get("action_repeat", 1)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_ACTION_REPEAT:
        raise UsageError(
            f"run.json: action_repeat must be an integer in [1, {MAX_ACTION_REPEAT}], got {k!r}"
        )
    return k


def backend(info: dict) -> str:
    """A run's physics backend ("mjx" for runs without the key)."""
    from jaxcontrol import cpu_physics  # pylint: disable=import-outside-toplevel

    value = info.get("backend", "mjx")
    if value not in cpu_physics.BACKENDS:
        raise UsageError(
            f"run.json: backend must be one of {', '.join(cpu_physics.BACKENDS)}, got {value!r}"
        )
    return value


def pixels(info: dict) -> bool:
    """Whether a run learns from pixels (False for runs without the key)."""
    value = info.get("pixels", False)
    if not isinstance(value, bool):
        raise UsageError(f"run.json: pixels must be true or false, got {value!r}")
    return value


def read_run(run_dir: str) -> tuple[dict, str, str, Any]:
    """A run directory's run.json: (info, domain, task, config).

    Raises:
      UsageError: no run there, a damaged run.json, or an unknown env or agent.
    """
    run_json = os.path.join(run_dir, "run.json")
    if not os.path.exists(run_json):
        raise UsageError(f"no run in {run_dir!r} ({run_json} missing)")
    info = _read_run_json(run_dir)
    domain, task = _parse_env(str(info.get("env")))
    action_repeat(info)
    pixels(info)
    backend(info)
    from jaxcontrol.agents.common.config import config_from_dict  # pylint: disable=import-outside-toplevel

    try:
        agent = get_agent(info.get("agent"))
        config = config_from_dict(agent.config_cls, info.get("config", {}))
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from e
    return info, domain, task, config


def restore_policy(run_dir: str, info: dict, domain: str, task: str, config, prog: str):
    """The env, learner and policy of a run's newest intact checkpoint.

    Returns:
      (env, learner, params, meta, step); params, meta and step are None when no
      checkpoint is intact. Skipped checkpoints are named on stderr after `prog`.
    """
    import jax  # pylint: disable=import-outside-toplevel

    from jaxcontrol.agents.common import checkpoint as ckpt_lib  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    env = make_env(domain, task, action_repeat(info), pixels(info), backend(info))
    learner = get_agent(info["agent"]).make_learner(config, env)
    train_key, _ = run_lib.split_run_key(info["seed"])
    directory = os.path.join(run_dir, "checkpoints")
    struct = ckpt_lib.structure(jax.eval_shape(learner.init, train_key))
    step, _, rejected = ckpt_lib.newest_intact(directory, info, struct, _differences)
    for error in rejected:
        print(f"{prog}: skipped {error}", file=sys.stderr)
    if step is None:
        return env, learner, None, None, None
    checkpointer = ckpt_lib.Checkpointer(directory)
    abstract = ckpt_lib.abstract_single_device(
        jax.eval_shape(lambda k: learner.policy_params(learner.init(k)), train_key)
    )
    params, meta = checkpointer.restore_policy(step, abstract)
    checkpointer.close()
    return env, learner, params, meta, step


def evaluate_main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol evaluate``: re-evaluates the latest checkpoint."""
    status = _extra_missing("evaluate")
    if status is not None:
        return status
    p = _Parser(
        prog="jaxcontrol evaluate",
        description="Re-evaluate a run's latest checkpoint into DIR/eval.json.",
    )
    p.add_argument("dir")
    p.add_argument("--episodes", type=_integer(1, INT_MAX), default=100)
    add_compile_cache(p)
    p.add_argument(
        "--in-dm-control",
        action="store_true",
        help="evaluate inside dm_control's own environment of the task (its physics, "
        "observations and, for --pixels runs, MuJoCo's OpenGL images) into "
        "DIR/eval_dm_control.json; needs dm-control (jaxcontrol[test])",
    )
    try:
        args = p.parse_args(argv)
        info, domain, task, config = read_run(args.dir)
        if args.in_dm_control:
            _check_dm_control(pixels(info))
        use_compile_cache(args.compile_cache)
    except (UsageError, ValueError, TypeError) as e:
        return _fail(str(e))

    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    env, learner, params, meta, step = restore_policy(
        args.dir, info, domain, task, config, "evaluate"
    )
    if step is None:
        return _fail(f"no intact checkpoint in {os.path.join(args.dir, 'checkpoints')!r}", status=1)
    if args.in_dm_control:
        return _evaluate_in_dm_control(args, info, (domain, task), env, learner, params, meta, step)
    result = run_lib.evaluate_policy(env, learner, params, info["seed"], args.episodes)
    _write_eval(args.dir, result, meta, domain, task, action_repeat(info), pixels(info))
    print(
        f"eval: mean_return {result['mean_return']:.1f} +- {result['stderr']:.1f} "
        f"over {result['episodes']} episodes (checkpoint {step}, "
        f"{meta['env_steps']} env steps)"
    )
    _print_published(domain, task)
    return 0


def _check_dm_control(pixels_run: bool) -> None:
    """Fails before restoring anything if dm_control (or, for pixels, OpenGL) is missing."""
    try:
        import dm_control  # pylint: disable=import-outside-toplevel,unused-import  # noqa: F401
    except ImportError as e:
        raise UsageError("--in-dm-control needs dm-control: pip install 'jaxcontrol[test]'") from e
    if pixels_run:
        from jaxcontrol.render import gl  # pylint: disable=import-outside-toplevel

        try:
            gl.require()
        except gl.RenderingUnavailable as e:
            raise UsageError(f"--in-dm-control renders dm_control's pixels: {e}") from e


def _evaluate_in_dm_control(args, info, domain_task, env, learner, params, meta, step) -> int:
    """``evaluate --in-dm-control``: the policy in dm_control, beside the run's eval.json."""
    from jaxcontrol.agents.common import dm_control_eval  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    result = dm_control_eval.evaluate_in_dm_control(
        env, learner.policy, params, info["seed"], args.episodes
    )
    payload = _eval_payload(result, meta, *domain_task, action_repeat(info), pixels(info))
    payload["checkpoint"] = step
    # where dm_control's images come from, for pixel runs
    payload["renderer"] = (
        f"MuJoCo OpenGL (MUJOCO_GL={os.environ.get('MUJOCO_GL', '')})" if pixels(info) else None
    )
    path = os.path.join(args.dir, "eval_dm_control.json")
    run_lib.write_atomic(path, json.dumps(payload, indent=2) + "\n")
    line = (
        f"eval in dm_control: mean_return {result['mean_return']:.1f} +- "
        f"{result['stderr']:.1f} over {result['episodes']} episodes (checkpoint {step}, "
        f"{meta['env_steps']} env steps)"
    )
    ours = os.path.join(args.dir, "eval.json")
    if os.path.exists(ours):
        with open(ours, encoding="utf-8") as f:
            theirs = json.load(f).get("mean_return")
        if isinstance(theirs, (int, float)) and theirs:
            line += f"; in jaxcontrol {theirs:.1f} (ratio {result['mean_return'] / theirs:.3f})"
    print(line)
    return 0
