"""D4PG as one jitted program: vmapped actors, an on-device replay, updates in ``lax.scan``."""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from jaxcontrol.agents.common import offpolicy
from jaxcontrol.agents.common import replay as replay_lib
from jaxcontrol.agents.common.episodes import summarize_chunk
from jaxcontrol.agents.common.learner import Learner, train_from_learner
from jaxcontrol.agents.common.venv import training_env
from jaxcontrol.agents.d4pg import losses
from jaxcontrol.agents.d4pg.config import D4PGConfig
from jaxcontrol.agents.d4pg.networks import Actor, CategoricalCritic


@flax.struct.dataclass
class D4PGState:
    """Everything a D4PG run carries between iterations.

    Attributes:
      actor, critic: online parameters.
      target_actor, target_critic: hard-updated copies.
      actor_opt, critic_opt: Adam states.
      env_state: batched env state [E].
      episode_return: [E] running returns.
      replay: the on-device replay (priorities used when ``prioritized``).
      key: PRNG key for the next iteration.
      learner_steps: scalar int32, gradient steps done (drives target updates).
      iterations: scalar int32, iterations done.
    """

    actor: Any
    critic: Any
    target_actor: Any
    target_critic: Any
    actor_opt: Any
    critic_opt: Any
    env_state: Any
    episode_return: jax.Array
    replay: replay_lib.Replay
    key: jax.Array
    learner_steps: jax.Array
    iterations: jax.Array


def make_learner(config: D4PGConfig, env: Any, mesh: Mesh | None = None) -> Learner:
    """Builds D4PG's pure pieces for ``env``.

    Args:
      config: hyperparameters.
      env: a jaxcontrol Env (unbatched); wrapped with AutoReset here.
      mesh: optional one-axis device mesh; envs and replay are sharded on it.

    Returns:
      The Learner.
    """
    env = training_env(env, config.num_envs, mesh)
    obs_size, action_size = env.obs_size, env.action_size
    actor_net = Actor(action_size, config.actor_hidden_sizes)
    critic_net = CategoricalCritic(config.num_atoms, config.critic_hidden_sizes)
    actor_optimizer = optax.adam(config.learning_rate)
    critic_optimizer = optax.adam(config.learning_rate)
    support = jnp.linspace(config.v_min, config.v_max, config.num_atoms)
    sigmas = losses.exploration_sigmas(config.num_envs, config.sigma_min, config.sigma_max)
    plan = offpolicy.schedule(config)

    def init(key: jax.Array) -> D4PGState:
        key_actor, key_critic, key_start, key_next = jax.random.split(key, 4)
        dummy_obs = jnp.zeros((1, obs_size))
        actor = actor_net.init(key_actor, dummy_obs)["params"]
        critic = critic_net.init(key_critic, dummy_obs, jnp.zeros((1, action_size)))["params"]
        env_state, episode_return, replay = offpolicy.start(env, plan, key_start)
        return D4PGState(
            actor=actor,
            critic=critic,
            target_actor=actor,
            target_critic=critic,
            actor_opt=actor_optimizer.init(actor),
            critic_opt=critic_optimizer.init(critic),
            env_state=env_state,
            episode_return=episode_return,
            replay=replay,
            key=key_next,
            learner_steps=jnp.zeros((), jnp.int32),
            iterations=jnp.zeros((), jnp.int32),
        )

    def learn_step(state: D4PGState, key_sample: jax.Array):
        batch, rows, envs, weights = offpolicy.sample_batch(
            state.replay,
            key_sample,
            config.batch_size,
            config.n_step,
            config.gamma,
            prioritized=config.prioritized,
            alpha=config.priority_alpha,
            beta=config.priority_beta,
        )
        next_action = actor_net.apply({"params": state.target_actor}, batch["next_obs"])
        next_logits = critic_net.apply(
            {"params": state.target_critic}, batch["next_obs"], next_action
        )
        target_probs = jax.lax.stop_gradient(
            losses.categorical_td_target(
                batch["reward"], batch["bootstrap_discount"], jax.nn.softmax(next_logits), support
            )
        )

        def critic_loss_fn(critic):
            logits = critic_net.apply({"params": critic}, batch["obs"], batch["action"])
            per_example = losses.categorical_cross_entropy(logits, target_probs)
            return jnp.mean(weights * per_example), (per_example, logits)

        (c_loss, (per_example, logits)), grads = jax.value_and_grad(critic_loss_fn, has_aux=True)(
            state.critic
        )
        updates, critic_opt = critic_optimizer.update(grads, state.critic_opt)
        critic = optax.apply_updates(state.critic, updates)

        def actor_loss_fn(actor):
            action = actor_net.apply({"params": actor}, batch["obs"])
            q_logits = critic_net.apply({"params": state.critic}, batch["obs"], action)
            return -jnp.mean(losses.expected_value(q_logits, support))

        a_loss, grads = jax.value_and_grad(actor_loss_fn)(state.actor)
        updates, actor_opt = actor_optimizer.update(grads, state.actor_opt)
        actor = optax.apply_updates(state.actor, updates)

        replay = state.replay
        if config.prioritized:
            replay = replay_lib.update_priorities(replay, rows, envs, per_example)
        learner_steps = state.learner_steps + 1
        target_actor = optax.periodic_update(
            actor, state.target_actor, learner_steps, config.target_update_period
        )
        target_critic = optax.periodic_update(
            critic, state.target_critic, learner_steps, config.target_update_period
        )
        metrics = {
            "critic_loss": c_loss,
            "actor_loss": a_loss,
            "q_mean": jnp.mean(losses.expected_value(logits, support)),
        }
        return state.replace(
            actor=actor,
            critic=critic,
            target_actor=target_actor,
            target_critic=target_critic,
            actor_opt=actor_opt,
            critic_opt=critic_opt,
            replay=replay,
            learner_steps=learner_steps,
        ), metrics

    def iteration(state: D4PGState, _):
        key_noise, key_learn, key_next = jax.random.split(state.key, 3)

        def explore(obs):
            action = actor_net.apply({"params": state.actor}, obs)
            noise = jax.random.normal(key_noise, action.shape) * sigmas[:, None]
            return jnp.clip(action + noise, -1.0, 1.0)

        env_state, episode_return, replay, finished, count = offpolicy.act_and_store(
            env, state.env_state, state.episode_return, state.replay, explore
        )
        state = state.replace(env_state=env_state, episode_return=episode_return, replay=replay)
        state, metrics = offpolicy.learn(
            state, learn_step, key_learn, config.grad_steps_per_iteration, finished, count
        )
        return state.replace(key=key_next, iterations=state.iterations + 1), metrics

    def run_chunk(state: D4PGState):
        state, metrics = jax.lax.scan(iteration, state, None, length=plan.iterations_per_chunk)
        return state, summarize_chunk(metrics, state.iterations)

    def policy_params(state: D4PGState):
        return {"actor": state.actor}

    def policy(params, observation):
        return actor_net.apply({"params": params["actor"]}, env.flatten(observation))

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


def make_train(config: D4PGConfig, env: Any, mesh: Mesh | None = None):
    """``train(key) -> (final D4PGState, metrics [num_chunks])``; jit- and vmap-able."""
    return train_from_learner(make_learner(config, env, mesh))
