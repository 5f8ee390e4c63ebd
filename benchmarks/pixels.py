"""Pixel observations: environment steps per second, in one run, three ways.

  * state: our `jax.jit(jax.vmap(env.step))` without pixels;
  * pixels: the same with `wrappers.Pixels` (84x84, camera 0, pure JAX);
  * dm_control: one environment's `step` plus `physics.render(84, 84)`, in a loop
    (OpenGL through MUJOCO_GL; osmesa on a CPU machine). Where dm-control is not
    installed, C MuJoCo's `mj_step` plus `mujoco.Renderer` stand in for it.

    python benchmarks/pixels.py --tasks cartpole-balance cheetah-run --batch-sizes 16 64 256
    python benchmarks/pixels.py --fidelity --markdown RENDERING-table.md   # every task's fidelity

Writes a markdown table (and prints it). Fidelity mode runs
`jaxcontrol.parity.fidelity.measure` on each task instead.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

os.environ.setdefault("MUJOCO_GL", "osmesa")

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

import jaxcontrol
from jaxcontrol import reference
from jaxcontrol.wrappers import Pixels


def _rate(step, states, actions, batch, seconds):
    states = jax.block_until_ready(step(states, actions))  # compile
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        states = step(states, actions)
        calls += 1
    jax.block_until_ready(states)
    return calls * batch / (time.perf_counter() - start)


def _ours(env, batch, seconds):
    keys = jax.random.split(jax.random.key(0), batch)
    states = jax.jit(jax.vmap(env.reset))(keys)
    actions = jnp.zeros((batch, *env.action_spec().shape))
    return _rate(jax.jit(jax.vmap(env.step)), states, actions, batch, seconds)


def _mujoco_renderer(env, seconds, size=84):
    """One C MuJoCo env: `mj_step` x n_sub_steps plus `mujoco.Renderer` (where no dm-control)."""
    model = env.mj_model
    data = mujoco.MjData(model)
    renderer = mujoco.Renderer(model, size, size)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        mujoco.mj_step(model, data, env.n_sub_steps)
        renderer.update_scene(data, camera=0)
        renderer.render()
        steps += 1
    renderer.close()
    return steps / (time.perf_counter() - start)


def _dm_control(domain, task, seconds, size=84):
    try:
        dm_env = reference.reference_env(domain, task, seed=0)
    except ImportError:  # e.g. on a GPU machine without dm-control
        return _mujoco_renderer(jaxcontrol.load(domain, task), seconds, size)
    spec = dm_env.action_spec()
    action = np.zeros(spec.shape)
    dm_env.reset()
    dm_env.physics.render(size, size, camera_id=0)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if dm_env.step(action).last():
            dm_env.reset()
        dm_env.physics.render(size, size, camera_id=0)
        steps += 1
    rate = steps / (time.perf_counter() - start)
    dm_env.close()
    return rate


def speed(tasks, batch_sizes, seconds):
    rows = []
    for name in tasks:
        domain, task = name.split("-")
        env = jaxcontrol.load(domain, task)
        pixels = Pixels(env)
        dm = _dm_control(domain, task, seconds)
        for batch in batch_sizes:
            state = _ours(env, batch, seconds)
            pix = _ours(pixels, batch, seconds)
            rows.append((name, batch, state, pix, dm))
            print(
                f"{name} batch {batch}: state {state:,.0f}/s  pixels {pix:,.0f}/s  "
                f"dm_control+render {dm:,.0f}/s",
                flush=True,
            )
        jax.clear_caches()
    lines = [
        "| task | batch | state-only steps/s | pixel steps/s | pixels / state | dm_control step + render(84, 84) steps/s | pixels / dm_control |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, batch, state, pix, dm in rows:
        lines.append(
            f"| {name} | {batch} | {state:,.0f} | {pix:,.0f} | {pix / state:.3f} | {dm:,.0f} | {pix / dm:.1f}x |"
        )
    return "\n".join(lines)


def fidelity(tasks, n_states):
    from jaxcontrol.parity import fidelity as fidelity_lib

    lines = [
        "| task | segmentation agreement, worst state | mean | RGB mean abs. difference (0-255) | worst state |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in tasks:
        env = jaxcontrol.load(*name.split("-"))
        r = fidelity_lib.measure(env, n_states=n_states)
        line = (
            f"| {name} | {100 * r['segmentation']:.2f} % | {100 * r['segmentation_mean']:.2f} % "
            f"| {r['rgb_mad']:.1f} | {r['rgb_mad_worst']:.1f} |"
        )
        print(line, flush=True)
        lines.append(line)
        jax.clear_caches()
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=None, help="DOMAIN-TASK ... (default: see mode)")
    p.add_argument("--batch-sizes", nargs="+", type=int, default=[16, 64, 256])
    p.add_argument("--seconds", type=float, default=3.0, help="per timing")
    p.add_argument("--fidelity", action="store_true", help="measure fidelity instead of speed")
    p.add_argument("--states", type=int, default=8, help="dm_control states per task (fidelity)")
    p.add_argument("--markdown", default=None, help="also write the table here")
    args = p.parse_args(argv)
    every = [f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS]
    if args.fidelity:
        table = fidelity(args.tasks or every, args.states)
    else:
        table = speed(
            args.tasks or ["cartpole-balance", "cheetah-run"], args.batch_sizes, args.seconds
        )
    header = (
        f"{time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, jax {jax.__version__} ({jax.default_backend()}), "
        f"MUJOCO_GL={os.environ.get('MUJOCO_GL')}; `python {' '.join(sys.argv)}`"
    )
    print(header)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(header + "\n\n" + table + "\n")


if __name__ == "__main__":
    main()
