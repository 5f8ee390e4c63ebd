"""PPO as one jitted program: vmapped envs, rollouts and minibatch epochs in ``lax.scan``.

Each iteration collects a rollout of ``unroll_length`` steps from every
environment, computes GAE advantages (bootstrapping through time limits from
``info["final_observation"]``), then runs ``update_epochs`` passes of
minibatch SGD on PPO's clipped objective. The pieces are top-level functions
of a ``PPO`` (the static parts: config, networks, optimiser, env) and a
``PPOState``, so tests can call each; ``make_learner`` only wires them into
the shared chunked loop (``jaxcontrol.agents.common.learner.chunked``).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from jaxcontrol.agents.common import sharding
from jaxcontrol.agents.common.learner import Learner, chunked, chunks_for, train_from_learner
from jaxcontrol.agents.common.returns import gae
from jaxcontrol.agents.common.running_stats import Normalizer, RunningStats
from jaxcontrol.agents.common.venv import TrainingEnv, training_env
from jaxcontrol.agents.ppo import losses
from jaxcontrol.agents.ppo.config import PPOConfig
from jaxcontrol.agents.ppo.networks import GaussianPolicy, ValueFunction, init_params


@flax.struct.dataclass
class PPOState:
    """Everything a PPO run carries between iterations.

    Attributes:
      params: ``{"policy", "value"}`` network parameters.
      opt_state: optimiser state (its step count drives the learning-rate schedule).
      obs_stats: running observation statistics.
      env_state: batched env State, [E] leading axis.
      episode_return: [E] return so far of each env's current episode.
      key: PRNG key for the next iteration.
      iterations: scalar int32, iterations (rollout + update) done.
    """

    params: Any
    opt_state: Any
    obs_stats: RunningStats
    env_state: Any
    episode_return: jax.Array
    key: jax.Array
    iterations: jax.Array


class PPO(NamedTuple):
    """The static parts of a PPO run."""

    config: PPOConfig
    env: TrainingEnv
    policy_net: GaussianPolicy
    value_net: ValueFunction
    optimizer: optax.GradientTransformation
    normalizer: Normalizer
    mesh: Mesh | None

    @property
    def batch_size(self) -> int:
        return self.config.num_envs * self.config.unroll_length


def make_optimizer(config: PPOConfig, num_iterations: int) -> optax.GradientTransformation:
    """Adam after global-norm clipping; the step size decays linearly to 0 when asked.

    Args:
      config: hyperparameters.
      num_iterations: iterations in the whole run (the schedule's length).
    """
    learning_rate: Any = config.learning_rate
    if config.anneal_learning_rate:
        steps = num_iterations * config.update_epochs * config.num_minibatches
        learning_rate = optax.linear_schedule(config.learning_rate, 0.0, steps)
    return optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(learning_rate, eps=1e-5)
    )


def init(ppo: PPO, key: jax.Array) -> PPOState:
    """Fresh parameters, optimiser and environments."""
    key_params, key_env, key_next = jax.random.split(key, 3)
    params = init_params(key_params, ppo.policy_net, ppo.value_net, ppo.env.obs_size)
    return PPOState(
        params=params,
        opt_state=ppo.optimizer.init(params),
        obs_stats=ppo.normalizer.init(ppo.env.obs_size),
        env_state=ppo.env.reset(key_env, stagger=ppo.config.stagger_episodes),
        episode_return=ppo.env.zero_returns(stagger=ppo.config.stagger_episodes),
        key=key_next,
        iterations=jnp.zeros((), jnp.int32),
    )


def rollout(ppo: PPO, state: PPOState, key: jax.Array):
    """``unroll_length`` steps of every env under the stochastic policy.

    Actions are drawn from the Gaussian and clipped for the env; the
    trajectory keeps the unclipped draw, and the behaviour policy's mean and
    log-probability of it (the loss's importance ratios are taken against the
    policy that acted, observation statistics included).

    Returns:
      (env_state, episode_return, trajectory with leaves [T, E, ...],
      finished-episode return sums [T], counts [T]).
    """

    def step(carry, key_action):
        env_state, episode_return = carry
        obs = ppo.normalizer.apply(state.obs_stats, ppo.env.flatten(env_state.observation))
        mean, log_std = ppo.policy_net.apply({"params": state.params["policy"]}, obs)
        raw_action = mean + jnp.exp(log_std) * jax.random.normal(key_action, mean.shape)
        env_state, episode_return, transition, finished, count = ppo.env.step(
            env_state, episode_return, jnp.clip(raw_action, -1.0, 1.0)
        )
        transition["action"] = raw_action
        transition["mean"] = mean
        transition["log_std"] = jnp.broadcast_to(log_std, mean.shape)
        transition["log_prob"] = losses.gaussian_log_prob(mean, log_std, raw_action)
        return (env_state, episode_return), (transition, finished, count)

    keys = jax.random.split(key, ppo.config.unroll_length)
    (env_state, episode_return), (traj, finished, count) = jax.lax.scan(
        step, (state.env_state, state.episode_return), keys
    )
    return env_state, episode_return, sharding.constrain(traj, ppo.mesh, axis=1), finished, count


def make_batch(ppo: PPO, params: dict, stats: RunningStats, traj: dict) -> dict:
    """The flat training batch of a trajectory: advantages, value targets, old log-probs.

    Args:
      ppo: the static parts.
      params: parameters the trajectory was collected with.
      stats: observation statistics, including this trajectory.
      traj: leaves [T, E, ...] (``obs``, ``action``, ``reward``, ``discount``,
        ``done``, ``next_obs``, and the behaviour policy's ``mean``, ``log_std``
        and ``log_prob``).

    Returns:
      dict with leaves [T * E, ...], no gradient.
    """
    config = ppo.config
    obs = ppo.normalizer.apply(stats, traj["obs"])
    next_obs = ppo.normalizer.apply(stats, traj["next_obs"])
    values = ppo.value_net.apply({"params": params["value"]}, obs)
    next_values = ppo.value_net.apply({"params": params["value"]}, next_obs)
    advantages, targets = gae(
        traj["reward"] * config.reward_scale,
        values,
        next_values,
        traj["discount"],
        traj["done"],
        config.gamma,
        config.gae_lambda,
    )
    batch = {
        "obs": obs,
        "action": traj["action"],
        "old_log_prob": traj["log_prob"],
        "old_mean": traj["mean"],
        "old_log_std": traj["log_std"],
        "advantages": advantages,
        "targets": targets,
        "old_values": values,
    }
    batch = jax.tree.map(lambda x: x.reshape(ppo.batch_size, *x.shape[2:]), batch)
    return jax.lax.stop_gradient(sharding.constrain(batch, ppo.mesh))


def loss(ppo: PPO, params: dict, batch: dict) -> tuple[jax.Array, dict]:
    """PPO's objective on a minibatch: clipped surrogate, value loss, entropy bonus.

    Returns:
      (loss, metrics): the policy and value losses, the entropy, the mean KL
      divergence of the current policy from the one that acted, the fraction
      of ratios outside the clip range and the mean log std.
    """
    config = ppo.config
    mean, log_std = ppo.policy_net.apply({"params": params["policy"]}, batch["obs"])
    log_prob = losses.gaussian_log_prob(mean, log_std, batch["action"])
    advantages = batch["advantages"]
    if config.normalize_advantages:
        advantages = losses.normalize(advantages)
    policy_loss = losses.clipped_policy_loss(
        log_prob, batch["old_log_prob"], advantages, config.clip_eps
    )
    values = ppo.value_net.apply({"params": params["value"]}, batch["obs"])
    value_loss = losses.value_loss(
        values,
        batch["old_values"],
        batch["targets"],
        config.value_clip_eps if config.clip_value else None,
    )
    entropy = jnp.mean(losses.gaussian_entropy(log_std))
    total = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    ratio = jnp.exp(log_prob - batch["old_log_prob"])
    return total, {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "kl": jnp.mean(losses.gaussian_kl(batch["old_mean"], batch["old_log_std"], mean, log_std)),
        "clip_fraction": jnp.mean(jnp.abs(ratio - 1.0) > config.clip_eps),
        "log_std": jnp.mean(log_std),
    }


def epochs(ppo: PPO, params: dict, opt_state: Any, batch: dict, key: jax.Array):
    """``update_epochs`` passes over ``batch`` in ``num_minibatches`` shuffled minibatches.

    Returns:
      (params, opt_state, metrics with leaves [epochs, minibatches]).
    """
    config = ppo.config
    minibatch_size = ppo.batch_size // config.num_minibatches

    def sgd_step(carry, minibatch):
        params, opt_state = carry
        grads, metrics = jax.grad(functools.partial(loss, ppo), has_aux=True)(params, minibatch)
        updates, opt_state = ppo.optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), metrics

    def epoch(carry, key_perm):
        perm = jax.random.permutation(key_perm, ppo.batch_size)
        minibatches = jax.tree.map(
            lambda x: x[perm].reshape(config.num_minibatches, minibatch_size, *x.shape[1:]), batch
        )
        return jax.lax.scan(sgd_step, carry, minibatches)

    keys = jax.random.split(key, config.update_epochs)
    (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), keys)
    return params, opt_state, metrics


def iteration(ppo: PPO, state: PPOState) -> tuple[PPOState, dict]:
    """One rollout and one update: the unit of PPO's chunked loop."""
    key_rollout, key_epochs, key_next = jax.random.split(state.key, 3)
    env_state, episode_return, traj, finished, count = rollout(ppo, state, key_rollout)
    stats = ppo.normalizer.update(state.obs_stats, traj["obs"])
    batch = make_batch(ppo, state.params, stats, traj)
    params, opt_state, metrics = epochs(ppo, state.params, state.opt_state, batch, key_epochs)
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["return_sum"], metrics["episodes"] = jnp.sum(finished), jnp.sum(count)
    state = state.replace(env_state=env_state, episode_return=episode_return, obs_stats=stats)
    state = state.replace(params=params, opt_state=opt_state, key=key_next)
    return state.replace(iterations=state.iterations + 1), metrics


def policy_params(state: PPOState) -> dict:
    """What the deterministic policy reads: the policy network and the observation statistics."""
    return {"policy": state.params["policy"], "obs_stats": state.obs_stats}


def policy(ppo: PPO, params: dict, observation: Any) -> jax.Array:
    """The deterministic policy (the Gaussian's mean, clipped) on a batched observation."""
    obs = ppo.normalizer.apply(params["obs_stats"], ppo.env.flatten(observation))
    mean, _ = ppo.policy_net.apply({"params": params["policy"]}, obs)
    return jnp.clip(mean, -1.0, 1.0)


def make_learner(config: PPOConfig, env: Any, mesh: Mesh | None = None) -> Learner:
    """Builds PPO's pure pieces for ``env``.

    Args:
      config: hyperparameters.
      env: any ``EnvLike`` (unbatched); an ``AutoReset`` goes on top unless present.
      mesh: optional one-axis device mesh; envs and batches are sharded on it.

    Returns:
      The Learner (see ``jaxcontrol.agents.common.learner``).

    Raises:
      ValueError: for pixel observations, which only the off-policy agents
        (d4pg, sac) encode.
    """
    tenv = training_env(env, config.num_envs, mesh)
    if tenv.pixels:
        raise ValueError(
            "ppo learns from state observations; pixel observations need the pixel "
            "encoder of d4pg or sac"
        )
    batch_size = config.num_envs * config.unroll_length
    per_chunk, num_chunks = chunks_for(config.total_env_steps, batch_size, config.updates_per_chunk)
    ppo = PPO(
        config=config,
        env=tenv,
        policy_net=GaussianPolicy(
            tenv.action_size, config.hidden_sizes, config.init_log_std, config.state_dependent_std
        ),
        value_net=ValueFunction(config.hidden_sizes),
        optimizer=make_optimizer(config, per_chunk * num_chunks),
        normalizer=Normalizer(config.normalize_observations),
        mesh=mesh,
    )
    return Learner(
        init=functools.partial(init, ppo),
        run_chunk=chunked(functools.partial(iteration, ppo), per_chunk),
        policy=functools.partial(policy, ppo),
        policy_params=policy_params,
        env_steps_per_chunk=per_chunk * batch_size,
        num_chunks=num_chunks,
        updates_per_chunk=per_chunk,
    )


def make_train(config: PPOConfig, env: Any, mesh: Mesh | None = None):
    """``train(key) -> (final PPOState, metrics [num_chunks])``; jit- and vmap-able."""
    return train_from_learner(make_learner(config, env, mesh))
