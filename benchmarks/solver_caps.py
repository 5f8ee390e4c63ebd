"""Solver iteration caps that keep MJX as close to C MuJoCo as dm_control's own settings.

MJX's constraint solver runs, under vmap, until the slowest environment of the
batch converges (`opt.iterations`), and each iteration runs a line search
whose `opt.ls_iterations` steps are all executed under vmap. Lower caps are a
free speed-up only while they do not change the trajectories. For one task
this script measures, for each (iterations, ls_iterations) setting:

  * the float64 error of stock `mjx.step` against C MuJoCo (`mj_step`, the
    engine dm_control runs) over `--rollouts` rollouts of `--steps` control
    steps from dm_control's own resets, under the same uniform random actions:
    the worst qpos difference after 10, 100 and all steps;
  * the float32 throughput of `jax.vmap(mjx.step)` at `--batch`.

A setting passes when its error is within 2x that of dm_control's settings at
every horizon (the worst over the rollouts). At horizons where dm_control's
own settings already drift far from C (chaotic tasks), that comparison says
little, which is why the short horizons are reported too.

Example:
  python benchmarks/solver_caps.py cheetah-run --settings 100/50 16/16 8/16 8/8 4/8 2/4
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

import jaxcontrol
from jaxcontrol import equivalence
from jaxcontrol.mjcf import compat

HORIZONS = (10, 100)


def reference_rollouts(env, rollouts: int, steps: int, seed: int):
    """dm_control reset states, actions and C MuJoCo's qpos after every control step."""
    dm_env = equivalence.reference_env(env.domain, env.task_name, seed)
    spec = dm_env.action_spec()
    rng = np.random.RandomState(seed)
    starts, actions, qpos = [], [], []
    model = compat.to_mjx_compatible(env.mj_model)
    data = mujoco.MjData(model)
    for _ in range(rollouts):
        dm_env.reset()
        start = equivalence.DmState.capture(env, dm_env)
        acts = rng.uniform(spec.minimum, spec.maximum, (steps,) + spec.shape)
        for name, value in start.model_fields.items():
            getattr(model, name)[:] = value
        mujoco.mj_resetData(model, data)
        data.qpos[:], data.qvel[:], data.time = start.qpos, start.qvel, start.time
        if start.act.size:
            data.act[:] = start.act
        trajectory = []
        for a in acts:
            data.ctrl[:] = a
            mujoco.mj_step(model, data, env.n_sub_steps)
            trajectory.append(np.array(data.qpos))
        starts.append(start)
        actions.append(acts)
        qpos.append(np.stack(trajectory))
    return starts, np.stack(actions), np.stack(qpos)


def capped_model(env, iterations: int, ls_iterations: int, model_fields=None) -> mjx.Model:
    mj_model = compat.to_mjx_compatible(env.mj_model)
    for name, value in (model_fields or {}).items():
        getattr(mj_model, name)[:] = value
    mj_model.opt.iterations, mj_model.opt.ls_iterations = iterations, ls_iterations
    return compat.put_model(mj_model)


def mjx_rollouts(env, model, starts, actions) -> np.ndarray:
    """Stock mjx.step from each start under its actions (float64); qpos per step."""
    mj_model = compat.to_mjx_compatible(env.mj_model)
    blank = compat.put_data(mj_model, mujoco.MjData(mj_model))
    blank = jax.jit(mjx.forward)(model, blank)  # derived fields in mjx.step's own dtypes
    stacked = jax.tree.map(lambda *xs: np.stack(xs), *starts)
    leaves = [n for n in env.task.episode_model_fields if hasattr(model, n)]

    @jax.jit
    @jax.vmap
    def run(start, acts):
        fields = {n: start.model_fields[n] for n in leaves}
        m = model.replace(**fields) if fields else model
        data = blank.replace(qpos=start.qpos, qvel=start.qvel, time=start.time)

        def body(d, a):
            d = d.replace(ctrl=a)
            d, _ = jax.lax.scan(lambda d, _: (mjx.step(m, d), None), d, None, env.n_sub_steps)
            return d, d.qpos

        return jax.lax.scan(body, data, acts)[1]

    return np.asarray(run(stacked, jnp.asarray(actions)))


