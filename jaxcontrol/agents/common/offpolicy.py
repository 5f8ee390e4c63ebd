"""The off-policy skeleton that SAC and D4PG share.

Everything but the losses lives here: the on-device replay and its n-step
batches (uniform or prioritized), the actor loop (step all environments with
the exploration policy, store the transitions, fold their observations into
the running statistics), the target networks' updates, the chunked run loop
and the deterministic policy used for evaluation. An algorithm supplies an
``Algorithm``: how to build its parameters, how to explore, how to act, and
one gradient update on a batch.

A replay row holds one transition per environment:
``obs`` [E, D], ``action`` [E, A], ``reward`` [E], ``discount`` [E],
``done`` [E] (episode ended on this transition) and ``next_obs`` [E, D], the
observation the transition really ended in (the AutoReset wrapper's
``final_observation``), so time-limit ends bootstrap correctly.

Pixels. When the observation is one uint8 image (``Pixels``, ``FrameStack``;
see ``observations.is_image``) the replay keeps ``obs`` and ``next_obs`` as
uint8 [E, H, W, C], and the algorithm gets a ``PixelEncoder`` (the suite
paper's): ``params["encoder"]``, shared by actor and critic, with a target
copy. The critic's loss trains it; the actor reads its features through
``stop_gradient``, so the actor's loss never does.
"""

from __future__ import annotations

import abc
import functools
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from jaxcontrol.agents.common import replay as replay_lib
from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.augment import random_shift
from jaxcontrol.agents.common.config import OffPolicyConfig
from jaxcontrol.agents.common.learner import Learner, chunked, chunks_for
from jaxcontrol.agents.common.networks import PixelEncoder
from jaxcontrol.agents.common.returns import n_step_return
from jaxcontrol.agents.common.running_stats import Normalizer, RunningStats
from jaxcontrol.agents.common.venv import TrainingEnv, training_env

Batch = dict[str, jax.Array]


class Algorithm(abc.ABC):
    """What an off-policy algorithm supplies to the skeleton (SAC and D4PG subclass it).

    Observations reach ``update`` as the replay holds them (flat and normalised,
    or uint8 pixels); ``explore`` and ``act`` get their features (``encode``).

    Attributes:
      target_names: the ``params`` entries that have target copies.
      target_period: learner steps between target updates.
      target_tau: how far each target update moves the targets towards the
        online parameters (1: a hard copy).
      encoder_net: the pixel encoder under actor and critic (its parameters
        are ``params["encoder"]``), or None for flat observations.
    """

    target_names: tuple[str, ...] = ()
    target_period: int = 1
    target_tau: float = 1.0
    encoder_net: nn.Module | None = None

    def with_encoder(self, *names: str) -> tuple[str, ...]:
        """``names``, and ``"encoder"`` first when there is one."""
        return names if self.encoder_net is None else ("encoder", *names)

    @property
    def policy_names(self) -> tuple[str, ...]:
        """The ``params`` entries the policy reads: the actor and any encoder."""
        return self.with_encoder("actor")

    def encode(self, params: dict, obs: jax.Array) -> jax.Array:
        """Features [B, F] of observations: ``obs`` itself, or ``params["encoder"]``'s encoding."""
        if self.encoder_net is None:
            return obs
        return self.encoder_net.apply({"params": params["encoder"]}, obs)

    @abc.abstractmethod
    def init(self, key: jax.Array, obs_shape: tuple[int, ...], action_size: int) -> tuple[Any, Any]:
        """(params, opt_state) for observations of ``obs_shape``: (D,), or (H, W, C) pixels.

        ``explore`` and ``act`` read ``params["actor"]`` and the features of
        ``encode`` (with ``params["encoder"]``, if any).
        """

    @abc.abstractmethod
    def update(
        self, params: Any, target_params: Any, opt_state: Any, batch: Batch, key: jax.Array
    ) -> tuple[Any, Any, jax.Array, dict[str, jax.Array]]:
        """One gradient step: (params, opt_state, priorities [B], scalar metrics).

        ``batch`` holds ``obs`` [B, D] (or uint8 [B, H, W, C]), ``action``
        [B, A], ``reward`` [B] (the n-step return), ``bootstrap_discount`` [B],
        ``next_obs`` like ``obs``, and
        ``weight`` [B] (importance weights; ones under uniform sampling). The
        priorities are the transitions' new replay priorities (used when prioritized).
        """

    @abc.abstractmethod
    def explore(self, actor: Any, features: jax.Array, key: jax.Array) -> jax.Array:
        """Exploration actions [E, A] in [-1, 1] for features [E, F] (``encode``'s)."""

    @abc.abstractmethod
    def act(self, actor: Any, features: jax.Array) -> jax.Array:
        """Deterministic actions [N, A] for features [N, F] (``encode``'s)."""


