"""Parity of a jaxcontrol task with dm_control, measured three ways.

For a task this module runs, side by side:
  * ours: the MJX `Env` (jitted, vmapped over states);
  * cpu: our own model stepped by C MuJoCo with dm_control's step semantics
    (`mj_step` then `mj_step1`), observed and rewarded by our task code;
  * dm_control: `dm_control.suite.load(domain, task)` itself, the reference.

States come from dm_control's own resets and rollouts. Each is injected into
ours and into the CPU path with `Env.set_state`/`mj_forward`; all three then
take the same action, and the worst differences in observation, reward and
physics state are reported. For whole episodes, the returns under one action
sequence are compared.

dm_control is a test dependency: `pip install jaxcontrol[test]`.

    report = check("cartpole", "swingup", n_states=20)
    print(report)
"""

from __future__ import annotations

import collections
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxcontrol
from jaxcontrol.core import Env
from jaxcontrol.mjcf import compat
from jaxcontrol.physics import Physics


def _suite():
    os.environ.setdefault("MUJOCO_GL", "disable")  # no display needed
    try:
        from dm_control import suite
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("parity checks need dm_control: pip install 'jaxcontrol[test]'") from e
    return suite


def reference_env(domain: str, task: str, seed: int, **task_kwargs):
    """dm_control's environment for the task, seeded."""
    return _suite().load(domain, task, task_kwargs={"random": seed, **task_kwargs})


def reference_variables(domain: str, task: str, dm_physics) -> dict[str, np.ndarray]:
    """The per-episode task variables dm_control keeps in its physics/task."""
    if (domain, task) == ("point_mass", "hard"):
        return {"wrap_prm": np.array(dm_physics.model.wrap_prm)}
    return {}


@dataclasses.dataclass
class Transition:
    """A dm_control state, the action taken from it, and what followed."""

    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    time: float
    variables: dict[str, np.ndarray]
    action: np.ndarray
    observation: collections.OrderedDict
    reward: float
    next_qpos: np.ndarray
    next_qvel: np.ndarray


def _dm_state(domain, task, dm_env):
    p = dm_env.physics
    return {
        "qpos": np.array(p.data.qpos),
        "qvel": np.array(p.data.qvel),
        "act": np.array(p.data.act),
        "time": float(p.data.time),
        "variables": reference_variables(domain, task, p),
    }


def reference_transitions(
    domain: str, task: str, n: int, seed: int = 0, steps_between: int = 7, overshoot: float = 1.2
) -> list[Transition]:
    """`n` transitions from dm_control's resets and random rollouts.

    Every `steps_between`-th state starts a new episode, so resets and
    mid-episode states are both covered. Actions are uniform over
    `overshoot` x the action range, so some exceed the bounds (clipping).
    """
    dm_env = reference_env(domain, task, seed)
    spec = dm_env.action_spec()
    rng = np.random.RandomState(seed + 1)
    transitions = []
    timestep = None
    while len(transitions) < n:
        if timestep is None or timestep.last() or len(transitions) % steps_between == 0:
            dm_env.reset()
        state = _dm_state(domain, task, dm_env)
        centre, half = (spec.maximum + spec.minimum) / 2, (spec.maximum - spec.minimum) / 2
        action = centre + overshoot * half * rng.uniform(-1, 1, spec.shape)
        timestep = dm_env.step(action)
        p = dm_env.physics
        transitions.append(
            Transition(
                **state,
                action=action,
                observation=timestep.observation,
                reward=timestep.reward,
                next_qpos=np.array(p.data.qpos),
                next_qvel=np.array(p.data.qvel),
            )
        )
    return transitions


