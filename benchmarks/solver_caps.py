"""Solver iteration caps that keep MJX as close to C MuJoCo as dm_control's own settings.

MJX's constraint solver runs, under vmap, until the slowest environment of the
batch converges (`opt.iterations`), and each iteration runs a line search
whose `opt.ls_iterations` steps are all executed under vmap. Lower caps are a
free speed-up only while they do not change the trajectories. For one task
this script measures, for each (iterations, ls_iterations) setting:

  * the float64 error of stock `mjx.step` against C MuJoCo (`mj_step`, the
    engine dm_control runs) over `--rollouts` rollouts of `--steps` control
    steps from dm_control's own resets, under the same uniform random actions:
    the worst qpos difference after 10, 100 and all steps, and from stock
    `mjx.step` at dm_control's settings over all steps;
  * the float32 throughput of `jax.vmap(mjx.step)` at `--batch`, the timed
    calls of all settings alternating (as in benchmarks/throughput.py).

A setting passes when its error is within 2x that of dm_control's settings at
every horizon (the worst over the rollouts). At horizons where dm_control's
own settings already drift far from C (chaotic tasks), that comparison says
little, which is why the short horizons are reported too.

The two parts can run apart (`--part errors`, then `--part speed` on a quiet
machine); `--json` keeps what each part measured, and the table is printed
once both are there. MJX's rollouts at dm_control's settings, the costliest
run, are kept beside it (`<json>.default.npz`), so that a later grid of
settings for the same task skips them.

Example:
  python benchmarks/solver_caps.py cheetah-run --settings 16/16 8/16 8/8 4/8 2/4 \
      --json /tmp/caps-cheetah.json
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import sys

os.environ.setdefault("MUJOCO_GL", "disable")

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import throughput as tp  # benchmarks/throughput.py, beside this script
from mujoco import mjx

import jaxcontrol
from jaxcontrol import physics as physics_lib
from jaxcontrol import reference
from jaxcontrol.mjcf import compat

HORIZONS = (10, 100)


def reference_rollouts(env, rollouts: int, steps: int, seed: int):
    """dm_control reset states, actions and C MuJoCo's qpos after every control step."""
    dm_env = reference.reference_env(env.domain, env.task_name, seed)
    spec = dm_env.action_spec()
    rng = np.random.RandomState(seed)
    starts, actions, qpos = [], [], []
    model = compat.to_mjx_compatible(env.mj_model)
    data = mujoco.MjData(model)
    for _ in range(rollouts):
        dm_env.reset()
        start = reference.DmState.capture(env, dm_env)
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
    # Fields that MJX keeps static (finger's target `site_size`) do not move the
    # bodies; only those the step applies are set per rollout.
    leaves = [n for n in env.task.episode_model_fields if n in physics_lib.APPLIED_MODEL_FIELDS]

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


