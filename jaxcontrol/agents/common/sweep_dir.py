"""A sweep directory: many runs of one agent, one run directory per (task, seed).

    SWEEP/sweep.json                 the protocol every run follows (`Protocol.to_dict`),
                                     with the tasks and seeds asked for so far
    SWEEP/DOMAIN-TASK/seed-S/        an ordinary run directory of ``jaxcontrol train``
        attempts.jsonl               one line per process that worked on the run
        attempt-TOKEN.json           the attempt under way, its seconds so far
        sweep_run.json               written last: the run is finished (`is_finished`)

A run is finished once its training, its final evaluation (eval.json) and, when the
protocol asks, its evaluation inside dm_control (eval_dm_control.json) are done;
``sweep_run.json`` then totals its attempts' wall-clock and CPU time and names the
machine, code and JAX that ran it. An attempt under way keeps its seconds so far in
a file of its own; a process killed outright (SIGKILL, a machine lost) leaves that
file behind, and the next process to claim the run records it as a "killed" attempt,
so its time still counts. Errors are `SweepError`s (ValueErrors).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import platform
import subprocess
import time

from jaxcontrol.agents.common.files import write_atomic

SPEC = "sweep.json"
ATTEMPTS = "attempts.jsonl"
FINISHED = "sweep_run.json"


class SweepError(ValueError):
    """A sweep directory that cannot serve the request (another protocol, a damaged spec)."""


@dataclasses.dataclass(frozen=True)
class Protocol:
    """What every run of a sweep shares; a sweep directory keeps one protocol.

    Attributes:
      agent: ppo, sac or d4pg.
      steps: environment steps per run.
      overrides: config overrides, ``name=value`` (as ``train --set``), the same for every task.
      action_repeat: control steps per learner step.
      backend: physics (mjx or mujoco), or None for the machine's default.
      eval_every: evaluate every this many env steps during training (0: never).
      eval_episodes: episodes of each evaluation during training.
      final_episodes: episodes of the final evaluation, in jaxcontrol and in dm_control.
      in_dm_control: also evaluate each final policy inside dm_control itself.
    """

    agent: str
    steps: int
    overrides: tuple[str, ...] = ()
    action_repeat: int = 1
    backend: str | None = None
    eval_every: int = 100_000
    eval_episodes: int = 10
    final_episodes: int = 100
    in_dm_control: bool = True

    def to_dict(self) -> dict:
        """As sweep.json holds it (``overrides`` under the name of train's flag, ``set``)."""
        out = dataclasses.asdict(self)
        out["set"] = list(out.pop("overrides"))
        return out

    @classmethod
    def from_dict(cls, values: dict) -> Protocol:
        """The protocol in a sweep.json (which also holds its tasks and seeds)."""
        values = {k: v for k, v in values.items() if k not in ("tasks", "seeds")}
        values["overrides"] = tuple(values.pop("set", ()))
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise SweepError(f"{SPEC}: unknown protocol fields {unknown}")
        try:
            return cls(**values)
        except TypeError as e:
            raise SweepError(f"{SPEC}: damaged ({e})") from e


def run_dir(root: str, task_id: str, seed: int) -> str:
    """The run directory of one (task, seed) of the sweep in ``root``."""
    return os.path.join(root, task_id, f"seed-{seed}")


def open_sweep(root: str, protocol: Protocol, tasks: list[str], seeds: list[int]) -> dict:
    """Creates the sweep in ``root``, or joins the one there, adding ``tasks`` and ``seeds``
    to what it asks for. Returns the spec as written.

    Raises:
      SweepError: ``root`` holds a sweep with another protocol (named field by field),
        or a damaged sweep.json.
    """
    path = os.path.join(root, SPEC)
    os.makedirs(root, exist_ok=True)
    spec = {**protocol.to_dict(), "tasks": [], "seeds": []}
    if os.path.exists(path):
        spec = read_spec(root)
        saved = Protocol.from_dict(spec)
        if saved != protocol:
            diffs = [
                f"{name} {getattr(saved, name)!r} != {getattr(protocol, name)!r}"
                for name in (f.name for f in dataclasses.fields(Protocol))
                if getattr(saved, name) != getattr(protocol, name)
            ]
            raise SweepError(
                f"{root!r} holds a sweep with another protocol: {'; '.join(diffs)}; "
                "choose another directory"
            )
    spec["tasks"] = list(dict.fromkeys([*spec["tasks"], *tasks]))
    spec["seeds"] = sorted(set(spec["seeds"]) | set(seeds))
    write_atomic(path, json.dumps(spec, indent=2) + "\n")
    return spec


def read_spec(root: str) -> dict:
    """The sweep.json of ``root``.

    Raises:
      SweepError: missing or damaged.
    """
    path = os.path.join(root, SPEC)
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except FileNotFoundError as e:
        raise SweepError(f"no sweep in {root!r} ({path} missing)") from e
    except (OSError, ValueError) as e:
        raise SweepError(f"{path}: damaged ({e})") from e
    if not isinstance(spec, dict) or not isinstance(spec.get("tasks"), list):
        raise SweepError(f"{path}: damaged (not a sweep's spec)")
    Protocol.from_dict(spec)
    return spec


def is_finished(directory: str) -> bool:
    """Whether a run of the sweep is finished (its sweep_run.json is written)."""
    return os.path.exists(os.path.join(directory, FINISHED))


def has_started(directory: str) -> bool:
    """Whether a run has begun (its run.json is written): it resumes, never restarts."""
    return os.path.exists(os.path.join(directory, "run.json"))


def record_attempt(directory: str, attempt: dict) -> None:
    """Appends one process's work on a run (seconds, status) to its attempts.jsonl."""
    with open(os.path.join(directory, ATTEMPTS), "a", encoding="utf-8") as f:
        f.write(json.dumps(attempt) + "\n")


def live_attempt_path(directory: str, token: str) -> str:
    """Where an attempt under way keeps its seconds so far."""
    return os.path.join(directory, f"attempt-{token}.json")


def write_live_attempt(directory: str, token: str, attempt: dict) -> None:
    """Replaces the attempt-under-way file of `token` with `attempt`."""
    write_atomic(live_attempt_path(directory, token), json.dumps(attempt) + "\n")


def settle_live_attempts(directory: str) -> int:
    """Records every attempt-under-way file left in `directory` (by processes that died
    without recording their attempt) as a "killed" attempt, and removes it. Call it
    holding the run's claim. Returns how many it recorded."""
    settled = 0
    for path in sorted(glob.glob(os.path.join(directory, "attempt-*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                attempt = json.load(f)
        except (OSError, ValueError):
            attempt = {}
        record_attempt(directory, {**attempt, "status": "killed"})
        os.unlink(path)
        settled += 1
    return settled


def read_attempts(directory: str) -> list[dict]:
    """The run's attempts so far (a line cut off by a crash is skipped)."""
    path = os.path.join(directory, ATTEMPTS)
    if not os.path.exists(path):
        return []
    attempts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                attempts.append(json.loads(line))
            except ValueError:
                continue
    return attempts


def machine() -> dict:
    """The machine a run ran on: CPU model, cores, OS and a short host name hash."""
    import hashlib  # pylint: disable=import-outside-toplevel

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    host = hashlib.sha256(platform.node().encode()).hexdigest()[:16]
    return {
        "cpu": cpu,
        "cores": cores,
        "platform": jax_platform(),
        "system": platform.system(),
        "host": host,
    }


def jax_platform() -> str:
    """The platform JAX computes on here (cpu, gpu, tpu)."""
    import jax  # pylint: disable=import-outside-toplevel

    return jax.default_backend()


def code_version() -> str:
    """The package's version, with the git commit it runs from where there is one."""
    from jaxcontrol import __version__  # pylint: disable=import-outside-toplevel

    here = os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(
            ["git", "-C", here, "describe", "--always", "--dirty", "--tags"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__}+{commit}" if commit else __version__


def finish(directory: str) -> dict:
    """Writes the run's sweep_run.json from its attempts; returns what it holds."""
    import jax  # pylint: disable=import-outside-toplevel

    from jaxcontrol import __version__  # pylint: disable=import-outside-toplevel

    attempts = read_attempts(directory)
    record = {
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "wall_seconds": sum(a.get("wall_seconds", 0.0) for a in attempts),
        "cpu_seconds": sum(a.get("cpu_seconds", 0.0) for a in attempts),
        "attempts": len(attempts),
        "code_version": code_version(),
        "jax_version": jax.__version__,
        "jaxcontrol_version": __version__,
        "machine": machine(),
    }
    write_atomic(os.path.join(directory, FINISHED), json.dumps(record, indent=2) + "\n")
    return record
