"""One whole episode from a dm_control reset under fixed actions, four ways."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol.core import Env, StepType
from jaxcontrol.mjcf import compat
from jaxcontrol.parity.engines import CpuPath, raw_data
from jaxcontrol.parity.step import worst_difference
from jaxcontrol.reference.actions import action_bounds
from jaxcontrol.reference.batched import stack as _stack
from jaxcontrol.reference.episodes import episode_steps
from jaxcontrol.reference.state import DmState, inject
from jaxcontrol.reference.suite import reference_for


def smooth_actions(spec, steps: int, amplitude: float = 1.0) -> np.ndarray:
    """A smooth, deterministic action sequence (sums of sines) within `action_bounds`."""
    t = np.arange(steps)[:, None]
    phase = np.arange(spec.shape[0])[None, :]
    wave = np.clip(
        amplitude * (0.8 * np.sin(0.05 * t + phase) + 0.3 * np.sin(0.31 * t + 2 * phase)), -1, 1
    )
    low, high = action_bounds(spec)
    return wave * (high - low) / 2 + (high + low) / 2


def episode_parity(
    env: Env, seed: int = 0, steps: int | None = None, amplitude: float = 1.0
) -> dict[str, Any]:
    """One episode from a dm_control reset under fixed actions, four ways.

    The actions are `smooth_actions`, identical for every engine. Reports the
    returns, the worst observation difference over the episode, how many steps
    dm_control had active constraints (there the solvers agree only to their
    tolerance, which chaotic dynamics then amplify), and how far stock
    `mjx.step` drifts from C MuJoCo over the same episode (`raw_drift`, the
    worst qpos difference; `raw_drift_100` after 100 control steps).

    `steps` defaults to the whole episode (`episode_steps`). Where dm_control's
    episode ends sooner (a terminal state), every engine stops at that step, and
    `steps` reports how many were taken; `ends_alike` tells whether ours ended
    (LAST) exactly where dm_control did.
    """
    dm_env = reference_for(env, seed)
    dm_env.reset()
    start = DmState.capture(env, dm_env)
    actions = smooth_actions(dm_env.action_spec(), steps or episode_steps(env), amplitude)

    dm_obs, dm_rewards, dm_qpos, constraint_steps = [], [], [], 0
    for a in actions:
        timestep = dm_env.step(a)
        dm_obs.append(timestep.observation)
        dm_rewards.append(timestep.reward)
        dm_qpos.append(np.array(dm_env.physics.data.qpos))
        constraint_steps += int(dm_env.physics.data.nefc > 0)
        if timestep.last():  # dm_control would reset at the next step
            break
    dm_obs, dm_qpos = _stack(dm_obs), np.stack(dm_qpos)
    steps, dm_last = len(dm_rewards), bool(timestep.last())
    dm_types_last = (np.arange(steps) == steps - 1) & dm_last
    actions = actions[:steps]

    state = jax.jit(lambda s: inject(env, s))(start)
    dtype = state.data.qpos.dtype

    @jax.jit
    def rollout(state, actions):
        def body(s, a):
            s = env.step(s, a)
            return s, (s.observation, s.reward, s.step_type)

        return jax.lax.scan(body, state, actions)[1]

    ours_obs, ours_rewards, ours_types = jax.tree.map(
        np.asarray, rollout(state, jnp.asarray(actions, dtype))
    )
    raw_qpos = _raw_rollout(env, start, actions)

    path = CpuPath(env)
    path.set_state(start)
    cpu = [path.step(a) for a in actions]
    cpu_obs = _stack([o for o, _ in cpu])

    dm_return = float(np.sum(dm_rewards))
    ours, cpu_return = float(np.sum(ours_rewards)), float(sum(r for _, r in cpu))
    scale = max(abs(dm_return), 1e-12)
    drift = np.max(np.abs(raw_qpos - dm_qpos), axis=1)
    return {
        "steps": steps,
        "dm_control_last": dm_last,
        "ends_alike": bool(np.array_equal(ours_types == StepType.LAST, dm_types_last)),
        "amplitude": amplitude,
        "constraint_steps": constraint_steps,
        "dm_control": dm_return,
        "ours": ours,
        "cpu": cpu_return,
        "ours_rel": abs(ours - dm_return) / scale,
        "cpu_rel": abs(cpu_return - dm_return) / scale,
        "ours_obs": max(worst_difference(ours_obs[k], dm_obs[k]) for k in dm_obs),
        "cpu_obs": max(worst_difference(cpu_obs[k], dm_obs[k]) for k in dm_obs),
        "raw_drift": float(drift.max()),
        "raw_drift_100": float(drift[: min(100, steps)].max()),
    }


def _raw_rollout(env: Env, start: DmState, actions: np.ndarray) -> np.ndarray:
    """qpos after each control step of stock `mjx.step`, from `start`."""
    mj_model = compat.to_mjx_compatible(env.mj_model)
    for name, value in start.model_fields.items():
        getattr(mj_model, name)[:] = value
    model = compat.put_model(mj_model)
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    data = raw_data(compat.put_data(mj_model, mujoco.MjData(mj_model)), start, dtype)
    data = jax.jit(mjx.forward)(model, data)  # derived fields in mjx.step's own dtypes

    @jax.jit
    def rollout(data, actions):
        def body(d, a):
            d = d.replace(ctrl=a)
            d, _ = jax.lax.scan(lambda d, _: (mjx.step(model, d), None), d, None, env.n_sub_steps)
            return d, d.qpos

        return jax.lax.scan(body, data, actions)[1]

    return np.asarray(rollout(data, jnp.asarray(actions, dtype)))