def reference_resets(domain: str, task: str, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """qpos, qvel and task variables of `n` dm_control resets, stacked."""
    dm_env = reference_env(domain, task, seed)
    resets = []
    for _ in range(n):
        dm_env.reset()
        state = _dm_state(domain, task, dm_env)
        resets.append({"qpos": state["qpos"], "qvel": state["qvel"], **state["variables"]})
    return jax.tree.map(lambda *xs: np.stack(xs), *resets)


# ----- the three engines ---------------------------------------------------------------


def _stack(transitions: Sequence[Transition], field: str):
    return jax.tree.map(lambda *xs: np.stack(xs), *[getattr(t, field) for t in transitions])


def mjx_step_from(env: Env, transitions: Sequence[Transition]):
    """Ours: inject each state with `set_state`, step with its action (vmapped)."""
    template = env.reset(jax.random.key(0))

    @jax.jit
    @jax.vmap
    def run(qpos, qvel, act, time, variables, action):
        state = env.set_state(template, qpos, qvel, act if act.size else None, time, **variables)
        nxt = env.step(state, action)
        return nxt.observation, nxt.reward, nxt.data.qpos, nxt.data.qvel

    return run(
        _stack(transitions, "qpos"),
        _stack(transitions, "qvel"),
        _stack(transitions, "act"),
        np.array([t.time for t in transitions]),
        _stack(transitions, "variables"),
        _stack(transitions, "action"),
    )


class CpuPath:
    """Our model stepped by C MuJoCo with dm_control's semantics."""

    def __init__(self, env: Env):
        self.env = env
        self.model = compat.to_mjx_compatible(env.mj_model)
        self.data = mujoco.MjData(self.model)
        self._original_wrap_prm = np.array(self.model.wrap_prm)

        @jax.jit
        def observe(data, variables):
            physics = Physics(env.mjx_model, data, env.names)
            return (
                env.task.get_observation(physics, variables),
                env.task.get_reward(physics, variables),
            )

        self._observe = observe

    def set_state(self, qpos, qvel, act, time, variables):
        """dm_control's `reset_context`: write the state, then a forward pass."""
        mujoco.mj_resetData(self.model, self.data)
        # Per-episode model edits, written as dm_control writes them.
        self.model.wrap_prm[:] = variables.get("wrap_prm", self._original_wrap_prm)
        self.data.qpos[:], self.data.qvel[:] = qpos, qvel
        if act.size:
            self.data.act[:] = act
        self.data.time = time
        flags = self.model.opt.disableflags
        self.model.opt.disableflags = flags | int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        mujoco.mj_forward(self.model, self.data)
        self.model.opt.disableflags = flags

    def step(self, action, variables):
        """One control step; returns (observation, reward)."""
        self.data.ctrl[:] = action
        mujoco.mj_step(self.model, self.data, self.env.n_sub_steps)
        mujoco.mj_step1(self.model, self.data)
        return self.observe(variables)

    def observe(self, variables):
        data = mjx.put_data(self.model, self.data)
        obs, reward = self._observe(data, {k: jnp.asarray(v) for k, v in variables.items()})
        return jax.tree.map(np.asarray, obs), float(reward)


# ----- the report ----------------------------------------------------------------------


@dataclasses.dataclass
class ParityReport:
    """Worst absolute differences from dm_control (ours = MJX, cpu = C MuJoCo)."""

    domain: str
    task: str
    dtype: str
    n_states: int
    ours: dict[str, float]
    cpu: dict[str, float]
    episode: dict[str, Any] | None = None

    def worst(self) -> float:
        """The worst one-step difference, MJX or CPU path."""
        return max(max(self.ours.values()), max(self.cpu.values()))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        lines = [
            f"{self.domain}-{self.task}: {self.n_states} dm_control states, {self.dtype}",
            f"  {'quantity':<22}{'MJX vs dm_control':>20}{'CPU vs dm_control':>20}",
        ]
        for key in self.ours:
            lines.append(f"  {key:<22}{self.ours[key]:>20.3e}{self.cpu[key]:>20.3e}")
        if self.episode:
            e = self.episode
            lines.append(
                f"  episode ({e['steps']} steps, amplitude {e['amplitude']}, constraints active "
                f"on {e['constraint_steps']} steps): return dm_control {e['dm_control']:.9f}, "
                f"MJX {e['ours']:.9f} (rel {e['ours_rel']:.2e}), "
                f"CPU {e['cpu']:.9f} (rel {e['cpu_rel']:.2e}); worst observation difference "
                f"MJX {e['ours_obs']:.2e}, CPU {e['cpu_obs']:.2e}"
            )
        return "\n".join(lines)


def _worst(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)), initial=0))


def step_parity(env: Env, transitions: Sequence[Transition]) -> tuple[dict, dict]:
    """Worst differences after one step from each transition's state."""
    obs, reward, qpos, qvel = jax.tree.map(np.asarray, mjx_step_from(env, transitions))
    ours, cpu = collections.OrderedDict(), collections.OrderedDict()
    for key in transitions[0].observation:
        ours[f"obs/{key}"] = _worst(obs[key], _stack(transitions, "observation")[key])
    ours["reward"] = _worst(reward, [t.reward for t in transitions])
    ours["qpos"] = _worst(qpos, _stack(transitions, "next_qpos"))
    ours["qvel"] = _worst(qvel, _stack(transitions, "next_qvel"))

    path = CpuPath(env)
    worst = collections.defaultdict(float)
    for t in transitions:
        path.set_state(t.qpos, t.qvel, t.act, t.time, t.variables)
        o, r = path.step(t.action, t.variables)
        for key in o:
            worst[f"obs/{key}"] = max(worst[f"obs/{key}"], _worst(o[key], t.observation[key]))
        worst["reward"] = max(worst["reward"], _worst(r, t.reward))
        worst["qpos"] = max(worst["qpos"], _worst(path.data.qpos, t.next_qpos))
        worst["qvel"] = max(worst["qvel"], _worst(path.data.qvel, t.next_qvel))
    cpu.update((k, worst[k]) for k in ours)
    return dict(ours), dict(cpu)


