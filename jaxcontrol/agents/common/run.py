"""Driving a learner from Python: chunks, progress bar, metrics, checkpoints, evaluation.

The run directory holds:

* ``run.json``: env, agent, seed and the full config (checked on resume);
* ``metrics.jsonl``: one JSON line per chunk;
* ``checkpoints/``: orbax checkpoints (see ``checkpoint.py``);
* ``learning_curve.png`` and ``eval.json`` at the end.

Files are written whole (temporary file, then rename), so an interrupted run
never leaves a half-written JSON or PNG behind.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxcontrol.agents.common import checkpoint as ckpt_lib
from jaxcontrol.agents.common.evaluation import evaluate, summarize
from jaxcontrol.agents.common.learner import Learner

WALL_FIELDS = ("wall_seconds", "steps_per_second")  # not reproducible across runs


def split_run_key(seed: int) -> tuple[jax.Array, jax.Array]:
    """(train_key, eval_key) of a run, from its seed."""
    train_key, eval_key = jax.random.split(jax.random.PRNGKey(seed))
    return train_key, eval_key


def write_atomic(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` via a temporary file and a rename."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _json_value(value: Any) -> Any:
    value = float(value)
    return None if math.isnan(value) else value


def read_metrics(run_dir: str) -> list[dict]:
    """The lines of ``metrics.jsonl`` (empty when absent)."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def train_loop(
    learner: Learner,
    run_dir: str,
    seed: int,
    *,
    checkpoint_every_chunks: int,
    resume: bool,
    progress: bool = True,
    on_chunk: Callable[[int, dict], None] | None = None,
) -> tuple[Any, dict]:
    """Runs (or resumes) all chunks of a learner, checkpointing as it goes.

    Args:
      learner: the learner's pieces.
      run_dir: the run directory (exists, writable).
      seed: the run's seed.
      checkpoint_every_chunks: save every this many chunks (and always at the end).
      resume: continue from the latest checkpoint in ``run_dir`` if any.
      progress: show a tqdm progress bar.
      on_chunk: optional callback(chunk_index, metrics_line), for tests.

    Returns:
      The final train state and the last checkpoint's metadata.
    """
    from tqdm.auto import tqdm  # pylint: disable=import-outside-toplevel

    start_time = time.time()  # wall_seconds include init and compilation
    train_key, _ = split_run_key(seed)
    checkpointer = ckpt_lib.Checkpointer(os.path.join(run_dir, "checkpoints"))
    start_chunk, wall_before, lines = 0, 0.0, []
    latest = checkpointer.latest_step() if resume else None
    if latest is not None:
        abstract = ckpt_lib.abstract_like(jax.jit(learner.init)(train_key))
        state, meta = checkpointer.restore_state(latest, abstract)
        start_chunk, wall_before = int(meta["chunks"]), float(meta["wall_seconds"])
        lines = read_metrics(run_dir)[:start_chunk]
    else:
        state = jax.jit(learner.init)(train_key)
    # In a multi-host run only process 0 writes metrics (all hold the same values).
    main_process = jax.process_index() == 0
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    if main_process:
        write_atomic(metrics_path, "".join(json.dumps(line) + "\n" for line in lines))
    else:
        metrics_path = os.devnull

    # Compile before the progress bar starts, so its rate and ETA are honest.
    run_chunk = jax.jit(learner.run_chunk, donate_argnums=0).lower(state).compile()
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
    recent = float("nan")
    with open(metrics_path, "a") as metrics_file:
        for chunk in range(start_chunk, learner.num_chunks):
            chunk_start = time.time()
            state, metrics = run_chunk(state)
            metrics = jax.device_get(metrics)
            elapsed = time.time() - chunk_start
            line = {"chunk": chunk + 1, **{k: _json_value(v) for k, v in metrics.items()}}
            line["env_steps"] = (
                learner.env_steps_at_init + (chunk + 1) * learner.env_steps_per_chunk
            )
            line["wall_seconds"] = wall_before + time.time() - start_time
            line["steps_per_second"] = learner.env_steps_per_chunk / max(elapsed, 1e-9)
            metrics_file.write(json.dumps(line) + "\n")
            metrics_file.flush()
            if line.get("episode_return") is not None:
                recent = line["episode_return"]
            bar.update(learner.env_steps_per_chunk)
            bar.set_postfix(ret=f"{recent:.1f}", refresh=False)
            meta = {
                "chunks": chunk + 1,
                "env_steps": line["env_steps"],
                "wall_seconds": line["wall_seconds"],
            }
            if (chunk + 1) % checkpoint_every_chunks == 0 or chunk + 1 == learner.num_chunks:
                checkpointer.save(chunk + 1, state, learner.policy_params(state), meta)
            if on_chunk is not None:
                on_chunk(chunk, line)
    bar.close()
    checkpointer.close()
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
        if published:
            ax.axhline(
                published["d4pg"]["mean"],
                color="0.4",
                linestyle="--",
                label="D4PG, 1e8 steps (suite report)",
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