def throughput(env, model, batch: int, steps: int, repeats: int = 3) -> float:
    """Float32 control steps per second of vmapped stock mjx.step with `model`'s settings."""
    mj_model = compat.to_mjx_compatible(env.mj_model)
    data = compat.put_data(mj_model, mujoco.MjData(mj_model))
    spec = env.action_spec()
    low, high = np.clip(spec.minimum, -1, 1), np.clip(spec.maximum, -1, 1)
    keys = jax.random.split(jax.random.key(0), batch)
    states = equivalence.batched_reset(env, keys)
    datas = jax.vmap(lambda q, v: data.replace(qpos=q, qvel=v))(states.data.qpos, states.data.qvel)
    datas = jax.jit(jax.vmap(lambda d: mjx.forward(model, d)))(datas)

    @jax.jit
    def run(datas, key):
        def body(carry, _):
            datas, key = carry
            key, sub = jax.random.split(key)
            a = jax.random.uniform(sub, (batch,) + low.shape, minval=low, maxval=high)

            def one(d, a):
                d = d.replace(ctrl=a)
                return jax.lax.scan(
                    lambda d, _: (mjx.step(model, d), None), d, None, env.n_sub_steps
                )[0]

            return (jax.vmap(one)(datas, a), key), None

        return jax.lax.scan(body, (datas, key), None, length=steps)[0]

    jax.block_until_ready(run(datas, jax.random.key(1)))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(run(datas, jax.random.key(1)))
        best = min(best, time.perf_counter() - t0)
    return batch * steps / best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", help="DOMAIN-TASK")
    parser.add_argument("--settings", nargs="+", default=["100/50", "16/16", "8/16", "8/8", "4/8"])
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--speed-steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    domain, task = args.task.split("-", 1)
    settings = [tuple(int(x) for x in s.split("/")) for s in args.settings]
    default = (None, None)
    with equivalence.precision(True):
        env = jaxcontrol.load(domain, task)
        default = (int(env.mj_model.opt.iterations), int(env.mj_model.opt.ls_iterations))
        if default not in settings:
            settings.insert(0, default)
        starts, actions, c_qpos = reference_rollouts(env, args.rollouts, args.steps, args.seed)
        errors = {}
        for it, ls in settings:
            model = capped_model(env, it, ls)
            q = mjx_rollouts(env, model, starts, actions)
            diff = np.abs(q - c_qpos).max(axis=2)  # [rollout, step]
            errors[(it, ls)] = [float(diff[:, :h].max()) for h in HORIZONS] + [float(diff.max())]
    speeds = {}
    for it, ls in settings:
        speeds[(it, ls)] = throughput(env, capped_model(env, it, ls), args.batch, args.speed_steps)
    base_err, base_speed = errors[default], speeds[default]
    print(
        f"{args.task}: {args.rollouts} rollouts x {args.steps} steps from dm_control resets, "
        f"uniform random actions; speed at batch {args.batch} (float32, CPU)"
    )
    print(
        "| iterations / ls_iterations | worst qpos diff from C after 10 / 100 / "
        f"{args.steps} steps (float64) | steps/s | speed-up | within 2x of dm_control's |"
    )
    print("|---|---|---|---|---|")
    for setting in settings:
        err = errors[setting]
        ok = all(e <= 2 * max(b, 1e-15) for e, b in zip(err, base_err))
        label = f"{setting[0]} / {setting[1]}" + (" (dm_control)" if setting == default else "")
        print(
            f"| {label} | {' / '.join(f'{e:.1e}' for e in err)} | {speeds[setting]:,.0f} | "
            f"{speeds[setting] / base_speed:.2f}x | {'yes' if ok else 'no'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