@flax.struct.dataclass
class OffPolicyState:
    """Everything an off-policy run carries between iterations.

    Attributes:
      params: the algorithm's online parameters (a dict with ``"actor"``).
      target_params: target copies of ``params[name]`` for each target name.
      opt_state: the algorithm's optimiser states.
      obs_stats: running observation statistics.
      env_state: batched env state [E].
      episode_return: [E] running returns.
      replay: the on-device replay (priorities used when prioritized).
      key: PRNG key for the next iteration.
      learner_steps: scalar int32, gradient steps done (drives target updates).
      iterations: scalar int32, iterations done.
    """

    params: Any
    target_params: Any
    opt_state: Any
    obs_stats: RunningStats
    env_state: Any
    episode_return: jax.Array
    replay: replay_lib.Replay
    key: jax.Array
    learner_steps: jax.Array
    iterations: jax.Array


class Schedule(NamedTuple):
    """How an off-policy run spends its budget.

    Attributes:
      prefill_iterations: iterations of random actions before learning; enough
        for ``learning_starts`` env steps and for one batch of n-step windows.
      iterations_per_chunk: act-and-learn iterations per jitted chunk.
      num_chunks: chunks in the run.
      capacity: replay rows (each row holds one transition per env).
    """

    prefill_iterations: int
    iterations_per_chunk: int
    num_chunks: int
    capacity: int


class Skeleton(NamedTuple):
    """The static pieces the skeleton's functions share."""

    config: OffPolicyConfig
    env: TrainingEnv
    algorithm: Algorithm
    normalizer: Normalizer
    plan: Schedule


