"""The engines compared with dm_control, from the same dm_control states.

* ours: the `Env` (`mjx_step_from`: each start injected as `mirror` does, then stepped);
* cpu: our model stepped by C MuJoCo with dm_control's step semantics
  (`mj_step` then `mj_step1`), observed and rewarded by our task code (`CpuPath`);
* raw: stock `mjx.step` on the same model and state (`raw_mjx_step_from`), which
  tells what is MJX's own difference from C MuJoCo and what is ours.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol import physics as physics_lib
from jaxcontrol.core import Env, State
from jaxcontrol.mjcf import compat
from jaxcontrol.physics import Physics
from jaxcontrol.reference.batched import stack as _stack
from jaxcontrol.reference.samples import Transition
from jaxcontrol.reference.state import DmState, inject


@functools.partial(jax.jit, static_argnums=0)
def _inject_and_step(env: Env, start: DmState, action: jax.Array) -> tuple[State, State]:
    first = inject(env, start)
    return first, env.step(first, action)


def mjx_step_from(env: Env, transitions: Sequence[Transition]) -> tuple[State, State]:
    """Ours: each start state injected (as `mirror` does), then stepped with its action.

    One state at a time, through one compiled program per Env: tracing MJX
    unbatched costs about 40% less than under `vmap` (humanoid's and quadruped's
    steps; docs/benchmarks.md), and a few dozen single steps run in
    milliseconds. The default tier's rollouts run `vmap(env.step)`.

    Returns the injected (FIRST) states and the stepped ones, stacked.
    """
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    pairs = [
        _inject_and_step(env, _on_device(t.start), jnp.asarray(t.action, dtype))
        for t in transitions
    ]
    return tuple(jax.tree.map(lambda *xs: jnp.stack(xs), *states) for states in zip(*pairs))


def _on_device(tree):
    """`tree`'s NumPy arrays as JAX arrays, transferred before a program runs.

    On a CPU with one core, a program with host calls (the C backend) given large
    NumPy arguments can hang: the host call waits on its operands, and JAX's CPU
    runtime never completes their transfer (quadruped-escape's one-step parity hung
    in 4 of 6 runs, and 0 of 5 with this; a bare `pure_callback` given a 4 MB NumPy
    argument hangs too, and not when it is a JAX array; docs/design/c-backend.md)."""
    return jax.block_until_ready(jax.device_put(tree))


RAW_LAYOUTS = ("batch", "alone", "alone_vmapped")


def raw_mjx_step_from(
    env: Env, transitions: Sequence[Transition], at_start: bool = False, layout: str = "batch"
):
    """Raw MJX: stock `mjx.step` (x n_sub_steps) from each start state's data.

    `layout` says how the states run: "batch", all of them under one `vmap` (per
    group, below); "alone", each by itself, unbatched (as `mjx_step_from` runs
    ours); "alone_vmapped", each by itself as a batch of one. In float32 the
    three round differently, and on a state at a contact's switch the rounding
    can pick the branch (docs/parity.md, "One step where contacts are hardest").

    The model is ours (identical to dm_control's) with the start's model fields
    in place. Fields that MJX keeps static (e.g. `wrap_prm`) are compiled into
    the model, so states are grouped by their values of those fields.

    Returns qpos, qvel, the observations and the start states' observations.
    The observations are our task code reading stock MJX's data after
    `mjx.kinematics` and the task's `sync` (`mj_step1`, as dm_control ends a
    step). Where MJX's own contacts differ from C's (height fields: four
    contacts a pair), contact forces and the sensors that read them differ too.
    The start states' observations are measured only with `at_start` (else
    empty): stock `mjx.forward` with actuation off (dm_control's `after_reset`),
    and rangefinders that see height fields, as the task's `sync` casts them.
    """
    if layout not in RAW_LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; valid layouts: {', '.join(RAW_LAYOUTS)}")
    mj_model = compat.to_mjx_compatible(env.mj_model)
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    static = [n for n in env.task.episode_model_fields if n in physics_lib.STATIC_MODEL_FIELDS]
    groups: dict[bytes, list[int]] = collections.defaultdict(list)
    for i, t in enumerate(transitions):
        groups[b"".join(t.start.model_fields[n].tobytes() for n in static)].append(i)
    qpos = np.zeros((len(transitions), env.mj_model.nq))
    qvel = np.zeros((len(transitions), env.mj_model.nv))
    observations: dict[str, np.ndarray] = {}
    start_observations: dict[str, np.ndarray] = {}

    blank = compat.put_data(mj_model, mujoco.MjData(mj_model))

    def stepper(model):
        # The model is a constant of the compiled program, as in our step: passed
        # as a traced argument, XLA's compile of a long chain (swimmer15) ran past
        # 16 GB of memory.
        def run(start, action):
            leaves = {
                k: jnp.asarray(v, dtype)
                for k, v in start.model_fields.items()
                if k in physics_lib.APPLIED_MODEL_FIELDS
            }
            start_data = raw_data(blank, start, dtype)
            data = start_data.replace(ctrl=jnp.asarray(action, dtype))
            stepped = model.replace(**leaves)
            # A scan, so that the step compiles once, not n_sub_steps times.
            data, _ = jax.lax.scan(
                lambda d, _: (mjx.step(stepped, d), None), data, None, env.n_sub_steps
            )
            physics = Physics.create(stepped, mjx.kinematics(stepped, data), env.names)
            physics = dataclasses.replace(physics, data=env.task.sync(physics))
            variables = {k: jnp.asarray(v) for k, v in start.variables.items()}
            observed = (data.qpos, data.qvel, env.task.get_observation(physics, variables))
            if not at_start:
                return observed
            flags = stepped.opt.disableflags | mujoco.mjtDisableBit.mjDSBL_ACTUATION
            quiet = stepped.tree_replace({"opt.disableflags": flags})
            first = Physics.create(stepped, mjx.forward(quiet, start_data), env.names)
            first = dataclasses.replace(
                first, data=physics_lib.rangefinders_with_height_fields(first)
            )
            return observed + (env.task.get_observation(first, variables),)

        batched = jax.jit(jax.vmap(run))
        if layout == "batch":
            return batched
        one = jax.jit(run) if layout == "alone" else batched
        cut = _item if layout == "alone" else _slice

        def each(starts, actions):
            outputs = [one(cut(starts, i), cut(actions, i)) for i in range(len(actions))]
            join = jnp.stack if layout == "alone" else jnp.concatenate
            return jax.tree.map(lambda *xs: join(xs), *outputs)

        return each

    size = raw_batch_size(blank, dtype, max(map(len, groups.values())))
    for group in groups.values():
        first = transitions[group[0]].start
        for name in static:
            getattr(mj_model, name)[:] = first.model_fields[name]
        step = stepper(compat.put_model(mj_model))
        for chunk in range(0, len(group), size):
            indices = group[chunk : chunk + size]
            # The last chunk padded to the others' size: one compiled program.
            padded = indices + indices[:1] * (min(size, len(group)) - len(indices))
            starts = _stack([transitions[i].start for i in padded])
            actions = _stack([transitions[i].action for i in padded])
            kept = len(indices)
            q, v, *obs = jax.tree.map(lambda x, k=kept: x[:k], step(starts, actions))
            _gather(
                indices, q, v, obs, qpos, qvel, observations, start_observations, len(transitions)
            )
    return qpos, qvel, observations, start_observations


# The most MJX data one vmapped call of `raw_mjx_step_from` steps at once; past it the
# states run in chunks. 200 of dog's float64 states (12 MB each) as one batch took
# more than 10 GB and were killed for memory on the 23 GB box.
RAW_BATCH_BYTES = 2**30


def raw_batch_size(blank: mjx.Data, dtype, n: int) -> int:
    """How many states `raw_mjx_step_from` vmaps at once: all `n` where their data
    fits in `RAW_BATCH_BYTES`, else as many as do (at least one)."""
    itemsize = jnp.dtype(dtype).itemsize
    per_state = sum(
        x.size * (itemsize if jnp.issubdtype(x.dtype, jnp.floating) else x.dtype.itemsize)
        for x in jax.tree.leaves(blank)
    )
    return max(1, min(n, RAW_BATCH_BYTES // per_state))


def _gather(indices, q, v, obs, qpos, qvel, observations, start_observations, n):
    """One chunk's results into the arrays of all `n` states."""
    qpos[indices], qvel[indices] = np.asarray(q), np.asarray(v)
    for gathered, group in zip((observations, start_observations), obs):
        for key, value in group.items():
            gathered.setdefault(key, np.zeros((n, *value.shape[1:])))
            gathered[key][indices] = np.asarray(value)


class CpuPath:
    """Our model stepped by C MuJoCo with dm_control's semantics."""

    def __init__(self, env: Env):
        self.env = env
        self.model = compat.to_mjx_compatible(env.mj_model)
        self.data = mujoco.MjData(self.model)
        self._compiled = {
            name: np.array(getattr(self.model, name)) for name in env.task.episode_model_fields
        }

        @jax.jit
        def observe(data, variables, model_fields):
            physics = Physics.create(env.mjx_model, data, env.names, model_fields)
            return (
                env.task.get_observation(physics, variables),
                env.task.get_reward(physics, variables),
            )

        self._observe = observe
        self.variables: dict[str, np.ndarray] = {}
        self.model_fields: dict[str, np.ndarray] = {}

    def set_state(self, start: DmState):
        """dm_control's `reset_context`: write the state and model, then a forward pass."""
        mujoco.mj_resetData(self.model, self.data)
        self.model_fields = {**self._compiled, **start.model_fields}
        for name, value in self.model_fields.items():
            getattr(self.model, name)[:] = value
        self.variables = dict(start.variables)
        self.data.qpos[:], self.data.qvel[:] = start.qpos, start.qvel
        if start.act.size:
            self.data.act[:] = start.act
        self.data.time = start.time
        self.data.qacc_warmstart[:] = start.warmstart
        flags = self.model.opt.disableflags
        self.model.opt.disableflags = flags | int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        mujoco.mj_forward(self.model, self.data)
        self.model.opt.disableflags = flags

    def step(self, action):
        """One control step; returns (observation, reward)."""
        self.data.ctrl[:] = action
        mujoco.mj_step(self.model, self.data, self.env.n_sub_steps)
        mujoco.mj_step1(self.model, self.data)
        return self.observe()

    def observe(self):
        data = mjx.put_data(self.model, self.data)
        obs, reward = self._observe(
            data,
            {k: jnp.asarray(v) for k, v in self.variables.items()},
            {k: jnp.asarray(v) for k, v in self.model_fields.items()},
        )
        return jax.tree.map(np.asarray, obs), float(reward)


def _item(tree, i: int):
    """Entry `i` of every leaf."""
    return jax.tree.map(lambda x: x[i], tree)


def _slice(tree, i: int):
    """Entry `i` of every leaf, as a batch of one."""
    return jax.tree.map(lambda x: x[i : i + 1], tree)


def raw_data(blank: mjx.Data, start: DmState, dtype) -> mjx.Data:
    """MJX data at `start`'s state, as `mj_step` would begin from it."""
    data = blank.replace(
        qpos=jnp.asarray(start.qpos, dtype),
        qvel=jnp.asarray(start.qvel, dtype),
        time=jnp.asarray(start.time, dtype),
        qacc_warmstart=jnp.asarray(start.warmstart, dtype),
    )
    return data.replace(act=jnp.asarray(start.act, dtype)) if start.act.size else data
