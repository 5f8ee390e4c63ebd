"""Brax's PPO on a jaxcontrol task (through `BraxEnv`) against our PPO, at equal env steps.

Both learners get the same task, budget and the hyperparameters the two APIs share: 128
environments, 32-step unrolls, 4 minibatches of 1,024 transitions, 8 epochs, Adam at 1e-3
clipped to a gradient norm of 0.5, gamma 0.99, GAE lambda 0.95, ratio clip 0.2, value-loss
weight 0.5, rewards scaled by 0.1, normalised observations and advantages, no entropy bonus,
64x64 policy and value networks. What differs is each library's own design. Brax's networks
(``--brax-networks brax``, its defaults): a tanh-squashed Gaussian whose std is a softplus of
the network's output, swish activations, LeCun initialisation, and an observation normaliser
that does not clip. Ours: a Gaussian clipped by the env, with a learned state-independent log
std (initially -0.5), tanh activations, orthogonal initialisation (0.01 on the mean's layer),
and normalised observations clipped to +-5. ``--brax-networks ours`` gives Brax's trainer our
design (``make_ppo_networks`` options, and ``clip_normalized_observations``), so that what
remains different is the training loop.

Each policy is then scored by the suite's protocol (``jaxcontrol.agents.common.evaluation``:
deterministic policy, full 1000-step episodes from fresh resets, the sum of rewards), so the
two scores are directly comparable. Wall time is training only, compilation included, measured
the same way for both, one after the other in one process.

    python benchmarks/brax_ppo.py --env cartpole-balance --steps 1e6 --episodes 100 \
        [--brax-networks brax ours]

Prints one JSON line per learner (and appends them to ``--out`` if given).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import platform
import sys
import time

import jax
import numpy as np

import jaxcontrol
from jaxcontrol.agents.common.evaluation import evaluate, summarize
from jaxcontrol.agents.common.learner import train_from_learner
from jaxcontrol.agents.common.observations import flatten_observation
from jaxcontrol.agents.ppo import PPOConfig, make_learner

SHARED = {  # our PPOConfig names -> Brax ppo.train names, same values
    "num_envs": ("num_envs", 128),
    "unroll_length": ("unroll_length", 32),
    "update_epochs": ("num_updates_per_batch", 8),
    "learning_rate": ("learning_rate", 1e-3),
    "max_grad_norm": ("max_grad_norm", 0.5),
    "gamma": ("discounting", 0.99),
    "gae_lambda": ("gae_lambda", 0.95),
    "clip_eps": ("clipping_epsilon", 0.2),
    "value_coef": ("vf_loss_coefficient", 0.5),
    "entropy_coef": ("entropy_cost", 0.0),
    "reward_scale": ("reward_scaling", 0.1),
    "normalize_observations": ("normalize_observations", True),
    "normalize_advantages": ("normalize_advantage", True),
}
NUM_MINIBATCHES, HIDDEN = 4, (64, 64)


def ours(env, steps: int, seed: int):
    """(policy(params, observation), params, training seconds, env steps) of our PPO."""
    config = PPOConfig(
        total_env_steps=steps,
        num_minibatches=NUM_MINIBATCHES,
        hidden_sizes=HIDDEN,
        **{name: value for name, (_, value) in SHARED.items()},
    )
    learner = make_learner(config, env)
    start = time.perf_counter()
    final, _ = jax.block_until_ready(jax.jit(train_from_learner(learner))(jax.random.key(seed)))
    seconds = time.perf_counter() - start
    steps = learner.num_chunks * learner.env_steps_per_chunk
    return learner.policy, learner.policy_params(final), seconds, steps, dataclasses.asdict(config)


def brax_network_factory(networks: str):
    """Brax's PPO network factory: Brax's own design (``"brax"``) or ours (``"ours"``)."""
    from brax.training.agents.ppo import networks as ppo_networks  # pylint: disable=import-outside-toplevel

    from jaxcontrol.wrappers import clip_normalized_observations  # pylint: disable=import-outside-toplevel

    sizes = {"policy_hidden_layer_sizes": HIDDEN, "value_hidden_layer_sizes": HIDDEN}
    if networks == "brax":
        return functools.partial(ppo_networks.make_ppo_networks, **sizes)
    if networks != "ours":
        raise ValueError(f"networks must be 'brax' or 'ours', got {networks!r}")
    orthogonal = jax.nn.initializers.orthogonal
    return clip_normalized_observations(
        functools.partial(
            ppo_networks.make_ppo_networks,
            **sizes,
            activation=jax.numpy.tanh,
            distribution_type="normal",
            noise_std_type="log",
            init_noise_std=float(np.exp(PPOConfig.init_log_std)),
            policy_network_kernel_init_fn=orthogonal,
            policy_network_kernel_init_kwargs={"scale": np.sqrt(2.0)},
            value_network_kernel_init_fn=orthogonal,
            value_network_kernel_init_kwargs={"scale": np.sqrt(2.0)},
            mean_kernel_init_fn=orthogonal,
            mean_kernel_init_kwargs={"scale": 0.01},
        )
    )


def brax(env, steps: int, seed: int, networks: str = "brax"):
    """The same for Brax's PPO on ``BraxEnv(env)``, with ``brax_network_factory(networks)``."""
    from brax.training.agents.ppo import train as ppo  # pylint: disable=import-outside-toplevel

    from jaxcontrol.wrappers import BraxEnv  # pylint: disable=import-outside-toplevel

    kwargs = {brax_name: value for brax_name, value in SHARED.values()}
    num_envs, unroll = kwargs["num_envs"], kwargs["unroll_length"]
    factory = brax_network_factory(networks)
    braxed = BraxEnv(env)
    start = time.perf_counter()
    make_policy, params, _ = ppo.train(
        environment=braxed,
        num_timesteps=steps,
        episode_length=braxed.episode_length,
        batch_size=num_envs // NUM_MINIBATCHES,  # minibatches of batch_size x unroll transitions
        num_minibatches=NUM_MINIBATCHES,
        network_factory=factory,
        seed=seed,
        num_evals=1,
        run_evals=False,
        **kwargs,
    )
    jax.block_until_ready(params)
    seconds = time.perf_counter() - start
    spec = env.observation_spec()
    deterministic = make_policy(params, deterministic=True)

    def policy(_, observation):
        action, _ = deterministic(flatten_observation(observation, spec), jax.random.key(0))
        return action

    per_step = num_envs * unroll
    config = {**kwargs, "hidden": HIDDEN, "networks": networks}
    return policy, None, seconds, -(-steps // per_step) * per_step, config


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="cartpole-balance")
    p.add_argument("--steps", type=float, default=1e6)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--learners", nargs="+", default=["ours", "brax"], choices=["ours", "brax"])
    p.add_argument(
        "--brax-networks",
        nargs="+",
        default=["brax"],
        choices=["brax", "ours"],
        help="Brax's network design, ours, or both (one Brax run each)",
    )
    p.add_argument("--out", help="append JSON lines here")
    args = p.parse_args(argv)
    domain, task = args.env.split("-")
    env = jaxcontrol.load(domain, task)
    runs = [
        (name, functools.partial(brax, networks=n) if name == "brax" else ours)
        for name in args.learners
        for n in (args.brax_networks if name == "brax" else [None])
    ]
    for name, learner in runs:
        policy, params, seconds, steps, config = learner(env, int(args.steps), args.seed)
        returns = jax.jit(lambda p, k, policy=policy: evaluate(env, policy, p, k, args.episodes))(
            params, jax.random.key(1000 + args.seed)
        )
        result = summarize(np.asarray(returns))
        line = {
            "learner": name,
            "brax_networks": config.get("networks"),
            "env": args.env,
            "env_steps": steps,
            "train_seconds": round(seconds, 1),
            "mean_return": round(result["mean_return"], 1),
            "stderr": round(result["stderr"], 1),
            "episodes": result["episodes"],
            "seed": args.seed,
            "config": config,
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
            "device": str(jax.devices()[0]),
            "date": time.strftime("%Y-%m-%d"),
        }
        print(json.dumps(line), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
