"""The soak: random actions for 1024 environments x 1000 steps, in resumable shards."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol import soak_checkpoint
from jaxcontrol.core import Env, StepType
from jaxcontrol.parity.families import step_with_rewards
from jaxcontrol.parity.progress import Progress, TaskParts
from jaxcontrol.parity.settings import (
    SOAK_CHECKPOINT_EVERY,
    SOAK_ENVS,
    SOAK_STEPS,
    soak_parts,
    soak_shards,
)
from jaxcontrol.reference.actions import action_bounds


def soak(
    env: Env,
    num_envs: int = SOAK_ENVS,
    steps: int = SOAK_STEPS,
    shards: int | None = None,
    progress: Progress | None = None,
    checkpoint_every: int = SOAK_CHECKPOINT_EVERY,
) -> dict[str, Any]:
    """Random actions for `num_envs` x `steps` in float32, summarised inside the scan.

    Counts non-finite observations/rewards and diverged environments, keeps the
    largest |qvel| (a state can stay finite and still be flung:
    docs/design/elliptic-line-search.md), checks
    rewards lie in the task's `reward_range`, the step types and discounts
    follow dm_env (LAST with discount 1 exactly at the time limit when it fits in
    `steps`; before it, LAST only at a terminal state, with a discount below 1,
    and LAST from then on), no observation entry stays
    constant, and that a replay of a shard ends in bit-identical states
    (run-to-run determinism: same keys, same actions, same batch layout).
    The environments run in `shards` equal batches (one compile), each from its
    own key, each a resumable part; by default the task's (`settings.soak_shards`). A shard
    that stops midway resumes from its last checkpoint, taken every
    `checkpoint_every` steps (`soak_checkpoint`).

    Environments at different positions of one batch are not compared: XLA's CPU
    code (jax 0.9.2, fusion emitters off) rounds some operations differently by
    position in the batch, so two copies of one environment in one batch part
    after a few steps of a chaotic task (docs/design/jax-pin.md).
    """
    progresses = [progress or Progress(None)]
    return family_soak([env], num_envs, steps, shards, progresses, checkpoint_every)[0]


def family_soak(
    envs: Sequence[Env],
    num_envs: int = SOAK_ENVS,
    steps: int = SOAK_STEPS,
    shards: int | None = None,
    progresses: Sequence[Progress] | None = None,
    checkpoint_every: int = SOAK_CHECKPOINT_EVERY,
) -> list[dict[str, Any]]:
    """`soak` of each of `envs`, siblings of one rollout family (`families.step_with_rewards`),
    on the first one's rollout: each task's result, and the parts each task's
    `Progress` keeps, are those of a soak of its own: bit for bit where XLA compiles
    the physics alike (C MuJoCo), to rounding on MJX (tests/parity/test_parity_family.py)."""
    env, siblings = envs[0], tuple(envs[1:])
    shards = shards or soak_shards(env.domain, env.task_name)
    if num_envs % shards:
        raise ValueError(f"num_envs={num_envs} must be a multiple of shards={shards}")
    if len({soak_shards(e.domain, e.task_name) for e in envs}) > 1:
        raise ValueError("the tasks of one soak must have the same soak shards")
    parts_of = TaskParts(progresses or [Progress(None) for _ in envs])
    run = _soak(env, num_envs // shards, steps, checkpoint_every, siblings)
    names = soak_parts(shards)
    parts = [
        parts_of.part(
            name, _family_shard, run, shard, _shard_checkpoint(parts_of, name, shard, run)
        )
        for shard, name in enumerate(names[:-1])
    ]
    replay = parts_of.part(names[-1], _soak_replay, run, parts, parts_of, names[-1])
    parts_of.done()
    return [
        _soak_summary(task_env, [p[i] for p in parts], replay[i], num_envs, steps, shards)
        for i, task_env in enumerate(envs)
    ]


def _soak_summary(
    env: Env,
    parts: Sequence[dict[str, Any]],
    replay: dict[str, Any],
    num_envs: int,
    steps: int,
    shards: int,
) -> dict[str, Any]:
    """One task's soak result from its shards and its replay."""
    low, high = env.task.reward_range
    lo = {k: np.min([p["lo"][k] for p in parts], axis=0) for k in parts[0]["lo"]}
    hi = {k: np.max([p["hi"][k] for p in parts], axis=0) for k in parts[0]["hi"]}
    return {
        "envs": num_envs,
        "shards": shards,
        "steps": num_envs * steps,
        "nonfinite": sum(p["nonfinite"] for p in parts),
        "diverged": sum(p["diverged"] for p in parts),
        "reward_min": min(p["reward_min"] for p in parts),
        "reward_max": max(p["reward_max"] for p in parts),
        "rewards_in_range": bool(
            low <= min(p["reward_min"] for p in parts)
            and max(p["reward_max"] for p in parts) <= high
        ),
        "ends_by_truncation": all(p["truncation_ok"] for p in parts),
        "constant_observations": [key for key in lo if bool(np.any(lo[key] == hi[key]))],
        # The largest |qvel| of any environment at any step (parts from before it: None).
        "qvel_max": max(p["qvel_max"] for p in parts)
        if all("qvel_max" in p for p in parts)
        else None,
        # Replay parts saved before host fingerprints compared with shard 0 itself.
        "replay_identical": replay["final_digest"]
        == replay.get("reference_digest", parts[0]["final_digest"]),
        "replayed": f"shard{replay.get('shard', 0)}",
        "replay_reference": replay.get("reference", "shard0"),
    }


