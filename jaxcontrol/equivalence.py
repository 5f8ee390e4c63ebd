"""Parity of a jaxcontrol task with dm_control, measured against three engines.

For a task this module runs, side by side, from the same dm_control states:
  * ours: the MJX `Env` (jitted, vmapped over states);
  * cpu: our own model stepped by C MuJoCo with dm_control's step semantics
    (`mj_step` then `mj_step1`), observed and rewarded by our task code;
  * raw: stock `mjx.step` on the same model and state, which tells what is
    MJX's own difference from C MuJoCo and what is ours;
and compares each with dm_control itself (`dm_control.suite.load`).

`mirror(env, dm_env)` copies a dm_control environment's current state into a
`State` of ours: physics, the solver's warm start, the step count, the task's
variables and its per-episode model fields. Users can call it too.

dm_control is a test dependency: `pip install jaxcontrol[test]`.

    report = check("cartpole", "swingup", n_states=20)
    print(report)
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxcontrol
from jaxcontrol import cpu_physics
from jaxcontrol import physics as physics_lib
from jaxcontrol.core import Env, State, StepType
from jaxcontrol.mjcf import compat
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY


def _suite():
    os.environ.setdefault("MUJOCO_GL", "disable")  # no display needed
    try:
        from dm_control import suite
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("parity checks need dm_control: pip install 'jaxcontrol[test]'") from e
    return suite


@contextlib.contextmanager
def precision(x64: bool) -> Iterator[None]:
    """`jax.enable_x64(x64)`, releasing JAX's compiled code when the mode changes.

    JAX 0.10 can reuse an inner jit's lowering from the other mode after a
    switch, which then fails to lower ("operand type mismatch: expected
    tensor<3x3xf64> ... provided tensor<3x3xf32>": `jnp.tril` of a NumPy
    constant, as in MJX's RK4). Clearing the caches on entry and exit lets one
    process run float32 and float64 parity one after the other.
    """
    switch = bool(jax.config.jax_enable_x64) != x64
    if switch:
        jax.clear_caches()
    try:
        with jax.enable_x64(x64):
            yield
    finally:
        if switch:
            jax.clear_caches()


def reference_env(domain: str, task: str, seed: int, **task_kwargs):
    """dm_control's environment for the registered task, seeded (`Task.reference_environment`).

    `task_kwargs` are dm_control's task arguments (e.g. `time_limit`). For a task
    loaded with our own arguments (LQR's `model_seed`), use `reference_for`.
    """
    prototype = REGISTRY.prototype(domain, task)
    return prototype.reference_environment(_suite().load, domain, task, seed, **task_kwargs)


def reference_for(env: Env, seed: int):
    """dm_control's environment for `env`'s task, seeded: `env`'s model (LQR's
    `model_seed`) and time limit."""
    return env.task.reference_environment(
        _suite().load, env.domain, env.task_name, seed, time_limit=env.task.time_limit
    )


# Steps of an episode where the time limit is infinite (LQR): the suite paper's 1000.
EPISODE_STEPS = 1000


def episode_steps(env: Env) -> int:
    """Steps in a whole episode of `env`: its `episode_length`, or `EPISODE_STEPS`
    where the time limit is infinite (there an episode may still end sooner, at a
    terminal state)."""
    return env.episode_length or EPISODE_STEPS


def action_bounds(spec) -> tuple[np.ndarray, np.ndarray]:
    """The range random and open-loop actions are drawn from: the spec's bounds,
    with an unbounded actuator's (+-mjMAXVAL, as LQR's motors) taken as [-1, 1],
    as dm_control's own suite tests draw them."""
    low = np.where(np.abs(spec.minimum) >= mujoco.mjMAXVAL, -1.0, spec.minimum)
    high = np.where(np.abs(spec.maximum) >= mujoco.mjMAXVAL, 1.0, spec.maximum)
    return low, high


