"""One step from a spread of states, state by state: ours and stock MJX against dm_control.

`hard_step(env, x64)` steps ours (`engines.mjx_step_from`) and stock `mjx.step`
(`engines.raw_mjx_step_from`) from the states of `hard_states.state_mix` and
measures, per state, each quantity's relative error

    max |a - b| / max(1, max |dm_control's value|)

(the next qpos, qvel, each observation and, for ours, the reward). It summarises
each quantity over the states (`summarize`: median, 99th percentile, maximum and
the shares above `SHARE_THRESHOLDS`) and holds ours to stock MJX state by state:
on each state, ours within `tolerance.one_step_tolerance` of that state's raw
errors, max(target, 10x raw's error there) (`state_misses`).

Raw MJX runs all states as one batch. In float32 a batch rounds differently from
a state stepped alone, and on a state at a contact's switch or along an
ill-conditioned chain the rounding can move the result by far more than float32's
precision (stacker-stack_4, swimmer15; docs/parity.md). So where ours misses the
batch's tolerance, raw MJX is stepped again from that state alone, in each of
`engines.RAW_LAYOUTS`, and the rule holds ours to raw's worst error over the
layouts (`recheck`). The summaries stay the batch's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxcontrol.core import Env
from jaxcontrol.parity.engines import RAW_LAYOUTS, mjx_step_from, raw_mjx_step_from
from jaxcontrol.parity.hard_states import StateMix, policy_runs_from_environment, state_mix
from jaxcontrol.parity.tolerance import RAW_STATE_KEYS, one_step_tolerance
from jaxcontrol.reference.batched import stack

HARD_STATES = 200
SHARE_THRESHOLDS = (1e-4, 1e-2)
MISSES_KEPT = 20  # the record keeps this many of the worst misses in full


def state_errors(a, b) -> np.ndarray:
    """Per state (leading axis), max |a - b| / max(1, max |b|); NaN stays NaN."""
    a = np.asarray(a, np.float64).reshape(len(a), -1)
    b = np.asarray(b, np.float64).reshape(len(b), -1)
    worst = np.max(np.abs(a - b), axis=1, initial=0)
    worst = np.where(np.isnan(a - b).any(axis=1), np.nan, worst)
    return worst / np.maximum(1.0, np.max(np.abs(b), axis=1, initial=0))


def summarize(errors: Sequence[float]) -> dict[str, float]:
    """Median, 99th percentile and maximum of per-state errors (NaN if any is NaN),
    and the share of states above each of `SHARE_THRESHOLDS` (a NaN counts as above)."""
    errors = np.asarray(errors, np.float64)
    nan = bool(np.isnan(errors).any())
    out = {
        "median": float("nan") if nan else float(np.median(errors)),
        "p99": float("nan") if nan else float(np.percentile(errors, 99)),
        "max": float("nan") if nan else float(np.max(errors)),
    }
    for threshold in SHARE_THRESHOLDS:
        out[f"above_{threshold:.0e}"] = float(np.mean(~(errors <= threshold)))
    return out


def dm_control_values(transitions) -> dict[str, np.ndarray]:
    """dm_control's next observations (`obs/KEY`), reward, qpos and qvel, stacked."""
    observations = stack([t.observation for t in transitions])
    return {
        **{f"obs/{k}": np.asarray(v) for k, v in observations.items()},
        "reward": np.asarray([t.reward for t in transitions]),
        "qpos": stack([t.next_qpos for t in transitions]),
        "qvel": stack([t.next_qvel for t in transitions]),
    }


def ours_values(env: Env, transitions) -> dict[str, np.ndarray]:
    """Ours, one step from each transition's start: the same quantities, stacked."""
    _, nxt = mjx_step_from(env, transitions)
    return {
        **{f"obs/{k}": np.asarray(v) for k, v in nxt.observation.items()},
        "reward": np.asarray(nxt.reward),
        "qpos": np.asarray(nxt.data.qpos),
        "qvel": np.asarray(nxt.data.qvel),
    }


def raw_values(env: Env, transitions, layout: str = "batch") -> dict[str, np.ndarray]:
    """Stock `mjx.step` from each start: qpos, qvel and the observations (no reward),
    the states laid out as `layout` (`engines.raw_mjx_step_from`)."""
    qpos, qvel, observations, _ = raw_mjx_step_from(env, transitions, layout=layout)
    return {
        **{f"obs/{k}": np.asarray(v) for k, v in observations.items()},
        "qpos": qpos,
        "qvel": qvel,
    }


def errors_against(values: dict[str, np.ndarray], reference: dict[str, np.ndarray]):
    """{quantity: per-state errors} of `values` against dm_control's `reference`."""
    return {k: state_errors(values[k], reference[k]) for k in reference if k in values}


def state_misses(
    dtype: str, ours: dict[str, np.ndarray], raw: dict[str, np.ndarray]
) -> list[tuple[int, str, float, float]]:
    """(state, quantity, ours' error, tolerance) wherever ours misses, on a state, the
    one-step tolerance set by raw MJX's errors on that same state."""
    n = len(next(iter(ours.values())))
    misses = []
    for i in range(n):
        raw_here = {k: float(v[i]) for k, v in raw.items()}
        for key, errors in ours.items():
            tolerance = one_step_tolerance(dtype, raw_here, key)
            if not errors[i] <= tolerance:  # NaN misses too
                misses.append((i, key, float(errors[i]), tolerance))
    return misses