def speeds(env, models: dict, batch: int, repeats: int, seconds: float) -> dict[str, float]:
    """Float32 control steps per second of vmapped stock mjx.step under each model.

    The same loop as benchmarks/throughput.py's raw MJX, from our resets; the
    timed calls of all settings alternate, so that load on a shared machine hits
    them alike and their ratios stay meaningful."""
    spec = env.action_spec()
    low, high = np.clip(spec.minimum, -1, 1), np.clip(spec.maximum, -1, 1)
    key = jax.random.key(0)
    data = jax.jit(jax.vmap(env.reset))(jax.random.split(key, batch)).data
    steps = max(1, 4096 // batch)
    calls = {}
    for label, model in models.items():
        run = tp.make_rollout(tp.raw_step_fn(env, model), batch, steps, low, high)
        calls[label] = functools.partial(run, data, key)
    times = tp.time_interleaved(calls, repeats, seconds)
    return {label: batch * steps / best for label, (_, best) in times.items()}


def _label(setting) -> str:
    return f"{setting[0]}/{setting[1]}"


def _load(path) -> dict:
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def _default_key(config: dict) -> str:
    """What MJX's rollouts at dm_control's settings depend on: the run and the versions."""
    versions = {"jax": jax.__version__, "mujoco": mujoco.__version__}
    return json.dumps(dict(config, **versions), sort_keys=True)


def _load_default_qpos(path, key: str):
    """The kept rollouts at dm_control's settings (the costliest run), or None."""
    if path and os.path.exists(path):
        with np.load(path) as f:
            if str(f["key"]) == key:
                return f["qpos"]
    return None


def print_table(result: dict) -> None:
    """The Markdown table of a result holding both parts."""
    default, errors, speeds = result["default"], result["errors"], result["speeds"]
    base_err, base_speed = errors[default], speeds[default]
    print(
        f"{result['task']}: {result['rollouts']} rollouts x {result['steps']} steps from "
        f"dm_control resets, uniform random actions; speed at batch {result['batch']} "
        "(float32, CPU)"
    )
    print(
        "| iterations / ls_iterations | worst qpos diff from C after 10 / 100 / "
        f"{result['steps']} steps (float64) | from MJX at dm_control's settings | steps/s | "
        "speed-up | within 2x of dm_control's |"
    )
    print("|---|---|---|---|---|---|")
    for label, err in errors.items():
        ok = all(e <= 2 * max(b, 1e-15) for e, b in zip(err, base_err))
        name = label.replace("/", " / ") + (" (dm_control)" if label == default else "")
        speed = speeds.get(label, float("nan"))
        print(
            f"| {name} | {' / '.join(f'{e:.1e}' for e in err)} | "
            f"{result['from_default'][label]:.1e} | {speed:,.0f} | "
            f"{speed / base_speed:.2f}x | {'yes' if ok else 'no'} |"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", help="DOMAIN-TASK")
    parser.add_argument("--settings", nargs="+", default=["16/16", "8/16", "8/8", "4/8", "2/4"])
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per setting")
    parser.add_argument("--seconds", type=float, default=1.0, help="aim of each timed call")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--part", choices=("errors", "speed", "both"), default="both")
    parser.add_argument("--json", help="read and extend the measurements kept here")
    args = parser.parse_args(argv)
    domain, task = args.task.split("-", 1)
    settings = [tuple(int(x) for x in s.split("/")) for s in args.settings]
    result = _load(args.json)
    config = {"task": args.task, "rollouts": args.rollouts, "steps": args.steps, "seed": args.seed}
    if any(result.get(k) != v for k, v in config.items()):
        result = dict(config, errors={}, from_default={}, speeds={})
    with reference.precision(True):
        env = jaxcontrol.load(domain, task)
        default = (int(env.mj_model.opt.iterations), int(env.mj_model.opt.ls_iterations))
        settings = [default] + [s for s in settings if s != default]
        result["default"] = _label(default)
        if args.part in ("errors", "both"):
            starts, actions, c_qpos = reference_rollouts(env, args.rollouts, args.steps, args.seed)
            kept, key = args.json and args.json + ".default.npz", _default_key(config)
            q_default = _load_default_qpos(kept, key)
            for setting in settings:
                if setting == default and q_default is not None:
                    q = q_default
                else:
                    q = mjx_rollouts(env, capped_model(env, *setting), starts, actions)
                if setting == default and q_default is None:
                    q_default = q
                    if kept:
                        np.savez(kept, key=key, qpos=q)
                diff = np.abs(q - c_qpos).max(axis=2)  # [rollout, step]
                err = [float(diff[:, :h].max()) for h in HORIZONS] + [float(diff.max())]
                result["errors"][_label(setting)] = err
                result["from_default"][_label(setting)] = float(np.abs(q - q_default).max())
                print(f"{args.task} {_label(setting)}: error {err}", flush=True)
    if args.part in ("speed", "both"):
        env = jaxcontrol.load(domain, task)
        result["batch"] = args.batch
        models = {_label(s): capped_model(env, *s) for s in settings}
        result["speeds"] = speeds(env, models, args.batch, args.repeats, args.seconds)
        for label, speed in result["speeds"].items():
            print(f"{args.task} {label}: {speed:,.0f} steps/s", flush=True)
    result["date"] = datetime.date.today().isoformat()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if result["errors"] and result.get("speeds") and result["default"] in result["speeds"]:
        print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
