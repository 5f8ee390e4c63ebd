"""EnvPool's speed on one suite task: run by an interpreter that has EnvPool.

EnvPool pins its own dependencies, so it lives in a venv of its own
(`pip install envpool==1.2.5`); `benchmarks/cpu_backend.py --envpool-python`
runs this file there. It needs only NumPy and EnvPool, and prints env (control)
steps per second of EnvPool's sync pool: `num_envs` environments on
`num_threads` threads, uniform random actions drawn by NumPy before the timing.

  python benchmarks/envpool_speed.py CheetahRun-v1 --batch 256 --threads 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def best(call, seconds: float, repeats: int) -> float:
    """Best seconds per call: each timing repeats `call` for about `seconds`."""
    call()
    fastest = float("inf")
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while True:
            call()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        fastest = min(fastest, elapsed / n)
    return fastest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", help="EnvPool's task id, e.g. CheetahRun-v1")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=20, help="control steps per timed call")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import envpool

    env = envpool.make(
        args.task, env_type="dm", num_envs=args.batch, num_threads=args.threads, seed=0
    )
    spec = env.action_spec()
    shape = (args.steps, args.batch) + spec.shape
    actions = np.random.default_rng(0).uniform(spec.minimum, spec.maximum, shape)
    actions = actions.astype(spec.dtype)
    env.reset()

    def call():
        for a in actions:
            env.step(a)

    print(args.batch * args.steps / best(call, args.seconds, args.repeats))


if __name__ == "__main__":
    main()
