"""Driving a learner from Python: chunks, progress bar, metrics, checkpoints, evaluation.

The run directory holds:

* ``run.json``: env, agent, seed and the full config (checked on resume);
* ``metrics.jsonl``: one JSON line per chunk (``episode_return`` only in the
  chunks in which an episode ended; ``eval_mean_return``, ``eval_stderr``,
  ``eval_episodes`` and ``eval_returns`` in the chunks after which a
  `PeriodicEval` evaluated the policy);
* ``checkpoints/``: orbax checkpoints (see ``checkpoint.py``);
* ``learning_curve.png`` and ``eval.json`` at the end.

Files are written whole (temporary file, then rename), so an interrupted run
never leaves a half-written JSON or PNG behind.

Faults: a resume starts from the newest checkpoint that passes
``checkpoint.verify`` and says which ones it set aside and why; each checkpoint
records the length and SHA-256 of ``metrics.jsonl`` so far, so the resumed file
has every chunk once. A failed write (a full disk) stops the run with
``RunError``, the last checkpoint intact; SIGINT or SIGTERM stops it after the
current chunk and a checkpoint, with ``Stopped``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxcontrol.agents.common import checkpoint as ckpt_lib
from jaxcontrol.agents.common import faults
from jaxcontrol.agents.common.episodes import chunk_line
from jaxcontrol.agents.common.evaluation import evaluate, summarize
from jaxcontrol.agents.common.files import os_error, write_atomic
from jaxcontrol.agents.common.learner import Learner

WALL_FIELDS = ("wall_seconds", "steps_per_second")  # not reproducible across runs


@dataclasses.dataclass(frozen=True)
class PeriodicEval:
    """Evaluations during training: after the first chunk that reaches each multiple of
    ``every`` env steps, ``episodes`` episodes of the deterministic policy on ``env``
    (`evaluation.evaluate`), into that chunk's metrics line. Each evaluation's key
    folds its env steps into the run's evaluation key, so a resumed run writes the
    same lines."""

    env: Any
    every: int
    episodes: int = 10

    def __post_init__(self):
        if self.every < 1 or self.episodes < 1:
            raise ValueError(
                f"PeriodicEval needs every >= 1 and episodes >= 1, got {self.every}, "
                f"{self.episodes}"
            )

    def due(self, before: int, after: int) -> bool:
        """Whether a chunk from ``before`` to ``after`` env steps reaches a multiple of every."""
        return after // self.every > before // self.every

    def compile(self, learner: Learner, seed: int) -> Callable[[Any, int], dict]:
        """``(policy_params, env_steps) -> the metrics line's eval_* entries``, jitted once."""
        _, eval_key = split_run_key(seed)
        returns_of = jax.jit(
            lambda params, steps: evaluate(
                self.env, learner.policy, params, jax.random.fold_in(eval_key, steps), self.episodes
            )
        )

        def run(params, env_steps: int) -> dict:
            returns = np.asarray(jax.device_get(returns_of(params, np.uint32(env_steps))))
            summary = summarize(returns)
            return {
                "eval_mean_return": summary["mean_return"],
                "eval_stderr": summary["stderr"],
                "eval_episodes": summary["episodes"],
                "eval_returns": [float(r) for r in returns],
            }

        return run


class RunError(Exception):
    """A run stopped by a failed write or unusable checkpoints; the message names the path."""


class Stopped(Exception):
    """SIGINT or SIGTERM stopped the run after a chunk and its checkpoint."""

    def __init__(self, received: signal.Signals, chunks: int, num_chunks: int, directory: str):
        super().__init__(
            f"stopped by {received.name} after chunk {chunks} of {num_chunks}; "
            f"checkpoint {chunks} saved in {directory}"
        )
        self.signal = received


def split_run_key(seed: int) -> tuple[jax.Array, jax.Array]:
    """(train_key, eval_key) of a run, from its seed."""
    train_key, eval_key = jax.random.split(jax.random.PRNGKey(seed))
    return train_key, eval_key


