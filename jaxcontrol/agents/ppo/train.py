"""PPO as one jitted program: vmapped envs, rollouts and minibatch epochs in ``lax.scan``."""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from jaxcontrol.agents.common import running_stats, sharding
from jaxcontrol.agents.common.episodes import summarize_chunk
from jaxcontrol.agents.common.learner import Learner, chunks_for, train_from_learner
from jaxcontrol.agents.common.returns import gae
from jaxcontrol.agents.common.venv import training_env
from jaxcontrol.agents.ppo import losses
from jaxcontrol.agents.ppo.config import PPOConfig
from jaxcontrol.agents.ppo.networks import GaussianPolicy, ValueFunction, init_params


@flax.struct.dataclass
class PPOState:
    """Everything a PPO run carries between updates.

    Attributes:
      params: ``{"policy", "value"}`` network parameters.
      opt_state: Adam state.
      obs_stats: running observation statistics.
      env_state: batched env State, [E] leading axis.
      episode_return: [E] return so far of each env's current episode.
      key: PRNG key for the next update.
      updates: scalar int32, updates done.
    """

    params: Any
    opt_state: Any
    obs_stats: running_stats.RunningStats
    env_state: Any
    episode_return: jax.Array
    key: jax.Array
    updates: jax.Array


def make_learner(config: PPOConfig, env: Any, mesh: Mesh | None = None) -> Learner:
    """Builds PPO's pure pieces for ``env``.

    Args:
      config: hyperparameters.
      env: a jaxcontrol Env (unbatched); wrapped with AutoReset here.
      mesh: optional one-axis device mesh; envs and batches are sharded on it.

    Returns:
      The Learner (see ``jaxcontrol.agents.common.learner``).
    """
    env = training_env(env, config.num_envs, mesh)
    obs_size, action_size = env.obs_size, env.action_size
    policy_net = GaussianPolicy(action_size, config.hidden_sizes, config.init_log_std)
    value_net = ValueFunction(config.hidden_sizes)
    optimizer = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate, eps=1e-5)
    )
    num_envs, unroll = config.num_envs, config.unroll_length
    batch_size = num_envs * unroll
    minibatch_size = batch_size // config.num_minibatches
    updates_per_chunk, num_chunks = chunks_for(
        config.total_env_steps, batch_size, config.updates_per_chunk
    )

    def normalize(stats, obs):
        if config.normalize_observations:
            return running_stats.normalize(stats, obs)
        return obs

    def init(key: jax.Array) -> PPOState:
        key_params, key_env, key_next = jax.random.split(key, 3)
        params = init_params(key_params, policy_net, value_net, obs_size)
        env_state = env.reset(key_env)
        return PPOState(
            params=params,
            opt_state=optimizer.init(params),
            obs_stats=running_stats.init(obs_size),
            env_state=env_state,
            episode_return=env.zero_returns(),
            key=key_next,
            updates=jnp.zeros((), jnp.int32),
        )

    def rollout_step(carry, key_action):
        params, stats, env_state, episode_return = carry
        obs = env.flatten(env_state.observation)
        mean, log_std = policy_net.apply({"params": params["policy"]}, normalize(stats, obs))
        raw_action = mean + jnp.exp(log_std) * jax.random.normal(key_action, mean.shape)
        env_state, episode_return, transition, finished, count = env.step(
            env_state, episode_return, jnp.clip(raw_action, -1.0, 1.0)
        )
        transition["action"] = raw_action
        return (params, stats, env_state, episode_return), (transition, finished, count)

    def loss_fn(params, batch):
        mean, log_std = policy_net.apply({"params": params["policy"]}, batch["obs"])
        log_prob = losses.gaussian_log_prob(mean, log_std, batch["action"])
        advantages = batch["advantages"]
        if config.normalize_advantages:
            advantages = losses.normalize(advantages)
        policy_loss = losses.clipped_policy_loss(
            log_prob, batch["old_log_prob"], advantages, config.clip_eps
        )
        values = value_net.apply({"params": params["value"]}, batch["obs"])
        v_loss = losses.value_loss(
            values,
            batch["old_values"],
            batch["targets"],
            config.value_clip_eps if config.clip_value else None,
        )
        entropy = losses.gaussian_entropy(log_std)
        total = policy_loss + config.value_coef * v_loss - config.entropy_coef * entropy
        return total, {"policy_loss": policy_loss, "value_loss": v_loss, "entropy": entropy}

    def sgd_step(carry, minibatch):
        params, opt_state = carry
        grads, metrics = jax.grad(loss_fn, has_aux=True)(params, minibatch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), metrics

    def epoch(carry, key_perm):
        params, opt_state, batch = carry
        perm = jax.random.permutation(key_perm, batch_size)
        minibatches = jax.tree.map(
            lambda x: x[perm].reshape(config.num_minibatches, minibatch_size, *x.shape[1:]), batch
        )
        (params, opt_state), metrics = jax.lax.scan(sgd_step, (params, opt_state), minibatches)
        return (params, opt_state, batch), metrics

    def update(state: PPOState, _):
        key_rollout, key_epochs, key_next = jax.random.split(state.key, 3)
        carry = (state.params, state.obs_stats, state.env_state, state.episode_return)
        (_, _, env_state, episode_return), (traj, finished, count) = jax.lax.scan(
            rollout_step, carry, jax.random.split(key_rollout, unroll)
        )
        traj = sharding.constrain(traj, mesh, axis=1)
        stats = state.obs_stats
        if config.normalize_observations:
            stats = running_stats.update(stats, traj["obs"])
        params = state.params
        obs, next_obs = normalize(stats, traj["obs"]), normalize(stats, traj["next_obs"])
        values = value_net.apply({"params": params["value"]}, obs)
        next_values = value_net.apply({"params": params["value"]}, next_obs)
        mean, log_std = policy_net.apply({"params": params["policy"]}, obs)
        old_log_prob = losses.gaussian_log_prob(mean, log_std, traj["action"])
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
            "old_log_prob": old_log_prob,
            "advantages": advantages,
            "targets": targets,
            "old_values": values,
        }
        batch = jax.tree.map(lambda x: x.reshape(batch_size, *x.shape[2:]), batch)
        batch = jax.lax.stop_gradient(sharding.constrain(batch, mesh))
        (params, opt_state, _), metrics = jax.lax.scan(
            epoch,
            (params, state.opt_state, batch),
            jax.random.split(key_epochs, config.update_epochs),
        )
        metrics = jax.tree.map(jnp.mean, metrics)
        metrics["return_sum"] = jnp.sum(finished)
        metrics["episodes"] = jnp.sum(count)
        new_state = PPOState(
            params=params,
            opt_state=opt_state,
            obs_stats=stats,
            env_state=env_state,
            episode_return=episode_return,
            key=key_next,
            updates=state.updates + 1,
        )
        return new_state, metrics

    def run_chunk(state: PPOState):
        state, metrics = jax.lax.scan(update, state, None, length=updates_per_chunk)
        return state, summarize_chunk(metrics, state.updates)

    def policy_params(state: PPOState):
        return {"policy": state.params["policy"], "obs_stats": state.obs_stats}

    def policy(params, observation):
        obs = normalize(params["obs_stats"], env.flatten(observation))
        mean, _ = policy_net.apply({"params": params["policy"]}, obs)
        return jnp.clip(mean, -1.0, 1.0)

    return Learner(
        init=init,
        run_chunk=run_chunk,
        policy=policy,
        policy_params=policy_params,
        env_steps_per_chunk=updates_per_chunk * batch_size,
        num_chunks=num_chunks,
        updates_per_chunk=updates_per_chunk,
    )


def make_train(config: PPOConfig, env: Any, mesh: Mesh | None = None):
    """``train(key) -> (final PPOState, metrics [num_chunks])``; jit- and vmap-able."""
    return train_from_learner(make_learner(config, env, mesh))
