"""SAC as one jitted program: vmapped envs, an on-device replay, updates in ``lax.scan``."""

from __future__ import annotations

import math
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from jaxcontrol.agents.common import offpolicy, running_stats
from jaxcontrol.agents.common import replay as replay_lib
from jaxcontrol.agents.common.episodes import summarize_chunk
from jaxcontrol.agents.common.learner import Learner, train_from_learner
from jaxcontrol.agents.common.venv import training_env
from jaxcontrol.agents.sac import losses
from jaxcontrol.agents.sac.config import SACConfig
from jaxcontrol.agents.sac.networks import TanhGaussianActor, TwinCritic


@flax.struct.dataclass
class SACState:
    """Everything a SAC run carries between iterations.

    Attributes:
      actor: actor parameters.
      critic: twin critic parameters.
      target_critic: Polyak-averaged copy of ``critic``.
      log_alpha: scalar log temperature.
      actor_opt, critic_opt, alpha_opt: Adam states.
      obs_stats: running observation statistics.
      env_state: batched env state [E].
      episode_return: [E] running returns.
      replay: the on-device replay.
      key: PRNG key for the next iteration.
      iterations: scalar int32, iterations done.
    """

    actor: Any
    critic: Any
    target_critic: Any
    log_alpha: jax.Array
    actor_opt: Any
    critic_opt: Any
    alpha_opt: Any
    obs_stats: running_stats.RunningStats
    env_state: Any
    episode_return: jax.Array
    replay: replay_lib.Replay
    key: jax.Array
    iterations: jax.Array


