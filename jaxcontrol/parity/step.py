"""One step from dm_control's states: the worst differences of each engine from dm_control."""

from __future__ import annotations

import collections
from collections.abc import Sequence

import jax
import numpy as np

from jaxcontrol.core import Env, State
from jaxcontrol.parity.engines import CpuPath, mjx_step_from, raw_mjx_step_from
from jaxcontrol.parity.tolerance import ONE_STEP_TARGET
from jaxcontrol.reference.batched import stack as _stack
from jaxcontrol.reference.samples import Transition


def _to_numpy(state: State) -> State:
    """The state's arrays as NumPy arrays (its PRNG key dropped)."""
    return jax.tree.map(np.asarray, state.replace(key=None))


def worst_difference(a, b, relative: bool = False) -> float:
    """The largest |a - b|; with `relative`, divided by max(1, max |b|), b's scale."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    worst = float(np.max(np.abs(a - b), initial=0))
    if relative:
        worst /= max(1.0, float(np.max(np.abs(b), initial=0)))
    return worst


def compare_step(
    first: State, nxt: State, transitions: Sequence[Transition], relative: bool = False
) -> collections.OrderedDict:
    """Worst differences from dm_control of stacked states: `nxt`, one step from each
    transition's start (observations, reward, qpos, qvel), and `first`, those starts
    (`reset_obs/KEY`: the observation of the starts that dm_control had just reset)."""
    first, nxt = _to_numpy(first), _to_numpy(nxt)
    dm_obs = _stack([t.observation for t in transitions])
    ours = collections.OrderedDict()
    for key in transitions[0].observation:
        ours[f"obs/{key}"] = worst_difference(nxt.observation[key], dm_obs[key], relative)
    ours["reward"] = worst_difference(nxt.reward, [t.reward for t in transitions], relative)
    ours["qpos"] = worst_difference(
        nxt.data.qpos, _stack([t.next_qpos for t in transitions]), relative
    )
    ours["qvel"] = worst_difference(
        nxt.data.qvel, _stack([t.next_qvel for t in transitions]), relative
    )
    resets = [i for i, t in enumerate(transitions) if t.start.step == 0]
    for key in transitions[0].observation:
        dm_first = _stack([transitions[i].start_observation[key] for i in resets])
        ours[f"reset_obs/{key}"] = worst_difference(
            first.observation[key][resets], dm_first, relative
        )
    return ours


def step_parity(
    env: Env, transitions: Sequence[Transition], relative: bool = False, raw: bool = True
) -> tuple[dict, dict, dict]:
    """Worst differences from dm_control after one step from each transition's state.

    Returns (ours, cpu, raw) dicts. `ours` also holds `reset_obs/KEY`, the
    observation of the injected states that dm_control had just reset, against
    dm_control's reset observation. With `relative`, each worst difference is
    divided by the quantity's scale, max(1, max |dm_control's value|). With
    `raw=False`, stock MJX is not run (an empty `raw`).
    """
    first, nxt = mjx_step_from(env, transitions)
    ours = compare_step(first, nxt, transitions, relative)
    raw_report = raw_step_parity(env, transitions, relative, ours) if raw else {}
    path = CpuPath(env)
    worst = collections.defaultdict(float)
    for t in transitions:
        path.set_state(t.start)
        o, r = path.step(t.action)
        for key in o:
            worst[f"obs/{key}"] = max(
                worst[f"obs/{key}"], worst_difference(o[key], t.observation[key], relative)
            )
        worst["reward"] = max(worst["reward"], worst_difference(r, t.reward, relative))
        worst["qpos"] = max(worst["qpos"], worst_difference(path.data.qpos, t.next_qpos, relative))
        worst["qvel"] = max(worst["qvel"], worst_difference(path.data.qvel, t.next_qvel, relative))
    cpu = {k: worst[k] for k in ours if not k.startswith("reset_obs/")}
    return dict(ours), cpu, raw_report


def raw_step_parity(
    env: Env, transitions: Sequence[Transition], relative: bool = False, ours: dict | None = None
) -> dict:
    """Stock `mjx.step`'s worst differences from dm_control after one step (qpos,
    qvel and `obs/KEY`), as `step_parity` measures ours.

    Where `ours` (`step_parity`'s) has a `reset_obs/KEY` over the one-step target,
    raw MJX's observations of the same reset states are measured too
    (`raw_mjx_step_from`'s `at_start`): a state at a contact's knife edge
    (quadruped-fetch's toes, on dm_control's floor to 1e-16 m, and 1.5e-8 m into
    it once rounded to float32) gives stock MJX the same contact force.
    """
    dtype = "float64" if jax.config.jax_enable_x64 else "float32"
    at_start = any(
        k.startswith("reset_obs/") and not v <= ONE_STEP_TARGET[dtype]
        for k, v in (ours or {}).items()
    )
    raw_qpos, raw_qvel, raw_obs, start_obs = raw_mjx_step_from(env, transitions, at_start)
    dm_obs = _stack([t.observation for t in transitions])
    report = {
        "qpos": worst_difference(raw_qpos, _stack([t.next_qpos for t in transitions]), relative),
        "qvel": worst_difference(raw_qvel, _stack([t.next_qvel for t in transitions]), relative),
    }
    for key in transitions[0].observation:
        report[f"obs/{key}"] = worst_difference(raw_obs[key], dm_obs[key], relative)
    resets = [i for i, t in enumerate(transitions) if t.start.step == 0]
    for key in start_obs:
        dm_first = _stack([transitions[i].start_observation[key] for i in resets])
        report[f"reset_obs/{key}"] = worst_difference(start_obs[key][resets], dm_first, relative)
    return report