def episode_parity(
    env: Env, seed: int = 0, steps: int | None = None, amplitude: float = 1.0
) -> dict[str, Any]:
    """One episode from a dm_control reset under fixed actions, three ways.

    The actions are a smooth, deterministic sequence (sums of sines) scaled by
    `amplitude` within the action range, identical for the three engines.
    Reports the returns, the worst observation difference over the episode,
    and how many steps dm_control had active constraints (joint limits):
    there the solvers agree only to their tolerance, which chaotic dynamics
    then amplify.
    """
    dm_env = reference_env(env.domain, env.task_name, seed)
    dm_env.reset()
    start = _dm_state(env.domain, env.task_name, dm_env)
    steps = steps or env.episode_length
    spec = dm_env.action_spec()
    t = np.arange(steps)[:, None]
    phase = np.arange(spec.shape[0])[None, :]
    wave = np.clip(
        amplitude * (0.8 * np.sin(0.05 * t + phase) + 0.3 * np.sin(0.31 * t + 2 * phase)), -1, 1
    )
    actions = wave * (spec.maximum - spec.minimum) / 2 + (spec.maximum + spec.minimum) / 2

    dm_obs, dm_rewards, constraint_steps = [], [], 0
    for a in actions:
        timestep = dm_env.step(a)
        dm_obs.append(timestep.observation)
        dm_rewards.append(timestep.reward)
        constraint_steps += int(dm_env.physics.data.nefc > 0)
    dm_obs = jax.tree.map(lambda *xs: np.stack(xs), *dm_obs)

    template = env.reset(jax.random.key(0))
    act = start["act"] if start["act"].size else None
    state = env.set_state(
        template, start["qpos"], start["qvel"], act, start["time"], **start["variables"]
    )

    @jax.jit
    def rollout(state, actions):
        def body(s, a):
            s = env.step(s, a)
            return s, (s.observation, s.reward)

        return jax.lax.scan(body, state, actions)[1]

    ours_obs, ours_rewards = jax.tree.map(
        np.asarray, rollout(state, jnp.asarray(actions, state.data.qpos.dtype))
    )

    path = CpuPath(env)
    path.set_state(start["qpos"], start["qvel"], start["act"], start["time"], start["variables"])
    cpu = [path.step(a, start["variables"]) for a in actions]
    cpu_obs = jax.tree.map(lambda *xs: np.stack(xs), *[o for o, _ in cpu])

    dm_return = float(np.sum(dm_rewards))
    ours, cpu_return = float(np.sum(ours_rewards)), float(sum(r for _, r in cpu))
    scale = max(abs(dm_return), 1e-12)
    return {
        "steps": steps,
        "amplitude": amplitude,
        "constraint_steps": constraint_steps,
        "dm_control": dm_return,
        "ours": ours,
        "cpu": cpu_return,
        "ours_rel": abs(ours - dm_return) / scale,
        "cpu_rel": abs(cpu_return - dm_return) / scale,
        "ours_obs": max(_worst(ours_obs[k], dm_obs[k]) for k in dm_obs),
        "cpu_obs": max(_worst(cpu_obs[k], dm_obs[k]) for k in dm_obs),
    }


def check(
    domain: str,
    task: str,
    n_states: int = 20,
    seed: int = 0,
    x64: bool = True,
    episode: bool = False,
    amplitude: float = 1.0,
) -> ParityReport:
    """Measures a task's parity with dm_control.

    Args:
      domain, task: the suite task.
      n_states: dm_control states to test one step from.
      seed: seeds dm_control's task and the random actions.
      x64: compare in float64 (`jax_enable_x64`); float32 otherwise.
      episode: also compare a whole episode under fixed actions.
      amplitude: scale of the episode's actions, in (0, 1].
    """
    transitions = reference_transitions(domain, task, n_states, seed)
    with jax.enable_x64(x64):
        env = jaxcontrol.load(domain, task)
        ours, cpu = step_parity(env, transitions)
        episode_report = episode_parity(env, seed, amplitude=amplitude) if episode else None
    return ParityReport(
        domain, task, "float64" if x64 else "float32", n_states, ours, cpu, episode_report
    )
