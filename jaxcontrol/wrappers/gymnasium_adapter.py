"""Gymnasium 1.x adapters: `GymnasiumVectorEnv` (batched) and `GymnasiumEnv` (one).

`GymnasiumVectorEnv(env, num_envs, seed=0)` steps every environment in one
jitted call of `jax.vmap(AutoReset(env).step)` and hands NumPy arrays to the
caller. Its semantics, from dm_env's:

* `terminated` is a LAST step with discount 0 (a true terminal state);
  `truncated` a LAST step with discount above 0: the time limit (dm_control's
  episodes end this way, with discount 1), or a diverged simulation. Learners
  must bootstrap through truncations;
* autoreset is Gymnasium's SAME_STEP mode (declared in
  `metadata["autoreset_mode"]`): the step that ends an episode returns the
  next episode's first observation, and `info["final_obs"]` (an object array,
  set where `info["_final_obs"]` is True) the observation it ended in;
* observations are one float32 vector per environment (`flatten=True`, the
  dict's entries concatenated in dm_control's order) or a `Dict` space of the
  dm_control entries (`flatten=False`); actions are float32 in the control
  range.

`GymnasiumEnv(env)` is one environment for `gymnasium.make`: every task is
registered as `jaxcontrol/DOMAIN-TASK-v0` once jaxcontrol and gymnasium are
both imported (`gymnasium.make_vec` on those ids gives `GymnasiumVectorEnv`).
Each reset draws its JAX key from the env's `np_random`, which
`reset(seed=...)` seeds, as Gymnasium requires.
"""

from __future__ import annotations

import collections
import functools
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
    from gymnasium.vector import AutoresetMode, VectorEnv
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "jaxcontrol's Gymnasium adapters need Gymnasium 1.x: pip install 'jaxcontrol[gymnasium]'"
    ) from error

from jaxcontrol.core import Env, State, StepType
from jaxcontrol.registry import REGISTRY
from jaxcontrol.wrappers.auto_reset import AutoReset
from jaxcontrol.wrappers.base import EnvLike, check_resettable


def _spaces(env: EnvLike, flatten: bool):
    """(observation space, action space) of one environment, float32."""
    spec = env.action_spec()
    action = spaces.Box(
        np.asarray(spec.minimum, np.float32) * np.ones(spec.shape, np.float32),
        np.asarray(spec.maximum, np.float32) * np.ones(spec.shape, np.float32),
        spec.shape,
        np.float32,
    )
    obs_spec = env.observation_spec()
    if not isinstance(obs_spec, collections.abc.Mapping):
        return spaces.Box(-np.inf, np.inf, obs_spec.shape, np.float32), action
    if flatten:
        size = sum(int(np.prod(s.shape)) for s in obs_spec.values())
        return spaces.Box(-np.inf, np.inf, (size,), np.float32), action
    entries = {k: spaces.Box(-np.inf, np.inf, s.shape, np.float32) for k, s in obs_spec.items()}
    return spaces.Dict(entries), action


def _observation(observation: Any, flatten: bool, batch_dims: int) -> Any:
    """A (batched) observation as the space holds it, still in JAX."""
    if not isinstance(observation, collections.abc.Mapping):
        return observation.astype(jnp.float32)
    if flatten:
        parts = [
            v.reshape(v.shape[:batch_dims] + (-1,)).astype(jnp.float32)
            for v in observation.values()
        ]
        return jnp.concatenate(parts, axis=-1)
    return {k: v.astype(jnp.float32) for k, v in observation.items()}


def _ends(state: State) -> tuple[jax.Array, jax.Array]:
    """(terminated, truncated) from dm_env's step type and discount."""
    last = state.step_type == StepType.LAST
    return last & (state.discount == 0), last & (state.discount != 0)


# ----- vector ------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=(0, 2))
def _vector_reset(venv: AutoReset, keys: jax.Array, flatten: bool):
    states = jax.vmap(venv.reset)(keys)
    return states, _observation(states.observation, flatten, 1)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _vector_step(venv: AutoReset, states: State, actions: jax.Array, flatten: bool):
    actions = actions.astype(venv.action_spec().dtype)
    states = jax.vmap(venv.step)(states, actions)
    terminated, truncated = _ends(states)
    out = {
        "observation": _observation(states.observation, flatten, 1),
        "reward": states.reward,
        "terminated": terminated,
        "truncated": truncated,
        "final_observation": _observation(states.info["final_observation"], flatten, 1),
    }
    return states, out