# ----- dm_control's state, and mirroring it ----------------------------------------------


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class DmState:
    """What `mirror` copies from a dm_control environment (NumPy, float64)."""

    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    time: float
    warmstart: np.ndarray
    step: int
    variables: dict[str, np.ndarray]
    model_fields: dict[str, np.ndarray]

    @classmethod
    def capture(cls, env: Env, dm_env) -> DmState:
        """The current state of `dm_env`, an environment of `env`'s task."""
        p = dm_env.physics
        return cls(
            qpos=np.array(p.data.qpos),
            qvel=np.array(p.data.qvel),
            act=np.array(p.data.act),
            time=float(p.data.time),
            warmstart=np.array(p.data.qacc_warmstart),
            step=int(dm_env._step_count),
            variables={k: np.asarray(v) for k, v in env.task.mirror_variables(dm_env).items()},
            model_fields={
                name: np.array(getattr(p.model, name)) for name in env.task.episode_model_fields
            },
        )


def inject(env: Env, dm_state: DmState, state: State | None = None) -> State:
    """A FIRST state of `env` at `dm_state` (jittable; vmap over stacked DmStates).

    `state` supplies the key (and anything `dm_state` lacks); `env.blank_state()`
    (key 0) when None.
    """
    return env.set_state(
        env.blank_state() if state is None else state,
        dm_state.qpos,
        dm_state.qvel,
        dm_state.act if dm_state.act.size else None,
        dm_state.time,
        model_fields=dm_state.model_fields,
        step=dm_state.step,
        warmstart=dm_state.warmstart,
        **dm_state.variables,
    )


def mirror(env: Env, dm_env, state: State | None = None) -> State:
    """Returns a FIRST state of `env` equal to `dm_env`'s current state.

    It copies the physics (`qpos`, `qvel`, `act`, `time` and the solver's warm
    start), the episode's step count (so LAST comes at the same step), the
    task's variables and its per-episode model fields. Derived quantities and
    the observation are recomputed as after dm_control's `reset_context`.

    Args:
      env: our environment of the same task as `dm_env`.
      dm_env: a `dm_control.suite` environment.
      state: a state of `env` whose key and other values are kept; a reset
        from key 0 when None.
    """
    return inject(env, DmState.capture(env, dm_env), state)


def _stack(items: Sequence[Any]):
    return jax.tree.map(lambda *xs: np.stack(xs), *items)


@functools.partial(jax.jit, static_argnums=0)
def batched_inject(env: Env, starts: DmState) -> State:
    """`inject` over a batch of stacked dm_control states, jitted per Env."""
    return jax.vmap(lambda start: inject(env, start))(starts)


def batched_inject_on_c(env: Env, starts: DmState) -> State:
    """`batched_inject(env, starts)` computed by C MuJoCo, in `env`'s state structure.

    The C backend's `set_state` computes the state with C's forward pass. For an MJX
    `env`, the constraint and contact rows that C's states leave out are its blank
    state's, and the kinematics are MJX's own: MJX's step starts from the kinematics
    it is given (`physics.step`) and recomputes the rest, so it steps these states
    exactly as it steps `batched_inject`'s (tests/test_mirror.py). Only MJX's
    kinematics is compiled, not its forward pass (stacker-stack_2's injection
    on MJX: 29 s on one core). The starts' observations are C's.
    """
    return _from_c(env, batched_inject(_on_c(env), starts))


def batched_reset_on_c(env: Env, keys: jax.Array) -> State:
    """`batched_reset(env, keys)` computed by C MuJoCo, in `env`'s state structure.

    The task's own reset code runs on the C backend (C counts the contacts of its
    rejection and settling loops and computes the closing forward pass); for an
    MJX `env`, the states get MJX's kinematics and constraint rows as in
    `batched_inject_on_c`, whose compiled program they share. No MJX reset is
    traced or compiled (the tests' MJX rollouts: quadruped-walk's 115 -> 70 s,
    finger-spin's 47 -> 25 s on one core; BENCHMARKS.md, "CI time").
    """
    return _from_c(env, batched_reset(_on_c(env), keys))