def _soak_replay(
    run: _Soaker, parts: Sequence[list[dict[str, Any]] | None], parts_of: TaskParts, name: str
) -> list[dict[str, Any]]:
    """A shard again, and the digest it must equal (one of each per task). Parts
    resume across machines, and float results repeat only on one host
    (`host_fingerprint`), so the replay takes the first shard that this host
    measured (for every task), all of it, in chunks of the same length, and
    compares with its saved digest; where none was (all measured elsewhere, or not
    saved yet by a run sharing the parts), it runs shard 0 twice here and compares
    the two. Its runs keep checkpoints too, but resume only from this host's."""
    here = host_fingerprint()
    mine = [
        i
        for i, part in enumerate(parts)
        if part is not None
        and all(p.get("host") == here and p.get("checkpoint_every") == run.every for p in part)
    ]
    shard = mine[0] if mine else 0
    checkpoint = _shard_checkpoint(parts_of, name, shard, run)
    out = _family_shard(run, shard, checkpoint, same_host=True)
    seconds_before = out[0].get("seconds_before", 0.0)
    if mine:
        references, how = [p["final_digest"] for p in parts[shard]], f"shard{shard}"
    else:
        second = _shard_checkpoint(parts_of, f"{name}.second", shard, run)
        again = _family_shard(run, shard, second, same_host=True)
        references, how = [a["final_digest"] for a in again], "a second replay on this host"
        seconds_before += again[0].get("seconds_before", 0.0)
    return [
        {
            "shard": shard,
            "final_digest": task_out["final_digest"],
            "reference_digest": reference,
            "reference": how,
            "host": task_out["host"],
            "seconds_before": seconds_before,  # `Progress.save` takes it out
        }
        for task_out, reference in zip(out, references)
    ]