class GymnasiumVectorEnv(VectorEnv):
    """`num_envs` copies of a jaxcontrol environment as a Gymnasium 1.x `VectorEnv`.

    Args:
      env: an `Env` or a stack of wrappers without `AutoReset` (added here).
      num_envs: how many environments step together.
      seed: seeds the first `reset()` when it is given no seed.
      flatten: one float32 vector per observation (True) or a `Dict` space.
    """

    metadata: ClassVar[dict] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, env: EnvLike, num_envs: int, seed: int = 0, flatten: bool = True):
        check_resettable(env, type(self).__name__)
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        self.env = env
        self.num_envs = num_envs
        self.flatten = bool(flatten)
        self._venv = AutoReset(env)
        self._key = jax.random.key(seed)
        self._states: State | None = None
        self.single_observation_space, self.single_action_space = _spaces(env, self.flatten)
        self.observation_space = gymnasium.vector.utils.batch_space(
            self.single_observation_space, num_envs
        )
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, num_envs)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """Resets every environment; `seed` an int (split per env) or one per env."""
        if options:
            raise ValueError(f"unsupported reset options {sorted(options)}; none are accepted")
        if isinstance(seed, (list, tuple)):
            if len(seed) != self.num_envs:
                raise ValueError(f"expected {self.num_envs} seeds, got {len(seed)}")
            keys = jnp.stack([jax.random.key(int(s)) for s in seed])
        else:
            if seed is not None:
                self._key = jax.random.key(int(seed))
            self._key, key = jax.random.split(self._key)
            keys = jax.random.split(key, self.num_envs)
        self._states, observation = _vector_reset(self._venv, keys, self.flatten)
        return _to_numpy(observation), {}

    def step(self, actions):
        """Steps every environment in one jitted call (SAME_STEP autoreset)."""
        if self._states is None:
            raise RuntimeError("call reset() before step()")
        actions = np.asarray(actions, np.float32)
        expected = (self.num_envs,) + self.single_action_space.shape
        if actions.shape != expected:
            raise ValueError(f"expected actions of shape {expected}, got {actions.shape}")
        self._states, out = _vector_step(self._venv, self._states, actions, self.flatten)
        out = jax.device_get(out)
        terminated, truncated = np.asarray(out["terminated"]), np.asarray(out["truncated"])
        info: dict[str, Any] = {}
        ended = np.flatnonzero(terminated | truncated)
        if ended.size:
            final = np.full(self.num_envs, None, dtype=object)
            for i in ended:
                final[i] = jax.tree.map(lambda x, i=i: np.asarray(x[i]), out["final_observation"])
            info["final_obs"], info["_final_obs"] = final, terminated | truncated
        return (
            _to_numpy(out["observation"]),
            np.asarray(out["reward"], np.float64),
            terminated,
            truncated,
            info,
        )

    def close_extras(self, **kwargs) -> None:
        self._states = None


def _to_numpy(tree: Any) -> Any:
    return jax.tree.map(np.asarray, jax.device_get(tree))


# ----- single ------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=(0, 2))
def _single_reset(env: EnvLike, key: jax.Array, flatten: bool):
    state = env.reset(key)
    return state, _observation(state.observation, flatten, 0)


@functools.partial(jax.jit, static_argnums=(0, 3))
def _single_step(env: EnvLike, state: State, action: jax.Array, flatten: bool):
    state = env.step(state, action.astype(env.action_spec().dtype))
    terminated, truncated = _ends(state)
    return state, (_observation(state.observation, flatten, 0), state.reward, terminated, truncated)


class GymnasiumEnv(gymnasium.Env):
    """One jaxcontrol environment as a `gymnasium.Env` (what `gymnasium.make` builds).

    Args:
      env: an `Env` or a stack of wrappers without `AutoReset`.
      flatten: one float32 vector per observation (True) or a `Dict` space.
    """

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, env: EnvLike, flatten: bool = True):
        check_resettable(env, type(self).__name__)
        self.env = env
        self.flatten = bool(flatten)
        self.observation_space, self.action_space = _spaces(env, self.flatten)
        self._state: State | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options:
            raise ValueError(f"unsupported reset options {sorted(options)}; none are accepted")
        key = jax.random.key(int(self.np_random.integers(0, 2**31 - 1)))
        self._state, observation = _single_reset(self.env, key, self.flatten)
        return _to_numpy(observation), {}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        action = np.asarray(action, np.float32)
        if action.shape != self.action_space.shape:
            raise ValueError(
                f"expected an action of shape {self.action_space.shape}, got {action.shape}"
            )
        self._state, (observation, reward, terminated, truncated) = _single_step(
            self.env, self._state, action, self.flatten
        )
        return _to_numpy(observation), float(reward), bool(terminated), bool(truncated), {}


# ----- registry ----------------------------------------------------------------------


def _load(domain: str, task: str, **task_kwargs) -> Env:
    """`jaxcontrol.load(domain, task, **task_kwargs)`, from the registry itself: this
    module runs while `import jaxcontrol` registers the Gymnasium ids, so it takes
    nothing from the package's `__init__` (tests/test_import_graph.py)."""
    return Env(domain, task, REGISTRY.build(domain, task, **task_kwargs))


def make_registered(domain: str, task: str, flatten: bool = True, **task_kwargs) -> GymnasiumEnv:
    """The entry point of `jaxcontrol/DOMAIN-TASK-v0` for `gymnasium.make`."""
    return GymnasiumEnv(_load(domain, task, **task_kwargs), flatten=flatten)


def make_registered_vector(
    domain: str, task: str, num_envs: int = 1, seed: int = 0, flatten: bool = True, **task_kwargs
) -> GymnasiumVectorEnv:
    """The vector entry point of `jaxcontrol/DOMAIN-TASK-v0` for `gymnasium.make_vec`."""
    env = _load(domain, task, **task_kwargs)
    return GymnasiumVectorEnv(env, num_envs, seed=seed, flatten=flatten)


def register_all() -> None:
    """Registers `jaxcontrol/DOMAIN-TASK-v0` for every task (idempotent)."""
    for domain, task in REGISTRY.tasks():  # `jaxcontrol.ALL_TASKS`
        env_id = f"jaxcontrol/{domain}-{task}-v0"
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point="jaxcontrol.wrappers.gymnasium_adapter:make_registered",
            vector_entry_point="jaxcontrol.wrappers.gymnasium_adapter:make_registered_vector",
            kwargs={"domain": domain, "task": task},
            disable_env_checker=False,
        )