def schedule(config: OffPolicyConfig) -> Schedule:
    """The schedule of an off-policy config."""
    num_envs = config.num_envs
    prefill = max(
        -(-config.learning_starts // num_envs), -(-config.batch_size // num_envs) + config.n_step
    )
    per_chunk, num_chunks = chunks_for(
        max(config.total_env_steps - prefill * num_envs, 1), num_envs, config.iterations_per_chunk
    )
    capacity = max(config.replay_capacity // num_envs, prefill + config.n_step)
    return Schedule(prefill, per_chunk, num_chunks, capacity)


def empty_row(env: TrainingEnv) -> dict:
    """A zero row, the template of the replay's layout (uint8 observations for pixels)."""
    e, a = env.num_envs, env.action_size
    obs = jnp.zeros((e, *env.obs_shape), env.obs_dtype)
    return {
        "obs": obs,
        "action": jnp.zeros((e, a), jnp.float32),
        "reward": jnp.zeros((e,), jnp.float32),
        "discount": jnp.zeros((e,), jnp.float32),
        "done": jnp.zeros((e,), jnp.bool_),
        "next_obs": obs,
    }


def act_and_store(
    env: TrainingEnv,
    env_state: Any,
    episode_return: jax.Array,
    replay: replay_lib.Replay,
    action_fn: Callable[[jax.Array], jax.Array],
):
    """Steps every env once with ``action_fn(obs)`` and writes the transitions.

    Args:
      env: the training env.
      env_state: batched env state [E].
      episode_return: [E] running returns.
      replay: the buffer.
      action_fn: observations [E, *obs_shape] (``env.observe``'s) -> actions [E, A] in [-1, 1].

    Returns:
      (env_state, episode_return, replay, obs [E, *obs_shape] acted on,
      finished_return_sum, finished_count).
    """
    obs = env.observe(env_state.observation)
    env_state, episode_return, row, finished, count = env.step(
        env_state, episode_return, action_fn(obs)
    )
    replay = replay_lib.add(replay, row)
    replay = replay.replace(data=sharding.constrain(replay.data, env.mesh, axis=1))
    return env_state, episode_return, replay, obs, finished, count


def start(env: TrainingEnv, plan: Schedule, key: jax.Array):
    """Resets the envs and fills a fresh replay with uniformly random actions.

    Returns:
      (env_state, episode_return [E], replay).
    """
    key_env, key_prefill = jax.random.split(key)
    env_state = env.reset(key_env)
    replay = replay_lib.init(empty_row(env), plan.capacity)
    episode_return = env.zero_returns()
    shape = (env.num_envs, env.action_size)

    def body(carry, step_key):
        env_state, episode_return, replay = carry
        env_state, episode_return, replay, *_ = act_and_store(
            env,
            env_state,
            episode_return,
            replay,
            lambda _: jax.random.uniform(step_key, shape, minval=-1.0, maxval=1.0),
        )
        return (env_state, episode_return, replay), None

    keys = jax.random.split(key_prefill, plan.prefill_iterations)
    (env_state, episode_return, replay), _ = jax.lax.scan(
        body, (env_state, episode_return, replay), keys
    )
    return env_state, episode_return, replay


def batch_from_windows(windows: dict, gamma: float) -> dict:
    """n-step transitions from windows of consecutive transitions.

    Args:
      windows: replay rows gathered as leaves [n, B, ...].
      gamma: discount factor.

    Returns:
      dict with ``obs`` [B, D], ``action`` [B, A], ``reward`` [B] (the n-step
      return), ``bootstrap_discount`` [B] and ``next_obs`` [B, D] (observation
      to bootstrap from).
    """
    returns, bootstrap_discount, k = n_step_return(
        windows["reward"], windows["discount"], windows["done"], gamma
    )
    next_obs = windows["next_obs"][k, jnp.arange(k.shape[0])]
    return {
        "obs": windows["obs"][0],
        "action": windows["action"][0],
        "reward": returns,
        "bootstrap_discount": bootstrap_discount,
        "next_obs": next_obs,
    }


def sample_batch(
    replay: replay_lib.Replay, key: jax.Array, config: OffPolicyConfig
) -> tuple[Batch, jax.Array, jax.Array]:
    """Samples n-step transitions, uniformly or by priority (``config.prioritized``).

    Returns:
      (batch with ``weight`` [B], the importance weights (ones when uniform),
      rows [B], envs [B]).
    """
    if config.prioritized:
        rows, envs, windows, weights = replay_lib.sample_prioritized(
            replay,
            key,
            config.batch_size,
            config.n_step,
            config.priority_alpha,
            config.priority_beta,
        )
    else:
        rows, envs, windows = replay_lib.sample(replay, key, config.batch_size, config.n_step)
        weights = jnp.ones((config.batch_size,), jnp.float32)
    return {**batch_from_windows(windows, config.gamma), "weight": weights}, rows, envs


def init_actor_critic(
    actor_net: Any,
    critic_net: Any,
    key: jax.Array,
    obs_shape: tuple[int, ...],
    action_size: int,
    encoder_net: PixelEncoder | None = None,
) -> dict:
    """``{"actor", "critic"}`` parameters of ``actor(features)`` and ``critic(features, action)``.

    Without an encoder the features are the observations [D]; with one,
    ``params["encoder"]`` maps uint8 pixels ``obs_shape`` to its features.
    """
    action = jnp.zeros((1, action_size))
    if encoder_net is None:
        key_actor, key_critic = jax.random.split(key)
        params, features = {}, jnp.zeros((1, *obs_shape))
    else:
        key_actor, key_critic, key_encoder = jax.random.split(key, 3)
        pixels = jnp.zeros((1, *obs_shape), jnp.uint8)
        params = {"encoder": encoder_net.init(key_encoder, pixels)["params"]}
        features = jnp.zeros((1, encoder_net.features))
    return {
        **params,
        "actor": actor_net.init(key_actor, features)["params"],
        "critic": critic_net.init(key_critic, features, action)["params"],
    }


def update_targets(target: Any, online: Any, steps: jax.Array, period: int, tau: float) -> Any:
    """Every ``period`` steps, moves ``target`` a fraction ``tau`` towards ``online``.

    tau = 1 is a hard copy (D4PG); period = 1 a Polyak average at every step (SAC).
    """
    moved = optax.incremental_update(online, target, tau)
    return optax.periodic_update(moved, target, steps, period)


def init(sk: Skeleton, key: jax.Array) -> OffPolicyState:
    """Parameters, a prefilled replay and the statistics of the prefill's observations."""
    key_params, key_start, key_next = jax.random.split(key, 3)
    params, opt_state = sk.algorithm.init(key_params, sk.env.obs_shape, sk.env.action_size)
    env_state, episode_return, replay = start(sk.env, sk.plan, key_start)
    stats = sk.normalizer.update(
        sk.normalizer.init(sk.env.obs_size),
        replay.data["obs"][: sk.plan.prefill_iterations],
    )
    return OffPolicyState(
        params=params,
        target_params={name: params[name] for name in sk.algorithm.target_names},
        opt_state=opt_state,
        obs_stats=stats,
        env_state=env_state,
        episode_return=episode_return,
        replay=replay,
        key=key_next,
        learner_steps=jnp.zeros((), jnp.int32),
        iterations=jnp.zeros((), jnp.int32),
    )


def learn_step(sk: Skeleton, state: OffPolicyState, key: jax.Array):
    """One gradient step of the algorithm on a replay batch, then priorities and targets."""
    key_sample, key_update = jax.random.split(key)
    batch, rows, envs = sample_batch(state.replay, key_sample, sk.config)
    if sk.config.random_shift:
        key_update, key_obs, key_next = jax.random.split(key_update, 3)
        batch["obs"] = random_shift(key_obs, batch["obs"], sk.config.random_shift)
        batch["next_obs"] = random_shift(key_next, batch["next_obs"], sk.config.random_shift)
    batch["obs"] = sk.normalizer.apply(state.obs_stats, batch["obs"])
    batch["next_obs"] = sk.normalizer.apply(state.obs_stats, batch["next_obs"])
    params, opt_state, priorities, metrics = sk.algorithm.update(
        state.params, state.target_params, state.opt_state, batch, key_update
    )
    replay = state.replay
    if sk.config.prioritized:
        replay = replay_lib.update_priorities(replay, rows, envs, priorities)
    learner_steps = state.learner_steps + 1
    online = {name: params[name] for name in sk.algorithm.target_names}
    targets = update_targets(
        state.target_params,
        online,
        learner_steps,
        sk.algorithm.target_period,
        sk.algorithm.target_tau,
    )
    state = state.replace(
        params=params,
        target_params=targets,
        opt_state=opt_state,
        replay=replay,
        learner_steps=learner_steps,
    )
    return state, metrics


def iteration(sk: Skeleton, state: OffPolicyState):
    """Acts once in every environment, stores the transitions, then learns.

    Returns:
      (state, metrics averaged over the gradient steps, with ``return_sum`` and
      ``episodes`` of the episodes that ended).
    """
    key_act, key_learn, key_next = jax.random.split(state.key, 3)

    def explore(obs):
        features = sk.algorithm.encode(state.params, sk.normalizer.apply(state.obs_stats, obs))
        return sk.algorithm.explore(state.params["actor"], features, key_act)

    env_state, episode_return, replay, obs, finished, count = act_and_store(
        sk.env, state.env_state, state.episode_return, state.replay, explore
    )
    state = state.replace(
        env_state=env_state,
        episode_return=episode_return,
        replay=replay,
        obs_stats=sk.normalizer.update(state.obs_stats, obs),
    )
    keys = jax.random.split(key_learn, sk.config.grad_steps_per_iteration)
    state, metrics = jax.lax.scan(functools.partial(learn_step, sk), state, keys)
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["return_sum"], metrics["episodes"] = finished, count
    return state.replace(key=key_next, iterations=state.iterations + 1), metrics


def policy_params(sk: Skeleton, state: OffPolicyState) -> dict:
    """What the deterministic policy reads: the actor, any encoder, the observation statistics."""
    params = {name: state.params[name] for name in sk.algorithm.policy_names}
    return {**params, "obs_stats": state.obs_stats}


def policy(sk: Skeleton, params: dict, observation: Any) -> jax.Array:
    """The deterministic policy on a batched observation: actions [N, A]."""
    obs = sk.normalizer.apply(params["obs_stats"], sk.env.observe(observation))
    return sk.algorithm.act(params["actor"], sk.algorithm.encode(params, obs))


def make_learner(
    config: OffPolicyConfig,
    env: Any,
    make_algorithm: Callable[[int, PixelEncoder | None], Algorithm],
    mesh: Mesh | None = None,
) -> Learner:
    """An off-policy learner: an algorithm's update inside the shared skeleton.

    Args:
      config: the algorithm's config (an ``OffPolicyConfig``).
      env: any ``EnvLike`` (unbatched); an ``AutoReset`` goes on top unless present.
        An env whose observation is one uint8 image (``FrameStack(Pixels(env))``)
        trains from pixels, through a ``PixelEncoder``.
      make_algorithm: the algorithm's parts, given the action size A and the
        pixel encoder (None for flat observations).
      mesh: optional one-axis device mesh; envs and replay are sharded on it.

    Returns:
      The Learner.

    Raises:
      ValueError: observation normalisation asked for pixels, a random shift
        for state observations, or a replay that cannot fit in the device's
        memory (the message says what fits).
    """
    plan = schedule(config)
    tenv = training_env(env, config.num_envs, mesh)
    if tenv.pixels and config.normalize_observations:
        raise ValueError(
            f"{type(config).__name__}.normalize_observations applies to state observations; "
            "the pixel encoder scales pixels to [0, 1] itself: leave it false"
        )
    if config.random_shift and not tenv.pixels:
        raise ValueError(
            f"{type(config).__name__}.random_shift moves images; this env's observations "
            "are not one image (train from pixels: FrameStack(Pixels(env)), or --pixels)"
        )
    check_replay_fits(tenv, plan)
    sk = Skeleton(
        config=config,
        env=tenv,
        algorithm=make_algorithm(tenv.action_size, PixelEncoder() if tenv.pixels else None),
        normalizer=Normalizer(config.normalize_observations),
        plan=plan,
    )
    return Learner(
        init=functools.partial(init, sk),
        run_chunk=chunked(functools.partial(iteration, sk), plan.iterations_per_chunk),
        policy=functools.partial(policy, sk),
        policy_params=functools.partial(policy_params, sk),
        env_steps_per_chunk=plan.iterations_per_chunk * config.num_envs,
        num_chunks=plan.num_chunks,
        updates_per_chunk=plan.iterations_per_chunk * config.grad_steps_per_iteration,
        env_steps_at_init=plan.prefill_iterations * config.num_envs,
    )


def device_memory() -> int | None:
    """Bytes one local device can hold: its allocator's limit, or the host's memory (CPU)."""
    stats = jax.local_devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"])
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_replay_fits(env: TrainingEnv, plan: Schedule, fraction: float = 0.8) -> None:
    """Refuses a replay larger than ``fraction`` of one device's memory, saying what fits.

    Pixel rows are large (two uint8 84x84x9 stacks, 127 kB a transition), so
    the default capacity of state observations would not fit.

    Raises:
      ValueError: naming the replay's size, the device's and the largest
        ``replay_capacity`` that fits.
    """
    memory = device_memory()
    if memory is None:
        return
    row = jax.eval_shape(lambda: empty_row(env))
    row_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(row)) + 4 * env.num_envs
    devices = 1 if env.mesh is None else env.mesh.size
    need = plan.capacity * row_bytes / devices
    if need > fraction * memory:
        fits = int(fraction * memory * devices / row_bytes) * env.num_envs
        raise ValueError(
            f"the replay of {plan.capacity * env.num_envs} transitions needs "
            f"{need / 2**30:.1f} GiB per device ({row_bytes // env.num_envs} bytes each), "
            f"more than {fraction:.0%} of the device's {memory / 2**30:.1f} GiB; "
            f"set replay_capacity to at most {fits}"
        )