def make_learner(config: SACConfig, env: Any, mesh: Mesh | None = None) -> Learner:
    """Builds SAC's pure pieces for ``env``.

    Args:
      config: hyperparameters.
      env: a jaxcontrol Env (unbatched); wrapped with AutoReset here.
      mesh: optional one-axis device mesh; envs and replay are sharded on it.

    Returns:
      The Learner.
    """
    env = training_env(env, config.num_envs, mesh)
    obs_size, action_size = env.obs_size, env.action_size
    actor_net = TanhGaussianActor(action_size, config.hidden_sizes)
    critic_net = TwinCritic(config.hidden_sizes)
    actor_optimizer = optax.adam(config.actor_learning_rate)
    critic_optimizer = optax.adam(config.critic_learning_rate)
    alpha_optimizer = optax.adam(config.alpha_learning_rate)
    target_entropy = config.target_entropy_scale * action_size
    plan = offpolicy.schedule(config)

    def normalize(stats, obs):
        if config.normalize_observations:
            return running_stats.normalize(stats, obs)
        return obs

    def init(key: jax.Array) -> SACState:
        key_actor, key_critic, key_start, key_next = jax.random.split(key, 4)
        dummy_obs = jnp.zeros((1, obs_size))
        actor = actor_net.init(key_actor, dummy_obs)["params"]
        critic = critic_net.init(key_critic, dummy_obs, jnp.zeros((1, action_size)))["params"]
        log_alpha = jnp.asarray(math.log(config.init_alpha), jnp.float32)
        env_state, episode_return, replay = offpolicy.start(env, plan, key_start)
        stats = running_stats.init(obs_size)
        if config.normalize_observations:
            stats = running_stats.update(stats, replay.data["obs"][: plan.prefill_iterations])
        return SACState(
            actor=actor,
            critic=critic,
            target_critic=critic,
            log_alpha=log_alpha,
            actor_opt=actor_optimizer.init(actor),
            critic_opt=critic_optimizer.init(critic),
            alpha_opt=alpha_optimizer.init(log_alpha),
            obs_stats=stats,
            env_state=env_state,
            episode_return=episode_return,
            replay=replay,
            key=key_next,
            iterations=jnp.zeros((), jnp.int32),
        )

    def learn_step(state: SACState, key: jax.Array):
        key_sample, key_next_action, key_action = jax.random.split(key, 3)
        batch, _, _, _ = offpolicy.sample_batch(
            state.replay, key_sample, config.batch_size, config.n_step, config.gamma
        )
        obs = normalize(state.obs_stats, batch["obs"])
        next_obs = normalize(state.obs_stats, batch["next_obs"])
        alpha = jnp.exp(state.log_alpha)

        next_mean, next_log_std = actor_net.apply({"params": state.actor}, next_obs)
        next_action, next_log_prob = losses.tanh_gaussian_sample(
            next_mean, next_log_std, jax.random.normal(key_next_action, next_mean.shape)
        )
        next_q = critic_net.apply({"params": state.target_critic}, next_obs, next_action)
        target = jax.lax.stop_gradient(
            losses.soft_td_target(
                batch["reward"], batch["bootstrap_discount"], next_q, next_log_prob, alpha
            )
        )

        def critic_loss_fn(critic):
            q = critic_net.apply({"params": critic}, obs, batch["action"])
            return losses.critic_loss(q, target), jnp.mean(q)

        (c_loss, q_mean), grads = jax.value_and_grad(critic_loss_fn, has_aux=True)(state.critic)
        updates, critic_opt = critic_optimizer.update(grads, state.critic_opt)
        critic = optax.apply_updates(state.critic, updates)

        noise = jax.random.normal(key_action, (obs.shape[0], action_size))

        def actor_loss_fn(actor):
            mean, log_std = actor_net.apply({"params": actor}, obs)
            action, log_prob = losses.tanh_gaussian_sample(mean, log_std, noise)
            q = critic_net.apply({"params": critic}, obs, action)
            return losses.actor_loss(q, log_prob, alpha), log_prob

        (a_loss, log_prob), grads = jax.value_and_grad(actor_loss_fn, has_aux=True)(state.actor)
        updates, actor_opt = actor_optimizer.update(grads, state.actor_opt)
        actor = optax.apply_updates(state.actor, updates)

        t_loss, grad = jax.value_and_grad(losses.temperature_loss)(
            state.log_alpha, log_prob, target_entropy
        )
        updates, alpha_opt = alpha_optimizer.update(grad, state.alpha_opt)
        log_alpha = optax.apply_updates(state.log_alpha, updates)

        new_state = state.replace(
            actor=actor,
            critic=critic,
            target_critic=losses.polyak(state.target_critic, critic, config.tau),
            log_alpha=log_alpha,
            actor_opt=actor_opt,
            critic_opt=critic_opt,
            alpha_opt=alpha_opt,
        )
        metrics = {
            "critic_loss": c_loss,
            "actor_loss": a_loss,
            "temperature_loss": t_loss,
            "alpha": alpha,
            "entropy": -jnp.mean(log_prob),
            "q_mean": q_mean,
        }
        return new_state, metrics

    def iteration(state: SACState, _):
        key_act, key_learn, key_next = jax.random.split(state.key, 3)

        def explore(obs):
            mean, log_std = actor_net.apply(
                {"params": state.actor}, normalize(state.obs_stats, obs)
            )
            action, _ = losses.tanh_gaussian_sample(
                mean, log_std, jax.random.normal(key_act, mean.shape)
            )
            return action

        env_state, episode_return, replay, finished, count = offpolicy.act_and_store(
            env, state.env_state, state.episode_return, state.replay, explore
        )
        stats = state.obs_stats
        if config.normalize_observations:
            stats = running_stats.update(
                stats, replay.data["obs"][(replay.position - 1) % replay.capacity]
            )
        state = state.replace(
            env_state=env_state, episode_return=episode_return, replay=replay, obs_stats=stats
        )
        state, metrics = offpolicy.learn(
            state, learn_step, key_learn, config.grad_steps_per_iteration, finished, count
        )
        return state.replace(key=key_next, iterations=state.iterations + 1), metrics

    def run_chunk(state: SACState):
        state, metrics = jax.lax.scan(iteration, state, None, length=plan.iterations_per_chunk)
        return state, summarize_chunk(metrics, state.iterations)

    def policy_params(state: SACState):
        return {"actor": state.actor, "obs_stats": state.obs_stats}

    def policy(params, observation):
        obs = normalize(params["obs_stats"], env.flatten(observation))
        mean, _ = actor_net.apply({"params": params["actor"]}, obs)
        return jnp.tanh(mean)

    return Learner(
        init=init,
        run_chunk=run_chunk,
        policy=policy,
        policy_params=policy_params,
        env_steps_per_chunk=plan.iterations_per_chunk * config.num_envs,
        num_chunks=plan.num_chunks,
        updates_per_chunk=plan.iterations_per_chunk * config.grad_steps_per_iteration,
        env_steps_at_init=plan.prefill_iterations * config.num_envs,
    )


def make_train(config: SACConfig, env: Any, mesh: Mesh | None = None):
    """``train(key) -> (final SACState, metrics [num_chunks])``; jit- and vmap-able."""
    return train_from_learner(make_learner(config, env, mesh))
