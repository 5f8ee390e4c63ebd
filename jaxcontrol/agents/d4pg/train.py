"""D4PG's parts of the off-policy skeleton: a categorical critic and a deterministic actor.

Replay (prioritized if asked), the actors' Gaussian exploration with a sigma
per environment, hard target copies every ``target_update_period`` learner
steps and the run loop are the skeleton's (``jaxcontrol.agents.common.offpolicy``);
this module supplies the parameters and one gradient update. From pixels, the
encoder under actor and critic is the critic's: its loss trains it, the actor's
loss reads its features through ``stop_gradient``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from jaxcontrol.agents.common import offpolicy
from jaxcontrol.agents.common.learner import Learner, train_from_learner
from jaxcontrol.agents.common.networks import PixelEncoder
from jaxcontrol.agents.d4pg import losses
from jaxcontrol.agents.d4pg.config import D4PGConfig
from jaxcontrol.agents.d4pg.networks import Actor, CategoricalCritic


class D4PG(offpolicy.Algorithm):
    """D4PG's networks and optimisers for one config; its methods are the skeleton's hooks.

    Params: ``{"actor", "critic"}`` (and ``"encoder"`` from pixels), all with
    target copies, copied every ``target_update_period`` learner steps.
    """

    def __init__(
        self, config: D4PGConfig, action_size: int, encoder_net: PixelEncoder | None = None
    ):
        self.config = config
        self.encoder_net = encoder_net
        self.target_names = self.with_encoder("actor", "critic")
        self.target_period = config.target_update_period
        self.actor_net = Actor(action_size, config.actor_hidden_sizes)
        self.critic_net = CategoricalCritic(config.num_atoms, config.critic_hidden_sizes)
        self.optimizer = optax.adam(config.learning_rate)
        self.support = jnp.linspace(config.v_min, config.v_max, config.num_atoms)
        self.sigmas = losses.exploration_sigmas(config.num_envs, config.sigma_min, config.sigma_max)

    def init(self, key: jax.Array, obs_shape: tuple[int, ...], action_size: int):
        """(params, opt_state) for observations ``obs_shape`` and actions [A]."""
        params = offpolicy.init_actor_critic(
            self.actor_net, self.critic_net, key, obs_shape, action_size, self.encoder_net
        )
        return params, {k: self.optimizer.init(v) for k, v in params.items()}

    def act(self, actor: Any, features: jax.Array) -> jax.Array:
        return self.actor_net.apply({"params": actor}, features)

    def explore(self, actor: Any, features: jax.Array, key: jax.Array) -> jax.Array:
        """The actor's action plus Gaussian noise, actor e with sigma e, clipped to [-1, 1]."""
        action = self.act(actor, features)
        noise = jax.random.normal(key, action.shape) * self.sigmas[:, None]
        return jnp.clip(action + noise, -1.0, 1.0)

    def critic_loss(self, trained: dict, batch: dict, target_probs: jax.Array):
        """Importance-weighted categorical TD loss of ``trained`` (the critic, and any encoder).

        Returns:
          (loss, (per-example losses [B], logits [B, K], features [B, F])).
        """
        features = self.encode(trained, batch["obs"])
        logits = self.critic_net.apply({"params": trained["critic"]}, features, batch["action"])
        per_example = losses.categorical_cross_entropy(logits, target_probs)
        return jnp.mean(batch["weight"] * per_example), (per_example, logits, features)

    def actor_loss(self, actor: Any, critic: Any, features: jax.Array) -> jax.Array:
        """-E[Q(s, pi(s))] on features [B, F]; no gradient flows back into them (the encoder)."""
        features = jax.lax.stop_gradient(features)
        q_logits = self.critic_net.apply({"params": critic}, features, self.act(actor, features))
        return -jnp.mean(losses.expected_value(q_logits, self.support))

    def update(self, params: dict, targets: dict, opt_state: dict, batch: dict, key: jax.Array):
        """Critic (and encoder: categorical TD), then actor (against the critic before this step)."""
        del key  # deterministic given the batch
        next_features = self.encode(targets, batch["next_obs"])
        next_action = self.act(targets["actor"], next_features)
        next_logits = self.critic_net.apply(
            {"params": targets["critic"]}, next_features, next_action
        )
        target_probs = jax.lax.stop_gradient(
            losses.categorical_td_target(
                batch["reward"],
                batch["bootstrap_discount"],
                jax.nn.softmax(next_logits),
                self.support,
            )
        )
        trained = {name: params[name] for name in self.with_encoder("critic")}
        (c_loss, (per_example, logits, features)), critic_grads = jax.value_and_grad(
            self.critic_loss, has_aux=True
        )(trained, batch, target_probs)
        a_loss, actor_grads = jax.value_and_grad(self.actor_loss)(
            params["actor"], params["critic"], features
        )
        grads = {"actor": actor_grads, **critic_grads}
        new_params, new_opt_state = {}, {}
        for name, grad in grads.items():
            updates, new_opt_state[name] = self.optimizer.update(grad, opt_state[name])
            new_params[name] = optax.apply_updates(params[name], updates)
        metrics = {
            "critic_loss": c_loss,
            "actor_loss": a_loss,
            "q_mean": jnp.mean(losses.expected_value(logits, self.support)),
        }
        return new_params, new_opt_state, per_example, metrics


def make_learner(config: D4PGConfig, env: Any, mesh: Mesh | None = None) -> Learner:
    """D4PG on ``env`` (any ``EnvLike``, unbatched); see ``offpolicy.make_learner``."""
    return offpolicy.make_learner(config, env, lambda a, enc: D4PG(config, a, enc), mesh)


def make_train(config: D4PGConfig, env: Any, mesh: Mesh | None = None):
    """``train(key) -> (final state, metrics [num_chunks])``; jit- and vmap-able."""
    return train_from_learner(make_learner(config, env, mesh))