def _on_c(env: Env) -> Env:
    """`env`'s task behind the C backend (`env` itself if it is)."""
    if env.backend == "mujoco":
        return env
    return Env(env.domain, env.task_name, env.task, backend="mujoco")


def _from_c(env: Env, on_c: State) -> State:
    """States computed by `_on_c(env)` in `env`'s structure."""
    return on_c if env.backend == "mujoco" else _with_mjx_rows_and_kinematics(env, on_c)


@functools.partial(jax.jit, static_argnums=0)
def _with_mjx_rows_and_kinematics(env: Env, states: State) -> State:
    blank = env.blank_state().data

    def mjx_data(data, fields):
        data = cpu_physics.with_constraint_rows(data, blank)
        return mjx.kinematics(env._physics(data, fields).model, data)

    return states.replace(data=jax.vmap(mjx_data)(states.data, states.model_fields))


@functools.partial(jax.jit, static_argnums=0)
def batched_step(env: Env, states: State, actions: jax.Array) -> State:
    """`jax.vmap(env.step)`, jitted per Env (shared by the parity tools and tests)."""
    return jax.vmap(env.step)(states, actions)


@functools.partial(jax.jit, static_argnums=0)
def batched_reset(env: Env, keys: jax.Array) -> State:
    """`jax.vmap(env.reset)`, jitted per Env."""
    return jax.vmap(env.reset)(keys)


# ----- dm_control's transitions ------------------------------------------------------------


@dataclasses.dataclass
class Transition:
    """A dm_control state, the action taken from it, and what followed."""

    start: DmState
    start_observation: collections.OrderedDict
    action: np.ndarray
    observation: collections.OrderedDict
    reward: float
    next_qpos: np.ndarray
    next_qvel: np.ndarray


def reference_transitions(
    env: Env, n: int, seed: int = 0, steps_between: int = 7, overshoot: float = 1.2
) -> list[Transition]:
    """`n` transitions from dm_control's resets and random rollouts of `env`'s task.

    Every `steps_between`-th state starts a new episode, so resets and
    mid-episode states are both covered. Actions are uniform over
    `overshoot` x the action range, so some exceed the bounds (clipping).
    """
    dm_env = reference_for(env, seed)
    low, high = action_bounds(dm_env.action_spec())
    rng = np.random.RandomState(seed + 1)
    centre, half = (high + low) / 2, (high - low) / 2
    transitions = []
    timestep = None
    while len(transitions) < n:
        if timestep is None or timestep.last() or len(transitions) % steps_between == 0:
            timestep = dm_env.reset()
        start, start_observation = DmState.capture(env, dm_env), timestep.observation
        action = centre + overshoot * half * rng.uniform(-1, 1, centre.shape)
        timestep = dm_env.step(action)
        p = dm_env.physics
        transitions.append(
            Transition(
                start=start,
                start_observation=start_observation,
                action=action,
                observation=timestep.observation,
                reward=timestep.reward,
                next_qpos=np.array(p.data.qpos),
                next_qvel=np.array(p.data.qvel),
            )
        )
    return transitions


def reference_resets(env: Env, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """qpos, qvel, actuator states (where the model has them), task variables and
    model fields of `n` dm_control resets, stacked."""
    dm_env = reference_for(env, seed)
    resets = []
    for _ in range(n):
        dm_env.reset()
        s = DmState.capture(env, dm_env)
        act = {"act": s.act} if s.act.size else {}
        resets.append({"qpos": s.qpos, "qvel": s.qvel, **act, **s.variables, **s.model_fields})
    return _stack(resets)


def reset_samples(states: State) -> dict[str, np.ndarray]:
    """The same quantities as `reference_resets`, from a batch of our resets."""
    act = states.data.act
    return {
        "qpos": np.asarray(states.data.qpos),
        "qvel": np.asarray(states.data.qvel),
        **({"act": np.asarray(act)} if act.shape[-1] else {}),
        **{k: np.asarray(v) for k, v in states.variables.items()},
        **{k: np.asarray(v) for k, v in states.model_fields.items()},
    }


RESET_CHUNK_BYTES = 1 << 30


def state_bytes(env: Env) -> int:
    """The size of one of `env`'s states, from its shapes (nothing is computed)."""
    state = jax.eval_shape(env.reset, jax.random.key(0))
    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state))


