"""``jaxcontrol sweep``: one agent on many tasks and seeds, each an ordinary run directory.

    jaxcontrol sweep --agent sac --tasks benchmarking --seeds 3 --steps 1e6 --out runs/sac
    jaxcontrol sweep --agent sac --tasks cheetah-run,walker-walk --seeds 5 --steps 1e6 --out DIR
    jaxcontrol sweep --out runs/sac --status          # what is finished, running, begun, left

Every (task, seed) trains as ``jaxcontrol train`` would, in its own process, into
``OUT/DOMAIN-TASK/seed-S`` (`agents.common.sweep_dir`): evaluations every
``--eval-every`` env steps during training, the final evaluation, then the final
policy inside dm_control itself (``evaluate --in-dm-control``). Runs go seed by
seed, task by task within a seed.

The sweep resumes: run it again (after a kill, on another day or another machine
with the same directory) and it skips finished runs and resumes begun ones from
their checkpoints. Several sweep processes may share one directory: each claims a
run before working on it (`agents.common.claims`) and passes over runs that another
live process holds; a killed process's claims expire after ``--claim-expiry``
seconds. SIGINT or SIGTERM stops the current run after its chunk and checkpoint.
With ``--skip-collected RECORDS`` it also skips the runs whose records are already
collected there under the same config, so a sweep directory that was lost (or never on
this machine) does not make it train them again.
"""

from __future__ import annotations

import argparse
import os
import resource
import secrets
import signal
import subprocess
import sys
import time

from jaxcontrol.cli import STOP_WITH_PARENT
from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli.args import INT_MAX, SEED_MAX, UsageError, fail, integer