@functools.cache
def host_fingerprint() -> str:
    """What compiled code depends on: the CPU's model and feature flags, the cores this
    process may run on, jaxlib, and the device kind. XLA:CPU vectorises for the host's
    features and splits work over a thread pool sized by the cores it may use, so the
    order of float reductions, and so the last bits of a chaotic rollout, may differ
    between CPUs and between core counts (`taskset`)."""
    import jaxlib

    try:
        with open("/proc/cpuinfo") as f:
            cpu = "".join(sorted({line for line in f if line.startswith(("model name", "flags"))}))
    except OSError:  # not Linux
        cpu = f"{platform.machine()} {platform.processor()}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    text = f"{cpu}|{cores}|{jaxlib.__version__}|{jax.devices()[0].device_kind}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _soak_shard(
    run: _Soaker,
    shard: int,
    checkpoint: soak_checkpoint.Checkpoint | None = None,
    same_host: bool = False,
) -> dict[str, Any]:
    """One shard's statistics, as JSON-ready Python values.

    With `checkpoint`, the shard saves its carry there after every `run.every` steps,
    and resumes from what is saved (only what this host saved, if `same_host`: a
    replay). A shard resumed from another host's carry names both hosts (`host`), so
    no replay takes it for this host's own."""
    carry, action_keys = run.start(jax.random.fold_in(jax.random.key(1), shard))
    here = host_fingerprint()
    done, hosts, before = 0, {here}, 0.0
    saved = None if checkpoint is None else checkpoint.load(carry)
    if saved is not None and not (same_host and saved[1]["hosts"] != [here]):
        carry, info = saved
        done, hosts, before = info["done"], {here, *info["hosts"]}, info["seconds"]
    resumed_at = done
    start = time.perf_counter()
    while done < run.steps:
        # Computed before the clock is read: a call returns before its chunk is done.
        carry = jax.block_until_ready(run.advance(carry, action_keys[done : done + run.every]))
        done += run.every
        if checkpoint is not None and done < run.steps:
            spent = round(before + time.perf_counter() - start, 1)
            checkpoint.save(carry, {"done": done, "hosts": sorted(hosts), "seconds": spent})
    states, stats = carry
    stats = jax.tree.map(np.asarray, stats)
    siblings = {k: stats.pop(k) for k in _SIBLING_STATS if k in stats}
    out = {k: v.item() for k, v in stats.items() if k not in ("lo", "hi")}
    out["final_digest"] = _final_digest(states, states.reward)
    out["host"] = "+".join(sorted(hosts))
    out["checkpoint_every"] = run.every
    if resumed_at:
        out["seconds_before"] = before  # `Progress.part` adds it to the part's seconds
    out.update({k: {name: x.tolist() for name, x in stats[k].items()} for k in ("lo", "hi")})
    if siblings:  # what differs for each sibling: its reward's statistics
        out["siblings"] = [
            {
                "nonfinite": siblings["sibling_nonfinite"][i].item(),
                "reward_min": siblings["sibling_reward_min"][i].item(),
                "reward_max": siblings["sibling_reward_max"][i].item(),
                "final_digest": _final_digest(states, siblings["sibling_reward"][i]),
            }
            for i in range(len(run.siblings))
        ]
    return out


def _final_digest(states, reward) -> str:
    """The hash of a batch's final qpos, qvel, observations and `reward`."""
    digest = hashlib.sha256()
    final = (states.data.qpos, states.data.qvel, states.observation, reward)
    for leaf in jax.tree.leaves(jax.tree.map(np.asarray, final)):
        digest.update(np.ascontiguousarray(leaf).tobytes())
    return digest.hexdigest()