def chunked_reset_samples(
    env: Env, keys: jax.Array, max_bytes: int = RESET_CHUNK_BYTES
) -> dict[str, np.ndarray]:
    """`reset_samples(batched_reset(env, keys))`, reset a chunk at a time so that one
    chunk's states take at most `max_bytes`.

    A reset state holds the whole MJX `Data`, constraint rows included: dog's is
    12 MB (32,530 rows by 79 dofs), so 1024 of them at once would need 12 GB. The
    keys are padded to whole chunks (one compile) and the padding is dropped.
    """
    n = len(keys)
    chunk = int(max(1, min(n, max_bytes // state_bytes(env))))
    padded = jnp.concatenate([keys, keys[: -n % chunk]])
    parts = [
        reset_samples(batched_reset(env, padded[start : start + chunk]))
        for start in range(0, len(padded), chunk)
    ]
    return {name: np.concatenate([part[name] for part in parts])[:n] for name in parts[0]}


# ----- the three engines ---------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=0)
def _inject_and_step(env: Env, start: DmState, action: jax.Array) -> tuple[State, State]:
    first = inject(env, start)
    return first, env.step(first, action)


def mjx_step_from(env: Env, transitions: Sequence[Transition]) -> tuple[State, State]:
    """Ours: each start state injected (as `mirror` does), then stepped with its action.

    One state at a time, through one compiled program per Env: tracing MJX
    unbatched costs about 40% less than under `vmap` (humanoid's and quadruped's
    steps; BENCHMARKS.md, "Test time"), and a few dozen single steps run in
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
    argument hangs too, and not when it is a JAX array; NOTES.md, session 54)."""
    return jax.block_until_ready(jax.device_put(tree))


def raw_mjx_step_from(env: Env, transitions: Sequence[Transition], at_start: bool = False):
    """Raw MJX: stock `mjx.step` (x n_sub_steps) from each start state's data.

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
            start_data = _raw_data(blank, start, dtype)
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

        return jax.jit(jax.vmap(run))

    for indices in groups.values():
        first = transitions[indices[0]].start
        for name in static:
            getattr(mj_model, name)[:] = first.model_fields[name]
        starts = _stack([transitions[i].start for i in indices])
        actions = _stack([transitions[i].action for i in indices])
        q, v, *obs = stepper(compat.put_model(mj_model))(starts, actions)
        qpos[indices], qvel[indices] = np.asarray(q), np.asarray(v)
        for gathered, group in zip((observations, start_observations), obs):
            for key, value in group.items():
                gathered.setdefault(key, np.zeros((len(transitions), *value.shape[1:])))
                gathered[key][indices] = np.asarray(value)
    return qpos, qvel, observations, start_observations


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


# ----- the report ----------------------------------------------------------------------


@dataclasses.dataclass
class ParityReport:
    """Worst absolute differences from dm_control after one step.

    `ours` is the MJX env, `cpu` our model under C MuJoCo, `raw` stock
    `mjx.step` (qpos and qvel only): raw MJX's own error against C MuJoCo,
    which bounds what MJX can achieve on these states.
    """

    domain: str
    task: str
    dtype: str
    n_states: int
    ours: dict[str, float]
    cpu: dict[str, float]
    raw: dict[str, float]
    episode: dict[str, Any] | None = None

    def worst(self) -> float:
        """The worst one-step difference, MJX or CPU path."""
        return max(max(self.ours.values()), max(self.cpu.values()))

    def tolerance(self) -> float:
        """The one-step target: 1e-9 in float64 (or 10x raw MJX's own error, if
        larger); in float32, 1e-4 of each quantity's scale (`relative`).
        An observation that raw MJX misses by more has its own (`misses`)."""
        return one_step_tolerance(self.dtype, self.raw)

    def misses(self) -> dict[str, tuple[float, float]]:
        """{"ours/KEY" or "cpu/KEY": (difference, tolerance)} over the tolerance."""
        return {
            f"{who}/{key}": miss
            for who, differences in (("ours", self.ours), ("cpu", self.cpu))
            for key, miss in one_step_misses(self.dtype, differences, self.raw).items()
        }

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        lines = [
            f"{self.domain}-{self.task}: {self.n_states} dm_control states, {self.dtype}",
            (
                f"  {'quantity':<22}{'MJX vs dm_control':>20}{'CPU vs dm_control':>20}"
                f"{'raw mjx vs C':>16}"
            ),
        ]
        for key in self.ours:
            cpu = f"{self.cpu[key]:>20.3e}" if key in self.cpu else f"{'':>20}"
            raw = f"{self.raw[key]:>16.3e}" if key in self.raw else f"{'':>16}"
            lines.append(f"  {key:<22}{self.ours[key]:>20.3e}{cpu}{raw}")
        if self.episode:
            e = self.episode
            lines.append(
                f"  episode ({e['steps']} steps, amplitude {e['amplitude']}, constraints active "
                f"on {e['constraint_steps']} steps): return dm_control {e['dm_control']:.9f}, "
                f"MJX {e['ours']:.9f} (rel {e['ours_rel']:.2e}), "
                f"CPU {e['cpu']:.9f} (rel {e['cpu_rel']:.2e}); worst observation difference "
                f"MJX {e['ours_obs']:.2e}, CPU {e['cpu_obs']:.2e}; raw mjx qpos drift from C "
                f"{e['raw_drift']:.2e} (after 100 steps {e['raw_drift_100']:.2e})"
            )
        return "\n".join(lines)


def _to_numpy(state: State) -> State:
    """The state's arrays as NumPy arrays (its PRNG key dropped)."""
    return jax.tree.map(np.asarray, state.replace(key=None))


ONE_STEP_TARGET = {"float64": 1e-9, "float32": 1e-4}  # float32: relative to scale


RAW_STATE_KEYS = ("qpos", "qvel")


def one_step_tolerance(dtype: str, raw: dict[str, float], key: str | None = None) -> float:
    """The one-step target: `ONE_STEP_TARGET[dtype]` (float32's relative to each
    quantity's scale), or 10x raw MJX's own error against C MuJoCo on the same
    states (its qpos and qvel), whichever is larger. For a quantity `key` that
    raw MJX measured too (an observation), 10x raw MJX's error in that quantity
    if larger still.

    Raw MJX's float32 error is its own along long chains: swimmer15's 15
    substeps of a 16-body chain put stock `mjx.step`'s velocities 3.6e-4 of
    scale from C MuJoCo's, and ours exactly as far. Its contact forces differ
    from C's where its contacts do (height fields), and so do force sensors.
    """
    state = max((raw[k] for k in RAW_STATE_KEYS if k in raw), default=0.0)
    tolerance = max(ONE_STEP_TARGET[dtype], 10 * state)
    if key is not None and key not in RAW_STATE_KEYS and key in raw:
        tolerance = max(tolerance, 10 * raw[key])
    return tolerance


def one_step_misses(
    dtype: str, differences: dict[str, float], raw: dict[str, float]
) -> dict[str, tuple[float, float]]:
    """{quantity: (difference, tolerance)} for each difference over its tolerance."""
    misses = {}
    for key, worst in differences.items():
        tolerance = one_step_tolerance(dtype, raw, key)
        if not worst <= tolerance:  # NaN misses too
            misses[key] = (worst, tolerance)
    return misses


def _worst(a, b, relative: bool = False) -> float:
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
        ours[f"obs/{key}"] = _worst(nxt.observation[key], dm_obs[key], relative)
    ours["reward"] = _worst(nxt.reward, [t.reward for t in transitions], relative)
    ours["qpos"] = _worst(nxt.data.qpos, _stack([t.next_qpos for t in transitions]), relative)
    ours["qvel"] = _worst(nxt.data.qvel, _stack([t.next_qvel for t in transitions]), relative)
    resets = [i for i, t in enumerate(transitions) if t.start.step == 0]
    for key in transitions[0].observation:
        dm_first = _stack([transitions[i].start_observation[key] for i in resets])
        ours[f"reset_obs/{key}"] = _worst(first.observation[key][resets], dm_first, relative)
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
                worst[f"obs/{key}"], _worst(o[key], t.observation[key], relative)
            )
        worst["reward"] = max(worst["reward"], _worst(r, t.reward, relative))
        worst["qpos"] = max(worst["qpos"], _worst(path.data.qpos, t.next_qpos, relative))
        worst["qvel"] = max(worst["qvel"], _worst(path.data.qvel, t.next_qvel, relative))
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
        "qpos": _worst(raw_qpos, _stack([t.next_qpos for t in transitions]), relative),
        "qvel": _worst(raw_qvel, _stack([t.next_qvel for t in transitions]), relative),
    }
    for key in transitions[0].observation:
        report[f"obs/{key}"] = _worst(raw_obs[key], dm_obs[key], relative)
    resets = [i for i, t in enumerate(transitions) if t.start.step == 0]
    for key in start_obs:
        dm_first = _stack([transitions[i].start_observation[key] for i in resets])
        report[f"reset_obs/{key}"] = _worst(start_obs[key][resets], dm_first, relative)
    return report


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
        "ours_obs": max(_worst(ours_obs[k], dm_obs[k]) for k in dm_obs),
        "cpu_obs": max(_worst(cpu_obs[k], dm_obs[k]) for k in dm_obs),
        "raw_drift": float(drift.max()),
        "raw_drift_100": float(drift[: min(100, steps)].max()),
    }