SUMMARY = "train an agent on many tasks and seeds, resumably, one run directory each"
TASK_SETS = ("benchmarking", "extra", "all")


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol sweep``."""
    from jaxcontrol.agents.registry import AGENTS  # pylint: disable=import-outside-toplevel

    p = args_lib.Parser(
        prog="jaxcontrol sweep",
        description="Train an agent on many tasks and seeds, each (task, seed) a run directory.",
    )
    p.add_argument("--out", required=True, help="the sweep's directory")
    p.add_argument("--agent", help=f"one of {', '.join(AGENTS)}")
    p.add_argument(
        "--tasks",
        help=f"{', '.join(TASK_SETS)}, or comma-separated DOMAIN-TASK ids",
    )
    p.add_argument("--seeds", type=integer(1, 10_000), help="seeds per task: 0 to N-1")
    p.add_argument("--first-seed", type=integer(0, SEED_MAX), default=0, help="seeds start here")
    p.add_argument("--steps", type=integer(1, 10**15), help="environment steps per run, e.g. 1e6")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a config field for every run (repeatable)",
    )
    p.add_argument("--action-repeat", type=integer(1, 1000), default=1, metavar="K")
    p.add_argument("--backend", help="physics, mjx or mujoco (default: train's)")
    p.add_argument(
        "--eval-every",
        type=integer(0, 10**15),
        default=100_000,
        metavar="N",
        help="evaluate during training every N env steps (0: never)",
    )
    p.add_argument(
        "--eval-episodes",
        type=integer(1, INT_MAX),
        default=10,
        help="episodes of each evaluation during training",
    )
    p.add_argument(
        "--final-episodes",
        type=integer(1, INT_MAX),
        default=100,
        help="episodes of the final evaluation, in jaxcontrol and in dm_control",
    )
    p.add_argument(
        "--no-dm-control",
        action="store_true",
        help="skip evaluating each final policy inside dm_control",
    )
    p.add_argument(
        "--checkpoint-every", type=integer(1, INT_MAX), default=100, metavar="K", help="as train's"
    )
    p.add_argument(
        "--claim-expiry",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="a run claimed by a process silent this long counts as abandoned",
    )
    p.add_argument(
        "--max-runs", type=integer(1, INT_MAX), default=None, help="stop after working on N runs"
    )
    p.add_argument(
        "--skip-collected",
        metavar="RECORDS",
        help="count as finished the runs that `jaxcontrol results --collect` already wrote "
        "under RECORDS (e.g. results/) with this sweep's config",
    )
    p.add_argument(
        "--status",
        action="store_true",
        help="print each run's state (finished, claimed, begun, new) and exit",
    )
    return p


def _task_ids(text: str) -> list[str]:
    import jaxcontrol  # pylint: disable=import-outside-toplevel

    chosen = {
        "benchmarking": jaxcontrol.BENCHMARKING,
        "extra": jaxcontrol.EXTRA,
        "all": jaxcontrol.ALL_TASKS,
    }.get(text)
    if chosen is not None:
        return [f"{d}-{t}" for d, t in chosen]
    ids = [i for i in text.split(",") if i]
    for task_id in ids:
        args_lib.parse_env(task_id)
    return list(dict.fromkeys(ids))


def _protocol(args: argparse.Namespace):
    """The sweep's protocol from the command line, checked as train would check it."""
    from jaxcontrol import cpu_physics  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common.sweep_dir import Protocol  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.registry import AGENTS  # pylint: disable=import-outside-toplevel
    from jaxcontrol.registry import unknown_name  # pylint: disable=import-outside-toplevel

    missing = [f for f in ("agent", "tasks", "seeds", "steps") if getattr(args, f) is None]
    if missing:
        raise UsageError(f"a sweep needs {', '.join('--' + f for f in missing)}")
    if args.agent not in AGENTS:
        raise UsageError(str(unknown_name("agent", args.agent, AGENTS)))
    if args.backend is not None:
        cpu_physics.check_backend(args.backend)
    try:
        defaults = run_dir.run_defaults(args.agent, False, args.action_repeat)
        run_dir.build_config(args.agent, args.steps, args.set, defaults)
    except run_dir.RunDirError as e:
        raise UsageError(str(e)) from e
    if not args.no_dm_control:
        try:
            import dm_control  # pylint: disable=import-outside-toplevel,unused-import  # noqa: F401
        except ImportError as e:
            raise UsageError(
                "evaluating in dm_control needs dm-control: pip install 'jaxcontrol[test]', "
                "or pass --no-dm-control"
            ) from e
    if not args.claim_expiry > 0:
        raise UsageError(f"--claim-expiry must be positive, got {args.claim_expiry}")
    return Protocol(
        agent=args.agent,
        steps=args.steps,
        overrides=tuple(args.set),
        action_repeat=args.action_repeat,
        backend=args.backend,
        eval_every=args.eval_every,
        eval_episodes=args.eval_episodes,
        final_episodes=args.final_episodes,
        in_dm_control=not args.no_dm_control,
    )


def plan(spec: dict) -> list[tuple[str, int]]:
    """Every (task, seed) of a sweep, in the order it runs them: seed by seed."""
    return [(task, seed) for seed in spec["seeds"] for task in spec["tasks"]]


def collected_run(records: str | None, protocol, task_id: str, seed: int) -> bool:
    """Whether `records` (a records tree, or None) holds this run, finished under the
    protocol's agent, config, action repeat and backend (`records.holds`)."""
    if records is None:
        return False
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel
    from jaxcontrol.results import records as records_lib  # pylint: disable=import-outside-toplevel

    defaults = run_dir.run_defaults(protocol.agent, False, protocol.action_repeat)
    config = run_dir.build_config(
        protocol.agent, protocol.steps, list(protocol.overrides), defaults
    )
    # No backend key for the machine's default: a run on either physics counts.
    run = run_dir.run_info(
        task_id, protocol.agent, seed, config, protocol.action_repeat, False, "mjx"
    )
    if protocol.backend is not None:
        run["backend"] = protocol.backend  # an MJX run's run.json omits it (`records.holds`)
    return records_lib.holds(records, run, protocol.in_dm_control)


def train_argv(protocol, task_id: str, seed: int, out: str, resume: bool, every: int) -> list[str]:
    """``jaxcontrol train``'s command line for one run of the sweep."""
    argv = [
        "train",
        "--env",
        task_id,
        "--agent",
        protocol.agent,
        "--steps",
        str(protocol.steps),
        "--seed",
        str(seed),
        "--out",
        out,
        "--action-repeat",
        str(protocol.action_repeat),
        "--eval-episodes",
        str(protocol.final_episodes),
        "--eval-every",
        str(protocol.eval_every),
        "--eval-every-episodes",
        str(protocol.eval_episodes),
        "--checkpoint-every",
        str(every),
        "--no-progress",
    ]
    for item in protocol.overrides:
        argv += ["--set", item]
    if protocol.backend is not None:
        argv += ["--backend", protocol.backend]
    return argv + (["--resume"] if resume else [])


