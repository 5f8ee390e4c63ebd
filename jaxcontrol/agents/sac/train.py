"""SAC's parts of the off-policy skeleton: twin soft critics, a tanh-Gaussian actor, a temperature.

Replay, acting, target updates (Polyak, every gradient step) and the run loop
are the skeleton's (``jaxcontrol.agents.common.offpolicy``); this module
supplies the parameters and one gradient update. From pixels, the encoder
under actor and critics is the critics': their loss trains it (at the critics'
learning rate), the actor's loss reads its features through ``stop_gradient``.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

from jaxcontrol.agents.common import offpolicy
from jaxcontrol.agents.common.learner import Learner, train_from_learner
from jaxcontrol.agents.common.networks import PixelEncoder
from jaxcontrol.agents.sac import losses
from jaxcontrol.agents.sac.config import SACConfig
from jaxcontrol.agents.sac.networks import TanhGaussianActor, TwinCritic


class SAC(offpolicy.Algorithm):
    """SAC's networks and optimisers for one config; its methods are the skeleton's hooks.

    Params: ``{"actor", "critic", "log_alpha"}`` (and ``"encoder"`` from
    pixels); the critic and encoder have target copies, moved ``tau`` of the
    way to the online ones at every gradient step.
    """

    def __init__(
        self, config: SACConfig, action_size: int, encoder_net: PixelEncoder | None = None
    ):
        self.config = config
        self.encoder_net = encoder_net
        self.target_names = self.with_encoder("critic")
        self.target_tau = config.tau
        self.actor_net = TanhGaussianActor(action_size, config.hidden_sizes)
        self.critic_net = TwinCritic(config.hidden_sizes)
        self.optimizers = {
            "actor": optax.adam(config.actor_learning_rate),
            "critic": optax.adam(config.critic_learning_rate),
            "log_alpha": optax.adam(config.alpha_learning_rate),
        }
        if encoder_net is not None:
            self.optimizers["encoder"] = optax.adam(config.critic_learning_rate)
        self.target_entropy = config.target_entropy_scale * action_size

    def init(self, key: jax.Array, obs_shape: tuple[int, ...], action_size: int):
        """(params, opt_state) for observations ``obs_shape`` and actions [A]."""
        params = offpolicy.init_actor_critic(
            self.actor_net, self.critic_net, key, obs_shape, action_size, self.encoder_net
        )
        params["log_alpha"] = jnp.asarray(math.log(self.config.init_alpha), jnp.float32)
        return params, {k: opt.init(params[k]) for k, opt in self.optimizers.items()}

    def sample(self, actor: Any, features: jax.Array, key: jax.Array):
        """a ~ pi(.|features), reparameterised: (actions [B, A], log_prob [B])."""
        mean, log_std = self.actor_net.apply({"params": actor}, features)
        return losses.tanh_gaussian_sample(mean, log_std, jax.random.normal(key, mean.shape))

    def explore(self, actor: Any, features: jax.Array, key: jax.Array) -> jax.Array:
        return self.sample(actor, features, key)[0]

    def act(self, actor: Any, features: jax.Array) -> jax.Array:
        mean, _ = self.actor_net.apply({"params": actor}, features)
        return jnp.tanh(mean)

    def _step(self, name: str, params: dict, opt_state: dict, grads: Any):
        updates, state = self.optimizers[name].update(grads, opt_state[name])
        return {**params, name: optax.apply_updates(params[name], updates)}, {
            **opt_state,
            name: state,
        }

    def critic_loss(self, trained: dict, batch: dict, target: jax.Array):
        """Twin soft TD loss of ``trained`` (the critics, and any encoder): (loss, q [2, B])."""
        features = self.encode(trained, batch["obs"])
        q = self.critic_net.apply({"params": trained["critic"]}, features, batch["action"])
        return losses.critic_loss(q, target, batch["weight"]), q

    def actor_loss(
        self, actor: Any, critic: Any, features: jax.Array, alpha: jax.Array, key: jax.Array
    ):
        """SAC's policy loss on features [B, F], with no gradient into them (the encoder).

        Returns:
          (loss, log_prob [B]).
        """
        features = jax.lax.stop_gradient(features)
        action, log_prob = self.sample(actor, features, key)
        q = self.critic_net.apply({"params": critic}, features, action)
        return losses.actor_loss(q, log_prob, alpha), log_prob

    def update(self, params: dict, targets: dict, opt_state: dict, batch: dict, key: jax.Array):
        """Critics (and encoder), then actor (against the new critics), then temperature."""
        key_next, key_action = jax.random.split(key)
        alpha = jnp.exp(params["log_alpha"])
        next_action, next_log_prob = self.sample(
            params["actor"], self.encode(params, batch["next_obs"]), key_next
        )
        next_q = self.critic_net.apply(
            {"params": targets["critic"]}, self.encode(targets, batch["next_obs"]), next_action
        )
        target = jax.lax.stop_gradient(
            losses.soft_td_target(
                batch["reward"], batch["bootstrap_discount"], next_q, next_log_prob, alpha
            )
        )
        trained = {name: params[name] for name in self.with_encoder("critic")}
        (c_loss, q), grads = jax.value_and_grad(self.critic_loss, has_aux=True)(
            trained, batch, target
        )
        for name, grad in grads.items():
            params, opt_state = self._step(name, params, opt_state, grad)
        (a_loss, log_prob), grads = jax.value_and_grad(self.actor_loss, has_aux=True)(
            params["actor"],
            params["critic"],
            self.encode(params, batch["obs"]),
            alpha,
            key_action,
        )
        params, opt_state = self._step("actor", params, opt_state, grads)
        t_loss, grad = jax.value_and_grad(losses.temperature_loss)(
            params["log_alpha"], log_prob, self.target_entropy
        )
        params, opt_state = self._step("log_alpha", params, opt_state, grad)
        metrics = {
            "critic_loss": c_loss,
            "actor_loss": a_loss,
            "temperature_loss": t_loss,
            "alpha": alpha,
            "entropy": -jnp.mean(log_prob),
            "q_mean": jnp.mean(q),
        }
        return params, opt_state, jnp.mean(jnp.abs(q - target[None]), axis=0), metrics


def make_learner(config: SACConfig, env: Any, mesh: Mesh | None = None) -> Learner:
    """SAC on ``env`` (any ``EnvLike``, unbatched); see ``offpolicy.make_learner``."""
    return offpolicy.make_learner(config, env, lambda a, enc: SAC(config, a, enc), mesh)


def make_train(config: SACConfig, env: Any, mesh: Mesh | None = None):
    """``train(key) -> (final state, metrics [num_chunks])``; jit- and vmap-able."""
    return train_from_learner(make_learner(config, env, mesh))