def _raw_data(blank: mjx.Data, start: DmState, dtype) -> mjx.Data:
    """MJX data at `start`'s state, as `mj_step` would begin from it."""
    data = blank.replace(
        qpos=jnp.asarray(start.qpos, dtype),
        qvel=jnp.asarray(start.qvel, dtype),
        time=jnp.asarray(start.time, dtype),
        qacc_warmstart=jnp.asarray(start.warmstart, dtype),
    )
    return data.replace(act=jnp.asarray(start.act, dtype)) if start.act.size else data


def _raw_rollout(env: Env, start: DmState, actions: np.ndarray) -> np.ndarray:
    """qpos after each control step of stock `mjx.step`, from `start`."""
    mj_model = compat.to_mjx_compatible(env.mj_model)
    for name, value in start.model_fields.items():
        getattr(mj_model, name)[:] = value
    model = compat.put_model(mj_model)
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    data = _raw_data(compat.put_data(mj_model, mujoco.MjData(mj_model)), start, dtype)
    data = jax.jit(mjx.forward)(model, data)  # derived fields in mjx.step's own dtypes

    @jax.jit
    def rollout(data, actions):
        def body(d, a):
            d = d.replace(ctrl=a)
            d, _ = jax.lax.scan(lambda d, _: (mjx.step(model, d), None), d, None, env.n_sub_steps)
            return d, d.qpos

        return jax.lax.scan(body, data, actions)[1]

    return np.asarray(rollout(data, jnp.asarray(actions, dtype)))


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
    with precision(x64):
        env = jaxcontrol.load(domain, task)
        transitions = reference_transitions(env, n_states, seed)
        ours, cpu, raw = step_parity(env, transitions, relative=not x64)
        episode_report = episode_parity(env, seed, amplitude=amplitude) if episode else None
    return ParityReport(
        domain, task, "float64" if x64 else "float32", n_states, ours, cpu, raw, episode_report
    )