def _family_shard(run: _Soaker, shard: int, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """`_soak_shard` as one result per task: the first task's, then each sibling's."""
    out = _soak_shard(run, shard, *args, **kwargs)
    siblings = out.pop("siblings", [])
    return [out, *({**out, **sibling} for sibling in siblings)]


def _shard_checkpoint(parts_of: TaskParts, name: str, shard: int, run: _Soaker):
    """Where part `name` (shard `shard`) keeps its carry, tied to its sizes (and to
    the siblings whose statistics it carries)."""
    sizes = {"shard": shard, "envs": run.num_envs, "steps": run.steps, "every": run.every}
    if run.siblings:
        sizes["siblings"] = [f"{e.domain}-{e.task_name}" for e in run.siblings]
    return parts_of.checkpoint(name, **sizes)


class _Soaker(NamedTuple):
    """One batch's soak as two jitted pieces: `start(key) -> (carry, action_keys)` and
    `advance(carry, action_keys[i : i + every]) -> carry`; the carry is the batched
    states and the running statistics."""

    start: Callable[[jax.Array], tuple[Any, jax.Array]]
    advance: Callable[[Any, jax.Array], Any]
    num_envs: int
    steps: int
    every: int
    siblings: tuple[Env, ...] = ()


# A family's soak carries these for its siblings (one row each) beside the first task's.
_SIBLING_STATS = ("sibling_nonfinite", "sibling_reward_min", "sibling_reward_max", "sibling_reward")


@functools.cache
def _soak(
    env: Env,
    num_envs: int,
    steps: int,
    every: int = SOAK_CHECKPOINT_EVERY,
    siblings: tuple[Env, ...] = (),
) -> _Soaker:
    """The soak of one batch of `num_envs` for `steps`, advanced `every` steps at a
    time (all at once where `every` does not divide `steps`); one per env and size,
    so that soaks of the same shape share one compile. With `siblings` (of `env`'s
    rollout family), the carry holds their rewards' statistics too (`_SIBLING_STATS`)."""
    spec = env.action_spec()
    low, high = action_bounds(spec)
    limit = env.episode_length

    @jax.jit
    def start(key):
        reset_key, action_key = jax.random.split(key)
        states = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))
        obs = states.observation
        stats = {
            "nonfinite": jnp.int32(0),
            "diverged": jnp.int32(0),
            "reward_min": jnp.float32(jnp.inf),
            "reward_max": jnp.float32(-jnp.inf),
            "truncation_ok": jnp.bool_(True),
            "qvel_max": jnp.max(jnp.abs(states.data.qvel)),
            "lo": jax.tree.map(lambda x: x.min(0), obs),
            "hi": jax.tree.map(lambda x: x.max(0), obs),
        }
        if siblings:
            count = len(siblings)
            stats["sibling_nonfinite"] = jnp.zeros(count, jnp.int32)
            stats["sibling_reward_min"] = jnp.full(count, jnp.inf, jnp.float32)
            stats["sibling_reward_max"] = jnp.full(count, -jnp.inf, jnp.float32)
            stats["sibling_reward"] = jnp.zeros((count, num_envs), states.reward.dtype)
        return (states, stats), jax.random.split(action_key, steps)

    def step(states, action):
        if not siblings:  # the program that earlier shards and checkpoints came from
            return jax.vmap(env.step)(states, action), None
        stepped, rewards = jax.vmap(lambda s, a: step_with_rewards(env, s, a, siblings))(
            states, action
        )
        return stepped, rewards.T  # (sibling, environment)

    def body(carry, action_key):
        states, stats = carry
        action = jax.random.uniform(action_key, (num_envs,) + spec.shape, minval=low, maxval=high)
        ended = states.last()
        states, sibling_reward = step(states, action)
        finite_obs = jnp.ones(num_envs, bool)
        for value in states.observation.values():
            finite_obs &= jnp.all(jnp.isfinite(value.reshape(value.shape[0], -1)), axis=1)
        finite = jnp.isfinite(states.reward) & finite_obs
        obs = states.observation
        sibling_stats = {}
        if siblings:
            sibling_finite = jnp.isfinite(sibling_reward) & finite_obs
            sibling_stats = {
                "sibling_nonfinite": stats["sibling_nonfinite"] + jnp.sum(~sibling_finite, 1),
                "sibling_reward_min": jnp.minimum(
                    stats["sibling_reward_min"], sibling_reward.min(1)
                ),
                "sibling_reward_max": jnp.maximum(
                    stats["sibling_reward_max"], sibling_reward.max(1)
                ),
                "sibling_reward": sibling_reward,
            }
        stats = {
            **sibling_stats,
            "nonfinite": stats["nonfinite"] + jnp.sum(~finite),
            "diverged": stats["diverged"] + jnp.sum(states.diverged),
            "reward_min": jnp.minimum(stats["reward_min"], states.reward.min()),
            "reward_max": jnp.maximum(stats["reward_max"], states.reward.max()),
            "truncation_ok": stats["truncation_ok"] & _step_types_ok(states, ended, limit),
            "qvel_max": jnp.maximum(stats["qvel_max"], jnp.max(jnp.abs(states.data.qvel))),
            "lo": jax.tree.map(lambda lo, x: jnp.minimum(lo, x.min(0)), stats["lo"], obs),
            "hi": jax.tree.map(lambda hi, x: jnp.maximum(hi, x.max(0)), stats["hi"], obs),
        }
        return (states, stats), None

    @jax.jit
    def advance(carry, action_keys):
        return jax.lax.scan(body, carry, action_keys)[0]

    every = every if steps % every == 0 else steps
    return _Soaker(start, advance, num_envs, steps, every, siblings)


def _step_types_ok(states, ended: jax.Array, limit: int | None) -> jax.Array:
    """dm_env's step types and discounts for a batch just stepped (`ended`: LAST before).

    At the time limit: LAST with discount 1. Before it: MID with discount 1, or
    LAST at a terminal state (discount below 1), and LAST ever after with the
    same discount (`Env.step`); a task without a time limit has no truncation.
    """
    last = states.step_type == StepType.LAST
    truncated = jnp.zeros_like(last) if limit is None else (states.step >= limit) & ~ended
    terminal = states.discount < 1
    ok = jnp.where(truncated, last & (states.discount == 1), last == (ended | terminal))
    return jnp.all(ok)