def read_metrics(run_dir: str) -> list[dict]:
    """The lines of ``metrics.jsonl`` (empty when absent)."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _set_aside(run_dir: str, error: ckpt_lib.CheckpointError) -> str:
    """Moves a rejected checkpoint to ``run_dir/checkpoints-rejected/``; returns where."""
    source = os.path.join(run_dir, "checkpoints", str(error.step))
    base = os.path.join(run_dir, "checkpoints-rejected", str(error.step))
    target, copies = base, 1
    while os.path.exists(target):  # the same step rejected before
        copies += 1
        target = f"{base}-{copies}"
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.replace(source, target)
    return target


def _resume_point(
    run_dir: str, run: dict, struct: list, differences: ckpt_lib.Differences
) -> dict | None:
    """The manifest of the checkpoint to resume from (None: start afresh), saying why.

    Checkpoints newer than it were rejected; they are moved aside, so a resumed
    run can write those steps again.

    Raises:
      CheckpointError: if checkpoints exist but none is intact, and some are
        damaged or another run's (not merely cut short).
    """
    directory = os.path.join(run_dir, "checkpoints")
    step, manifest, rejected = ckpt_lib.newest_intact(directory, run, struct, differences)
    if step is None and any(e.kind != "incomplete" for e in rejected):
        raise ckpt_lib.CheckpointError(
            f"no intact checkpoint to resume from: {'; '.join(map(str, rejected))}; "
            f"move {directory} away to start the run again"
        )
    if jax.process_index() == 0:  # one process moves and reports
        for error in rejected:
            print(f"resume: {error}; moved to {_set_aside(run_dir, error)}", file=sys.stderr)
        if step is None:
            print("resume: no complete checkpoint; starting from the beginning", file=sys.stderr)
        else:
            print(f"resume: from checkpoint {step} in {directory}", file=sys.stderr)
    return manifest


def _check_chunks(learner: Learner, meta: dict, directory: str) -> None:
    """Refuses a checkpoint whose chunks held other env steps than ``learner``'s.

    A run's budget may change on resume (an extended run), but not how it is cut:
    chunk k must end at the same env step as before, or the metrics and the
    schedule would no longer line up.
    """
    chunks, env_steps = int(meta["chunks"]), int(meta["env_steps"])
    expected = learner.env_steps_at_init + chunks * learner.env_steps_per_chunk
    if env_steps != expected:
        raise ckpt_lib.CheckpointError(
            f"{directory}/{chunks}: its {chunks} chunks ended at env step {env_steps}, "
            f"this run's would end at {expected} (chunks of {learner.env_steps_per_chunk} "
            "env steps): the run was cut into chunks differently; start a new run",
            "foreign",
            chunks,
        )


def _metrics_prefix(path: str, meta: dict) -> bytes:
    """The first ``meta['metrics_bytes']`` bytes of metrics.jsonl, checked against the meta."""
    want = meta["metrics_bytes"]
    data = b""
    if os.path.exists(path):
        with open(path, "rb") as f:
            data = f.read(want)
    if len(data) < want or hashlib.sha256(data).hexdigest() != meta["metrics_sha256"]:
        raise ckpt_lib.CheckpointError(
            f"{path}: its first {want} bytes do not match checkpoint {meta['chunks']} "
            "(damaged or edited since); restore it, or start a new run"
        )
    return data


def _save(checkpointer: ckpt_lib.Checkpointer, step: int, state, policy, meta, last) -> None:
    try:
        checkpointer.save(step, state, policy, meta)
    except Exception as e:
        error = os_error(e)
        if error is None:
            raise
        intact = f"checkpoint {last} is intact" if last else "no earlier checkpoint"
        raise RunError(
            f"cannot write checkpoint {step} in {checkpointer.directory}: "
            f"{error.strerror or error}; {intact}"
        ) from e


def train_loop(
    learner: Learner,
    run_dir: str,
    seed: int,
    *,
    checkpoint_every_chunks: int,
    resume: bool,
    progress: bool = True,
    on_chunk: Callable[[int, dict], None] | None = None,
    run_info: dict | None = None,
    run_differences: ckpt_lib.Differences = ckpt_lib.run_differences,
    periodic_eval: PeriodicEval | None = None,
) -> tuple[Any, dict]:
    """Runs (or resumes) all chunks of a learner, checkpointing as it goes.

    Args:
      learner: the learner's pieces.
      run_dir: the run directory (exists, writable).
      seed: the run's seed.
      checkpoint_every_chunks: save every this many chunks (and always at the end).
      resume: continue from the newest intact checkpoint in ``run_dir`` if any.
      progress: show a tqdm progress bar.
      on_chunk: optional callback(chunk_index, metrics_line), for tests.
      run_info: the run's identity (env, agent, seed, config), recorded in each
        checkpoint and required of the one resumed from; default ``{"seed": seed}``.
      run_differences: how a checkpoint's recorded identity is compared with
        ``run_info`` (``checkpoint.verify``); default: entry by entry.
      periodic_eval: evaluations during training, into the metrics lines; none
        by default.

    Returns:
      The final train state and the last checkpoint's metadata.

    Raises:
      RunError: a metrics or checkpoint write failed (the last checkpoint is intact).
      checkpoint.CheckpointError: checkpoints exist but none can be resumed from.
      Stopped: SIGINT or SIGTERM arrived; the run stopped after a checkpoint.
    """
    from tqdm.auto import tqdm  # pylint: disable=import-outside-toplevel

    start_time = time.time()  # wall_seconds include init and compilation
    train_key, _ = split_run_key(seed)
    run = run_info if run_info is not None else {"seed": seed}
    state = jax.jit(learner.init)(train_key)
    struct = ckpt_lib.structure(state)
    # In a multi-host run only process 0 writes metrics (all hold the same values).
    main_process = jax.process_index() == 0
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    manifest = _resume_point(run_dir, run, struct, run_differences) if resume else None
    prefix = b""
    if manifest is not None and main_process:
        prefix = _metrics_prefix(metrics_path, manifest["meta"])
    checkpointer = ckpt_lib.Checkpointer(
        os.path.join(run_dir, "checkpoints"), run=run, struct=struct
    )
    start_chunk, wall_before, last_saved = 0, 0.0, None
    if manifest is not None:
        last_saved = manifest["step"]
        _check_chunks(learner, manifest["meta"], checkpointer.directory)
        state, meta = checkpointer.restore_state(last_saved, ckpt_lib.abstract_like(state))
        start_chunk, wall_before = int(meta["chunks"]), float(meta["wall_seconds"])
    if main_process:
        write_atomic(metrics_path, prefix)
    else:
        metrics_path = os.devnull
    digest, written = hashlib.sha256(prefix), len(prefix)

    # Compile before the progress bar starts, so its rate and ETA are honest.
    run_chunk = jax.jit(learner.run_chunk, donate_argnums=0).lower(state).compile()
    evaluate_now = None if periodic_eval is None else periodic_eval.compile(learner, seed)
    total_steps = learner.env_steps_at_init + learner.num_chunks * learner.env_steps_per_chunk
    done_steps = learner.env_steps_at_init + start_chunk * learner.env_steps_per_chunk
    bar = tqdm(
        total=total_steps,
        initial=done_steps,
        unit="step",
        unit_scale=True,
        dynamic_ncols=True,
        disable=not (progress and main_process),
        desc="train",
    )
    meta = {"chunks": start_chunk, "env_steps": done_steps, "wall_seconds": wall_before}
    with faults.StopOnSignal() as stop, open(metrics_path, "ab") as metrics_file:
        for chunk in range(start_chunk, learner.num_chunks):
            faults.point("chunk-start")
            chunk_start = time.time()
            state, metrics = run_chunk(state)
            metrics = jax.device_get(metrics)
            elapsed = time.time() - chunk_start
            line = {"chunk": chunk + 1, **chunk_line(metrics)}
            line["env_steps"] = (
                learner.env_steps_at_init + (chunk + 1) * learner.env_steps_per_chunk
            )
            line["steps_per_second"] = learner.env_steps_per_chunk / max(elapsed, 1e-9)
            # The first chunk also takes the steps of init's prefill, multiples within it included.
            before = line["env_steps"] - learner.env_steps_per_chunk if chunk else 0
            if evaluate_now is not None and periodic_eval.due(before, line["env_steps"]):
                line.update(evaluate_now(learner.policy_params(state), line["env_steps"]))
            line["wall_seconds"] = wall_before + time.time() - start_time
            data = (json.dumps(line) + "\n").encode()
            digest.update(data)
            written += len(data)
            try:
                metrics_file.write(data)
                metrics_file.flush()
            except OSError as e:
                intact = f"checkpoint {last_saved} is intact" if last_saved else "no checkpoint yet"
                raise RunError(f"cannot write {metrics_path}: {e.strerror or e}; {intact}") from e
            faults.point("chunk-end")
            bar.update(learner.env_steps_per_chunk)
            if "episode_return" in line:  # the latest chunk in which an episode ended
                bar.set_postfix(ret=f"{line['episode_return']:.1f}", refresh=False)
            meta = {
                "chunks": chunk + 1,
                "env_steps": line["env_steps"],
                "wall_seconds": line["wall_seconds"],
                "metrics_bytes": written,
                "metrics_sha256": digest.hexdigest(),
            }
            scheduled = (chunk + 1) % checkpoint_every_chunks == 0
            if scheduled or chunk + 1 == learner.num_chunks or stop.received:
                policy = learner.policy_params(state)
                _save(checkpointer, chunk + 1, state, policy, meta, last_saved)
                last_saved = chunk + 1
            if on_chunk is not None:
                on_chunk(chunk, line)
            if stop.received:
                break
    bar.close()
    checkpointer.close()
    if stop.received and last_saved is not None:
        raise Stopped(stop.received, last_saved, learner.num_chunks, checkpointer.directory)
    return state, meta


def evaluate_policy(
    env: Any, learner: Learner, policy_params: Any, seed: int, episodes: int
) -> dict:
    """Evaluation returns summary (mean_return, stderr, episodes, eval_seconds)."""
    _, eval_key = split_run_key(seed)
    start = time.time()
    returns = jax.jit(lambda p, k: evaluate(env, learner.policy, p, k, episodes))(
        policy_params, eval_key
    )
    returns = np.asarray(jax.device_get(returns))
    out = summarize(returns)
    out["eval_seconds"] = time.time() - start
    out["returns"] = [float(r) for r in returns]
    return out


def plot_learning_curve(run_dir: str, eval_result: dict | None = None) -> None:
    """Writes ``learning_curve.png``: training episode return against env steps."""
    import matplotlib  # pylint: disable=import-outside-toplevel

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel

    lines = read_metrics(run_dir)
    steps = [l["env_steps"] for l in lines if l.get("episode_return") is not None]
    returns = [l["episode_return"] for l in lines if l.get("episode_return") is not None]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, returns, label="training episodes")
    if eval_result is not None:
        ax.errorbar(
            [eval_result["env_steps"]],
            [eval_result["mean_return"]],
            yerr=[eval_result["stderr"]],
            fmt="o",
            color="C3",
            label=f"evaluation ({eval_result['episodes']} episodes)",
        )
        published = (eval_result.get("published") or {}).get("after_1e8_steps")
        agent, name = (
            ("d4pg_pixels", "D4PG from pixels") if eval_result.get("pixels") else ("d4pg", "D4PG")
        )
        if published and agent in published:
            ax.axhline(
                published[agent]["mean"],
                color="0.4",
                linestyle="--",
                label=f"{name}, 1e8 steps (suite report)",
            )
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=".tmp-", suffix=".png")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=100)
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(run_dir, "learning_curve.png"))
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
