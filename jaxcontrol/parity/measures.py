"""The pieces of a record but the soak: one step, the episode, resets and returns."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import reference
from jaxcontrol.core import Env
from jaxcontrol.parity import sampling
from jaxcontrol.parity.classes import episode_class
from jaxcontrol.parity.families import step_with_rewards
from jaxcontrol.parity.progress import Progress, TaskParts
from jaxcontrol.parity.settings import (
    CONFIRM_BATCHES,
    CONFIRM_REFERENCE,
    CONFIRM_SEED_OFFSET,
    EPISODE_AMPLITUDE,
    KS_THRESHOLD,
    N_STATES,
    POLICIES,
    RAW_EXACT_DRIFT,
    RESETS_OURS,
    RESETS_REFERENCE,
    RETURN_EPISODES,
    RETURN_QUARTERS,
    return_parts,
)
from jaxcontrol.parity.step import step_parity
from jaxcontrol.parity.tolerance import RAW_STATE_KEYS, one_step_tolerance
from jaxcontrol.parity.trajectory import episode_parity, smooth_actions


def one_step(env: Env, x64: bool, n_states: int = N_STATES, seed: int = 0) -> dict[str, Any]:
    """One-step parity from `n_states` dm_control states (call inside the right x64 mode)."""
    transitions = reference.reference_transitions(env, n_states, seed)
    ours, cpu, raw = step_parity(env, transitions, relative=not x64)
    dtype = "float64" if x64 else "float32"
    return {
        "dtype": dtype,
        "n_states": n_states,
        "ours": ours,
        "cpu": cpu,
        "raw": raw,
        "tolerance": one_step_tolerance(dtype, raw),
        "worst_ours": max(ours.values()),
        "worst_cpu": max(cpu.values()),
        "worst_raw": max((raw[k] for k in RAW_STATE_KEYS if k in raw), default=None),
    }


def episode(env: Env) -> dict[str, Any]:
    """Float64 whole-episode parity, classed by what raw MJX achieves."""
    report = episode_parity(env, seed=0, amplitude=EPISODE_AMPLITUDE)
    report["measured_class"] = (
        "exact" if report["raw_drift"] <= RAW_EXACT_DRIFT else "distributional"
    )
    report["declared_class"] = episode_class(env.domain, env.task_name)
    return report


def resets(env: Env, seed: int = 3) -> dict[str, Any]:
    """KS p-values of our reset distribution against dm_control's, per coordinate.

    Per quantity: the smallest p over its non-constant columns and how many there
    were. Per-episode model fields are tested family-wise (`reset_pvalues`).

    A quantity that misses the threshold gets a second, independent test: fresh
    keys on our side, a fresh dm_control seed, each side about five times larger
    (`confirmation`). One quantity of many columns (humanoid_CMU's qpos has 63)
    held to p > 0.001 column by column misses by chance about 6% of the time; a
    real difference that reached p <= 0.001 in the first samples shows again, far
    more strongly, in the larger second ones. Both stages stay in the record.
    """
    keys = jax.random.split(jax.random.key(11), RESETS_OURS)
    ours = sampling.chunked_reset_samples(env, keys)
    ref = reference.reference_resets(env, RESETS_REFERENCE, seed)
    piece = _ks_piece(ours, ref)
    piece["names_match"] = sorted(ours) == sorted(ref)
    piece["family_wise"] = sorted(set(ref) & set(env.default_model_fields()))
    low = sorted(name for name, p in reset_pvalues(piece).items() if p <= KS_THRESHOLD)
    if low:
        piece["confirmation"] = _confirm_resets(env, low, seed + CONFIRM_SEED_OFFSET)
    return piece


def _ks_piece(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, Any]:
    """Sample sizes, each quantity's smallest KS p and column count, mismatched constants."""
    n_ours, n_ref = (len(next(iter(side.values()))) for side in (ours, ref))
    pvalues, columns, constant_mismatch = {}, {}, []
    for name, theirs in ref.items():
        column_p, mismatched = ks_columns(ours[name].reshape(n_ours, -1), theirs.reshape(n_ref, -1))
        constant_mismatch += [f"{name}[{column}]" for column in mismatched]
        pvalues[name] = min(column_p, default=1.0)
        columns[name] = len(column_p)
    return {
        "samples": [n_ours, n_ref],
        "min_pvalue": pvalues,
        "columns": columns,
        "constant_mismatch": constant_mismatch,
    }


def _confirm_resets(env: Env, names: list[str], seed: int) -> dict[str, Any]:
    """The second stage of `resets`: the named quantities on fresh, larger samples."""
    keys = jax.random.split(jax.random.key(12), CONFIRM_BATCHES * RESETS_OURS)
    ours = sampling.chunked_reset_samples(env, keys)
    ours = {name: ours[name] for name in names}
    ref = reference.reference_resets(env, CONFIRM_REFERENCE, seed)
    return {**_ks_piece(ours, {name: ref[name] for name in names}), "seed": seed}


def ks_columns(ours: np.ndarray, ref: np.ndarray) -> tuple[list[float], list[int]]:
    """Two-sample KS p-values of each column of `ours` (samples x columns) against
    `ref`'s, at our precision, and the columns constant in both but at values that
    differ. dm_control's float64 values are rounded to our dtype first: a discrete
    draw (stacker's target height, 0.022 or 0.066 m) would otherwise be two sets of
    values 1e-9 apart, which KS tells apart at once."""
    from scipy import stats

    ref = ref.astype(ours.dtype)
    pvalues, mismatched = [], []
    for column in range(ref.shape[1]):
        x, y = ours[:, column], ref[:, column]
        if np.ptp(x) == 0 and np.ptp(y) == 0:
            if not np.isclose(x[0], y[0], rtol=0, atol=1e-6):
                mismatched.append(column)
            continue
        pvalues.append(float(stats.ks_2samp(x, y).pvalue))
    return pvalues, mismatched


def reset_pvalues(piece: dict[str, Any]) -> dict[str, float]:
    """Each reset quantity's p-value, to be held to `KS_THRESHOLD`.

    A state coordinate or task variable is held to the threshold one column at a
    time, as the issue states it. A per-episode model field is one quantity of many
    correlated columns (escape's terrain has 40,401): it is held to the threshold
    family-wise, its smallest p times its column count (Bonferroni), since the
    smallest of 40,401 p-values under equal distributions is about 2.5e-5. A
    quantity that missed and was tested again on larger samples (`resets`) is held
    to that second test.
    """
    family = set(piece.get("family_wise", ()))  # older records lack it
    second = piece.get("confirmation", {"min_pvalue": {}, "columns": {}})
    out = {}
    for name in piece["min_pvalue"]:
        # A first-stage miss was tested again (`resets`); older records lack "columns".
        source = second if name in second["min_pvalue"] else piece
        p = source["min_pvalue"][name]
        # A field constant on both sides (finger's damping) has no column to test: p 1.
        columns = max(1, source["columns"][name]) if name in family else 1
        out[name] = min(1.0, p * columns)
    return out


def open_loop_actions(spec, policy: str, steps: int) -> np.ndarray:
    """An action sequence that depends only on time, within `reference.action_bounds`."""
    if policy == "zero":
        return np.zeros((steps,) + spec.shape)
    if policy == "sinusoid":
        return smooth_actions(spec, steps, amplitude=1.0)
    if policy == "bang_bang":
        t = np.arange(steps)[:, None]
        phase = np.arange(spec.shape[0])[None, :]
        low, high = reference.action_bounds(spec)
        return np.where(np.sin(0.1 * t + phase) >= 0, high, low)
    raise ValueError(f"unknown policy {policy!r}; valid policies: {', '.join(POLICIES)}")


def returns(
    env: Env, episodes: int = RETURN_EPISODES, seed: int = 5, progress: Progress | None = None
) -> dict[str, Any]:
    """Returns under each open-loop policy, ours and dm_control's, and their z-scores.

    Each policy draws its own resets on both sides (seeded by the policy's index),
    so that a resumed run measures exactly what an uninterrupted one would.
    Our episodes run in quarters (parts `policy.0` ...), the same episodes (keys)
    as one batch would run, so that a long policy (stacker-stack_4's, hours of
    one core) fits a session; dm_control's side and the comparison are the
    policy's own part. A policy saved whole (before quarters) is kept as it is.
    An episode's return sums its rewards up to its LAST step (the time limit,
    or a terminal state), over at most `reference.episode_steps` steps."""
    return family_returns([env], episodes, seed, [progress or Progress(None)])[0]


def family_returns(
    envs: Sequence[Env],
    episodes: int = RETURN_EPISODES,
    seed: int = 5,
    progresses: Sequence[Progress] | None = None,
) -> list[dict[str, Any]]:
    """`returns` of each of `envs`, siblings of one rollout family
    (`families.step_with_rewards`), from the first one's episodes: the same keys and
    actions give each task the episodes its own run has, and each task's returns
    are compared with its own dm_control environment's."""
    parts_of = TaskParts(progresses or [Progress(None) for _ in envs])
    run = _open_loop_returns(envs[0], tuple(envs[1:]))
    outs: list[dict[str, Any]] = [{} for _ in envs]
    for index, policy in enumerate(POLICIES):
        dm_envs = [reference.reference_for(env, seed + index) for env in envs]
        steps = reference.episode_steps(envs[0])
        actions = open_loop_actions(dm_envs[0].action_spec(), policy, steps)
        keys = jax.random.split(jax.random.key(seed + index), episodes)
        quarters = [] if parts_of.has(policy) else _quarters(parts_of, run, policy, actions, keys)
        if any(quarter is None for quarter in quarters):  # left to another run
            parts_of.skip(policy)
            continue
        # dm_control's side is short (C MuJoCo: about a minute for stacker-stack_4), so
        # whichever run has all our quarters measures it.
        compared = parts_of.part(
            policy, _family_policy_returns, dm_envs, quarters, actions, cheap=True
        )
        for out, result in zip(outs, compared):
            out[policy] = result
    parts_of.done()
    return outs


def _quarters(parts_of: TaskParts, run, policy: str, actions: np.ndarray, keys: jax.Array):
    """Our returns in parts `policy.0` ... (None where a part is left to another run),
    each a list of every task's returns."""
    size = -(-len(keys) // RETURN_QUARTERS)
    names = return_parts(policy)
    return [
        parts_of.part(names[quarter], _our_returns, run, keys[start : start + size], actions)
        for quarter, start in enumerate(range(0, len(keys), size))
    ]


def _our_returns(run, keys: jax.Array, actions: np.ndarray) -> list[list[float]]:
    return np.asarray(run(keys, jnp.asarray(actions, jnp.float32))).tolist()


def _family_policy_returns(dm_envs, quarters: list[list[list[float]]], actions: np.ndarray):
    """`_policy_returns` of each task, from its quarters of our returns."""
    return [
        _policy_returns(dm_env, [quarter[i] for quarter in quarters], actions)
        for i, dm_env in enumerate(dm_envs)
    ]


def _policy_returns(dm_env, quarters: list[list[float]], actions: np.ndarray) -> dict[str, Any]:
    """dm_control's returns (as many episodes as ours), compared with ours."""
    ours = np.concatenate(quarters)
    ref = [_dm_control_return(dm_env, actions) for _ in ours]
    return compare_returns(ours, np.asarray(ref))


def _dm_control_return(dm_env, actions: np.ndarray) -> float:
    """One dm_control episode's return under `actions`, up to its LAST step."""
    dm_env.reset()
    total = 0.0
    for action in actions:
        timestep = dm_env.step(action)
        total += timestep.reward
        if timestep.last():
            break
    return total


@functools.cache
def _open_loop_returns(
    env: Env, siblings: tuple[Env, ...] = ()
) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """A jitted `(keys, actions) -> returns` of episodes under one action sequence
    (rewards up to each episode's LAST step: none after it is counted), one row for
    `env` and one for each of its `siblings` (`families.step_with_rewards`); one per env."""

    @jax.jit
    def run(keys, actions):
        states = jax.vmap(env.reset)(keys)

        def body(states, action):
            running = ~states.last()
            if siblings:
                states, others = jax.vmap(
                    lambda s, a: step_with_rewards(env, s, a, siblings), in_axes=(0, None)
                )(states, action)
                rewards = jnp.concatenate([states.reward[None], others.T])
            else:  # the program that earlier quarters came from
                states = jax.vmap(env.step, in_axes=(0, None))(states, action)
                rewards = states.reward[None]
            return states, jnp.where(running, rewards, 0)

        return jax.lax.scan(body, states, actions)[1].sum(axis=0)

    return run


def compare_returns(ours: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """Two samples of episode returns: means, standard errors, the z of their gap
    (the target), a rank test's p (`rank_p`), and the samples.

    The rank test is reported beside z, not held to a threshold: a few episodes in
    a heavy tail (manipulator's in-hand starts) move a mean, not the ranks.
    Older records lack `rank_p` and the samples."""
    se = math.sqrt(ours.var(ddof=1) / len(ours) + ref.var(ddof=1) / len(ref))
    gap = float(ours.mean() - ref.mean())
    z = gap / se if se > 0 else (0.0 if abs(gap) < 1e-9 else math.inf)
    return {
        "ours_mean": float(ours.mean()),
        "ours_stderr": float(ours.std(ddof=1) / math.sqrt(len(ours))),
        "dm_control_mean": float(ref.mean()),
        "dm_control_stderr": float(ref.std(ddof=1) / math.sqrt(len(ref))),
        "z": z,
        "rank_p": rank_p(ours, ref),
        "ours_returns": [float(x) for x in ours],
        "dm_control_returns": [float(x) for x in ref],
    }


def rank_p(ours: Sequence[float], ref: Sequence[float]) -> float:
    """Mann-Whitney U's two-sided p for our float32 returns against dm_control's
    float64 ones, at our precision.

    dm_control's returns are rounded to float32 first, and those below its smallest
    normal number (1.2e-38) read as 0: XLA's CPU code flushes subnormal numbers to
    zero, so where every reward of an episode is that small (manipulator's ball far
    from its target: rewards of 1e-100 and less), ours sum to exactly 0 while
    dm_control's do not. Ranks would otherwise tell those zeros apart from 1e-118:
    bring_ball's 64 episodes a side gave p 9e-8 from such ties alone, and 0.05 at
    our precision."""
    from scipy import stats

    ref32 = np.asarray(ref, np.float32)
    ref32 = np.where(np.abs(ref32) < np.finfo(np.float32).tiny, 0, ref32).astype(np.float64)
    ours64 = np.asarray(ours, np.float32).astype(np.float64)
    return float(stats.mannwhitneyu(ours64, ref32, alternative="two-sided").pvalue)
