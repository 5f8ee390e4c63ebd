"""`jaxcontrol.suite.load_vector`'s speed beside dm_control's one env and EnvPool's pool.

A dm_env-style loop as its users write it: NumPy actions in, a NumPy `TimeStep`
out, one `step` call per control step for all environments (episodes restart
inside the step). Env (control) steps per second, best of `--repeats` timings of
about `--seconds` each; actions are drawn by NumPy before the timing. Beside it:
dm_control's `suite.load` environment (one env, its own loop) and, with
`--envpool-python`, EnvPool's sync pool of the same size (`envpool_speed.py`).

  python benchmarks/suite_vector.py --tasks cheetah-run walker-walk cartpole-swingup \
      --num-envs 256 --backends mujoco mjx --envpool-python /tmp/envpool-venv/bin/python
"""

from __future__ import annotations

import argparse

import numpy as np

from jaxcontrol import suite
from jaxcontrol.registry import parse_task_id

try:  # run as a script: benchmarks/ is on sys.path
    from cpu_backend import _figure, dm_control, envpool
    from envpool_speed import best
except ImportError:
    from benchmarks.cpu_backend import _figure, dm_control, envpool
    from benchmarks.envpool_speed import best


def vector(task, backend: str, num_envs: int, seconds: float, repeats: int) -> float:
    """Env steps/s of `load_vector(...).step` over `num_envs` environments."""
    env = suite.load_vector(*task, num_envs, task_kwargs={"random": 0}, backend=backend)
    spec = env.action_spec()
    rng = np.random.default_rng(0)
    pool = list(rng.uniform(spec.minimum, spec.maximum, (64, num_envs, *spec.shape)))
    env.reset()
    count = iter(range(1 << 62))
    return num_envs / best(lambda: env.step(pool[next(count) % len(pool)]), seconds, repeats)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["cheetah-run", "walker-walk"])
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--backends", nargs="+", default=["mujoco", "mjx"])
    parser.add_argument("--threads", type=int, default=2, help="EnvPool's threads")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--envpool-python", help="an interpreter with EnvPool installed (else no EnvPool column)"
    )
    args = parser.parse_args()
    columns = [f"load_vector, {b}" for b in args.backends]
    print(f"| task | envs | {' | '.join(columns)} | EnvPool | dm_control (1 env) |")
    print("|---|---:|" + "---:|" * (len(columns) + 2))
    for name in args.tasks:
        task = parse_task_id(name)
        ours = [vector(task, b, args.num_envs, args.seconds, args.repeats) for b in args.backends]
        pool = envpool(
            args.envpool_python, task, args.num_envs, 100, args.threads, args.seconds, args.repeats
        )
        single = dm_control(task, args.seconds)
        cells = [_figure(v) for v in (*ours, pool, single)]
        print(f"| {name} | {args.num_envs} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