class _Child:
    """The run's current child process, so that a signal reaches it."""

    process: subprocess.Popen | None = None
    stopped: int | None = None


def _on_signal(signum, _frame) -> None:
    _Child.stopped = signum
    if _Child.process is not None and _Child.process.poll() is None:
        _Child.process.send_signal(signum)


def _run_step(argv: list[str], claim, tick) -> int:
    """Runs ``python -m jaxcontrol ARGV`` while the claim holds; its exit status.

    The child has a session of its own, so a terminal's Ctrl-C reaches it once, from
    this process, and it stops when this process dies (`STOP_WITH_PARENT`), so a
    killed sweep leaves no training behind on a run whose claim will expire. A claim
    lost to another process (this one was taken for dead) stops the child too.
    """
    _Child.process = subprocess.Popen(
        [sys.executable, "-m", "jaxcontrol", *argv],
        start_new_session=True,
        env={**os.environ, STOP_WITH_PARENT: str(os.getpid())},
    )
    try:
        while True:
            try:
                return _Child.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                tick()
                if not claim.held():
                    print("sweep: lost the claim on the run; stopping it", file=sys.stderr)
                    _Child.process.send_signal(signal.SIGTERM)
    finally:
        _Child.process = None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _running_cpu(process: subprocess.Popen | None) -> float:
    """CPU seconds so far of a child still running (Linux's /proc; 0 elsewhere)."""
    if process is None or process.poll() is not None:
        return 0.0
    try:
        with open(f"/proc/{process.pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # u, s, cu, cs


class _Attempt:
    """This process's work on one run. Its seconds so far are kept in the run's
    attempt-under-way file (every `EVERY` seconds), so a kill that leaves no time to
    record the attempt loses at most that much of it (`sweep_dir.settle_live_attempts`)."""

    EVERY = 30.0

    def __init__(self, directory: str):
        from jaxcontrol.agents.common import sweep_dir  # pylint: disable=import-outside-toplevel

        self._sweep_dir = sweep_dir
        self.directory = directory
        self.token = secrets.token_hex(8)
        self.wall, self.cpu = time.time(), _children_cpu()
        self._written: dict | None = None
        self.tick(force=True)

    def entry(self, status) -> dict:
        """The attempt as an attempts.jsonl line, its seconds as of now."""
        return {
            "ended_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "wall_seconds": time.time() - self.wall,
            "cpu_seconds": _children_cpu() - self.cpu + _running_cpu(_Child.process),
            "status": status,
            "host": self._sweep_dir.machine()["host"],
            "pid": os.getpid(),
        }

    def tick(self, force: bool = False) -> None:
        """Writes the seconds so far, at most every `EVERY` seconds unless `force`."""
        if force or time.time() - self.wall - self._written["wall_seconds"] >= self.EVERY:
            self._written = self.entry("running")
            self._sweep_dir.write_live_attempt(self.directory, self.token, self._written)

    def record(self, status: int) -> None:
        """Records the attempt in attempts.jsonl and removes its attempt-under-way file.

        Where that file is gone, another process took this one for dead and recorded
        it as of its last write: only the seconds since then are added.
        """
        entry = self.entry(status)
        path = self._sweep_dir.live_attempt_path(self.directory, self.token)
        if os.path.exists(path):
            os.unlink(path)
        else:
            for key in ("wall_seconds", "cpu_seconds"):
                entry[key] -= self._written[key]
        self._sweep_dir.record_attempt(self.directory, entry)


def work_on(root: str, protocol, task_id: str, seed: int, claim, every: int) -> int:
    """Trains, evaluates and finishes one claimed run; returns 0, or the failing status."""
    from jaxcontrol.agents.common import sweep_dir  # pylint: disable=import-outside-toplevel

    out = sweep_dir.run_dir(root, task_id, seed)
    sweep_dir.settle_live_attempts(out)
    attempt = _Attempt(out)
    status = 0
    steps = [train_argv(protocol, task_id, seed, out, sweep_dir.has_started(out), every)]
    if protocol.in_dm_control and not os.path.exists(os.path.join(out, "eval_dm_control.json")):
        steps.append(
            ["evaluate", out, "--in-dm-control", "--episodes", str(protocol.final_episodes)]
        )
    training_done = os.path.exists(os.path.join(out, "eval.json")) and sweep_dir.has_started(out)
    for argv in steps[1:] if training_done else steps:
        status = _run_step(argv, claim, attempt.tick)
        if status != 0 or _Child.stopped is not None:
            break
    attempt.record(status)
    if status == 0 and _Child.stopped is None:
        sweep_dir.finish(out)
    return status


def _status(root: str, spec: dict, expiry: float, records: str | None) -> int:
    from jaxcontrol.agents.common import claims, sweep_dir  # pylint: disable=import-outside-toplevel

    protocol = sweep_dir.Protocol.from_dict(spec)
    counts: dict[str, int] = {}
    for task_id, seed in plan(spec):
        out = sweep_dir.run_dir(root, task_id, seed)
        claim = os.path.join(out, claims.CLAIM)
        if sweep_dir.is_finished(out):
            state = "finished"
        elif collected_run(records, protocol, task_id, seed):
            state = "collected"
        elif os.path.exists(claim) and time.time() - os.stat(claim).st_mtime < expiry:
            state = "claimed"
        elif sweep_dir.has_started(out):
            state = "begun"
        else:
            state = "new"
        counts[state] = counts.get(state, 0) + 1
        print(f"{task_id}\tseed-{seed}\t{state}")
    print("; ".join(f"{n} {state}" for state, n in counts.items()), file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol sweep``; returns the exit status."""
    from jaxcontrol.cli.train import extra_missing  # pylint: disable=import-outside-toplevel

    status = extra_missing("sweep")
    if status is not None:
        return status
    from jaxcontrol.agents.common import claims, sweep_dir  # pylint: disable=import-outside-toplevel

    try:
        args = parser().parse_args(argv)
        if args.status:
            spec = sweep_dir.read_spec(args.out)
            return _status(args.out, spec, args.claim_expiry, args.skip_collected)
        protocol = _protocol(args)
        tasks = _task_ids(args.tasks)
        seeds = list(range(args.first_seed, args.first_seed + args.seeds))
        spec = sweep_dir.open_sweep(args.out, protocol, tasks, seeds)
    except (UsageError, ValueError) as e:
        return fail(str(e))
    previous = {s: signal.signal(s, _on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    worked, skipped, collected, failed = 0, 0, 0, []
    try:
        for task_id, seed in plan(spec):
            if task_id not in tasks or seed not in seeds:
                continue  # asked for by another command line; that one runs it
            out = sweep_dir.run_dir(args.out, task_id, seed)
            if sweep_dir.is_finished(out):
                continue
            if collected_run(args.skip_collected, protocol, task_id, seed):
                collected += 1
                continue
            if args.max_runs is not None and worked >= args.max_runs:
                break
            claim = claims.try_claim(out, args.claim_expiry)
            if claim is None:
                skipped += 1
                continue
            with claim:
                if sweep_dir.is_finished(out):  # finished while this process looked
                    continue
                print(f"sweep: {task_id} seed {seed} -> {out}", flush=True)
                worked += 1
                if work_on(args.out, protocol, task_id, seed, claim, args.checkpoint_every):
                    failed.append(f"{task_id} seed {seed}")
            if _Child.stopped is not None:
                print("sweep: stopped; run the same command to resume", file=sys.stderr)
                return 128 + _Child.stopped
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    left = f"; {skipped} held by other processes" if skipped else ""
    left += f"; {collected} already collected in {args.skip_collected}" if collected else ""
    print(f"sweep: worked on {worked} runs{left}", flush=True)
    if failed:
        return fail(f"runs failed: {', '.join(failed)}", status=1)
    return 0
