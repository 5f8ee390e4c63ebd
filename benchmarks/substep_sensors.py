"""Sensors only where a control step reads them: the C backend against plain `mj_step`.

The C backend's control step (`cpu_physics.Engine`) runs every substep but the last
with MuJoCo's sensors disabled: sensors feed nothing back into the dynamics, and an
observation reads only the last substep's acceleration-stage sensors and the other
sensors of the final `mj_step1` stages. `Engine(..., substep_sensors=True)` computes
them at every substep instead, as a plain `mj_step` loop (and dm_control) does. For
each task, in one process and on one thread, this script:

* steps the same states through both engines and checks that the states (warm start
  included), sensordata and poses are equal, bit for bit, at every control step;
* times both, alternating: environment (control) steps per second, the best of
  `--repeats` timings of `--steps` control steps each.

States: `--episodes` dm_control resets of the task (each with its own per-episode
model fields, such as quadruped-escape's terrain) tiled to `--batch` environments,
under uniform random controls in the actuators' ranges.

Example:
  python benchmarks/substep_sensors.py --tasks all
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("MUJOCO_GL", "osmesa")  # dm_control's quadruped-escape renders at reset

import mujoco
import numpy as np

import jaxcontrol
from jaxcontrol import cpu_physics, reference

try:  # run as a script: benchmarks/ is on sys.path
    from throughput import expand_tasks, split_name
except ImportError:
    from benchmarks.throughput import expand_tasks, split_name


def start(name: str, episodes: int, batch: int):
    """(engine arguments, time, per-environment model fields, inputs) from dm_control resets."""
    env = jaxcontrol.load(*split_name(name), backend="mujoco")
    captured = []
    for seed in range(episodes):
        dm_env = reference.reference_env(*split_name(name), seed=seed)
        dm_env.reset()
        captured.append(reference.DmState.capture(env, dm_env))
    tile = lambda xs: np.stack([xs[i % episodes] for i in range(batch)])
    fields = {k: tile([c.model_fields[k] for c in captured]) for k in captured[0].model_fields}
    model = env.mj_model
    inputs = {
        "qpos": tile([c.qpos for c in captured]),
        "qvel": tile([c.qvel for c in captured]),
        "act": tile([c.act for c in captured]),
        "qacc_warmstart": tile([c.warmstart for c in captured]),
        "ctrl": np.zeros((batch, model.nu)),
        "qfrc_applied": np.zeros((batch, model.nv)),
        "xfrc_applied": np.zeros((batch, model.nbody, 6)),
    }
    return env, np.zeros(batch), fields, inputs


def controls(model: mujoco.MjModel, batch: int, steps: int, seed: int) -> np.ndarray:
    """[steps, batch, nu] uniform in each actuator's control range ([-1, 1] if unlimited)."""
    low, high = -np.ones(model.nu), np.ones(model.nu)
    limited = model.actuator_ctrllimited.astype(bool)
    low[limited], high[limited] = model.actuator_ctrlrange[limited].T
    return np.random.default_rng(seed).uniform(low, high, (steps, batch, model.nu))


def run(engine, time0, fields, inputs, ctrls, check=None):
    """Steps `engine` through `ctrls`; returns the outputs of every step (or compares them)."""
    t, state, outputs = time0, dict(inputs), []
    for i, ctrl in enumerate(ctrls):
        state["ctrl"] = ctrl
        t, out = engine.step(t, fields, state)
        if check is not None:
            for key, value in out.items():
                if not np.array_equal(value, check[i][key], equal_nan=True):
                    raise AssertionError(f"step {i}: {key} differs")
        else:
            outputs.append(out)
        state.update({k: out[k] for k in cpu_physics._STATE_OUT[1:]})
    return outputs


def measure(name: str, args: argparse.Namespace) -> dict:
    env, time0, fields, inputs = start(name, args.episodes, args.batch)
    model = env.mj_model
    ctrls = controls(model, args.batch, args.steps, args.seed)
    engines = {
        flag: cpu_physics.Engine(model, env.n_sub_steps, threads=1, substep_sensors=flag)
        for flag in (True, False)
    }
    reference = run(engines[True], time0, fields, inputs, ctrls)
    run(engines[False], time0, fields, inputs, ctrls, check=reference)  # raises if any bit differs
    best = dict.fromkeys(engines, 0.0)
    for _ in range(args.repeats):
        for flag, engine in engines.items():
            begin = time.perf_counter()
            run(engine, time0, fields, inputs, ctrls, check=reference)
            best[flag] = max(best[flag], args.batch * args.steps / (time.perf_counter() - begin))
    return {
        "task": name,
        "substeps": env.n_sub_steps,
        "sensors": model.nsensor,
        "rangefinders": int(np.sum(model.sensor_type == mujoco.mjtSensor.mjSENS_RANGEFINDER)),
        "every substep": best[True],
        "last substep": best[False],
    }


def to_markdown(rows: list[dict]) -> str:
    lines = [
        (
            "| task | substeps | sensors (rangefinders) | sensors every substep | "
            "only where read (ours) | speed-up | bits |"
        ),
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['substeps']} | {r['sensors']} ({r['rangefinders']}) | "
            f"{r['every substep']:,.0f} | {r['last substep']:,.0f} | "
            f"{r['last substep'] / r['every substep']:.2f}x | equal |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["all"], help="DOMAIN-TASK ids or 'all'")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--episodes", type=int, default=4, help="dm_control resets, tiled")
    parser.add_argument("--steps", type=int, default=20, help="control steps per timing")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = []
    for name in expand_tasks(args.tasks):
        rows.append(measure(name, args))
        r = rows[-1]
        print(
            f"{name}: {r['every substep']:,.0f} -> {r['last substep']:,.0f} env steps/s",
            file=sys.stderr,
            flush=True,
        )
    print(to_markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