def worst_per_state(errors: dict[str, np.ndarray], keys: Sequence[str] | None = None):
    """Each state's largest error over `keys` (default: all quantities); NaN if any is."""
    table = np.stack([errors[k] for k in (keys or errors)])
    return np.where(np.isnan(table).any(axis=0), np.nan, np.max(table, axis=0, initial=0))


def recheck(
    env: Env, transitions, reference: dict, dtype: str, ours: dict, raw: dict
) -> tuple[dict[str, np.ndarray], dict[int, dict[str, dict[str, float]]]]:
    """Raw MJX's errors with, on each state where ours misses the rule, its worst
    over `RAW_LAYOUTS` (the state stepped alone too); and those states' raw
    errors in qpos and qvel under each layout, {state: {layout: {key: error}}}."""
    states = sorted({i for i, *_ in state_misses(dtype, ours, raw)})
    if not states:
        return raw, {}
    worst = {k: v.copy() for k, v in raw.items()}
    layouts = {i: {"batch": {k: float(raw[k][i]) for k in RAW_STATE_KEYS}} for i in states}
    picked = [transitions[i] for i in states]
    picked_reference = {k: v[states] for k, v in reference.items()}
    for layout in RAW_LAYOUTS[1:]:
        alone = errors_against(raw_values(env, picked, layout), picked_reference)
        for key, errors in alone.items():
            worst[key][states] = np.maximum(worst[key][states], errors)  # NaN stays NaN
        for j, i in enumerate(states):
            layouts[i][layout] = {k: float(alone[k][j]) for k in RAW_STATE_KEYS}
    return worst, layouts


def piece_of(
    mix: StateMix,
    dtype: str,
    ours: dict,
    raw: dict,
    seed: int,
    raw_rule: dict | None = None,
    layouts: dict | None = None,
) -> dict[str, Any]:
    """The record piece: the mix, each quantity's summary for ours and raw MJX, each
    state's worst errors, and ours' misses of the per-state rule, held to
    `raw_rule` (default `raw`; `recheck`'s worst over layouts) with the
    rechecked states' `layouts`. An empty `raw` (stock MJX not stepped) holds ours
    to the one-step target alone and leaves raw's fields empty."""
    raw_rule = raw if raw_rule is None else raw_rule
    misses = state_misses(dtype, ours, raw_rule)
    worst_ours = worst_per_state(ours)
    raw_states = {}
    if raw:
        raw_states = {
            "raw": [float(x) for x in worst_per_state(raw)],
            "raw_state": [float(x) for x in worst_per_state(raw, RAW_STATE_KEYS)],
        }
    kept = sorted(misses, key=lambda m: -m[2] if m[2] == m[2] else -np.inf)[:MISSES_KEPT]
    return {
        "dtype": dtype,
        "n_states": len(mix.transitions),
        "seed": seed,
        "policy_runs": mix.policy_runs,
        "sources": {s: mix.sources.count(s) for s in dict.fromkeys(mix.sources)},
        "ours": {k: summarize(v) for k, v in ours.items()},
        "raw": {k: summarize(v) for k, v in raw.items()},
        "worst_ours": summarize(worst_ours),
        "worst_raw": summarize(raw_states["raw"]) if raw else None,
        "states": {
            "source": mix.sources,
            "contacts": mix.contacts,
            "rows": mix.rows,
            "ours": [float(x) for x in worst_ours],
            **raw_states,
        },
        "n_misses": len(misses),
        "states_missed": len({m[0] for m in misses}),
        "misses": [
            {
                "state": i,
                "source": mix.sources[i],
                "contacts": mix.contacts[i],
                "quantity": key,
                "ours": error,
                "raw_qpos": float(raw_rule["qpos"][i]) if raw_rule else None,
                "raw_qvel": float(raw_rule["qvel"][i]) if raw_rule else None,
                "tolerance": tolerance,
            }
            for i, key, error, tolerance in kept
        ],
        "rechecked": {str(i): by_layout for i, by_layout in (layouts or {}).items()},
    }


def hard_step(
    env: Env,
    x64: bool,
    n_states: int = HARD_STATES,
    seed: int = 0,
    policy_runs: Sequence[str] | None = None,
    with_raw: bool = True,
) -> dict[str, Any]:
    """One step from `n_states` states of the mix (call inside the right x64 mode);
    `policy_runs` None: those named by `hard_states.POLICY_RUNS_VARIABLE`. Without
    `with_raw`, stock MJX is not stepped: for an env whose physics is not MJX's
    (the C backend), held to the one-step target alone."""
    runs = policy_runs_from_environment() if policy_runs is None else policy_runs
    mix = state_mix(env, n_states, seed, runs)
    reference = dm_control_values(mix.transitions)
    ours = errors_against(ours_values(env, mix.transitions), reference)
    dtype = "float64" if jax.config.jax_enable_x64 else "float32"
    if not with_raw:
        return piece_of(mix, dtype, ours, {}, seed)
    raw = errors_against(raw_values(env, mix.transitions), reference)
    raw_rule, layouts = recheck(env, mix.transitions, reference, dtype, ours, raw)
    return piece_of(mix, dtype, ours, raw, seed, raw_rule, layouts)
