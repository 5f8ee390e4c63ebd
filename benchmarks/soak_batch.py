"""Env steps per second of the full tier's MJX soak at several shard sizes.

The soak (`jaxcontrol.parity.soak`) runs its 1024 environments in shards; on a
CPU a shard's size sets how fast it goes, because MJX's solver loops under
`vmap` until the slowest environment of the batch converges. This times the
soak's own jitted scan (`parity.soaks._soak`) for `--steps` steps from reset at each
`--batch-sizes`, in one process, so that the ratios are comparable on a shared
machine. Compile time is reported beside each.

Example (one core):
  taskset -c 1 python benchmarks/soak_batch.py --task stacker-stack_2 \
      --batch-sizes 16 32 64 128 --steps 32
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--task", required=True, help="DOMAIN-TASK")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 32, 64, 128])
    p.add_argument("--steps", type=int, default=32, help="control steps from reset")
    args = p.parse_args()
    os.environ.setdefault("MUJOCO_GL", "disable")

    import jaxcontrol
    from jaxcontrol import reference

    with reference.precision(False):  # float32, as the soak runs
        env = jaxcontrol.load(*args.task.split("-", 1))
        measure(env, args)


def measure(env, args: argparse.Namespace) -> None:
    """Prints one Markdown row per batch size."""
    import jax

    from jaxcontrol import parity

    print("| task | batch | steps | env steps/s | compile (s) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for batch in args.batch_sizes:
        # One chunk of all the steps: the timed call is the scan alone, after its reset.
        run = parity.soaks._soak(env, batch, args.steps, every=args.steps)  # pylint: disable=protected-access
        carry, action_keys = jax.block_until_ready(run.start(jax.random.key(1)))
        start = time.perf_counter()
        compiled = run.advance.lower(carry, action_keys).compile()
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        jax.block_until_ready(compiled(carry, action_keys))
        rate = batch * args.steps / (time.perf_counter() - start)
        print(
            f"| {args.task} | {batch} | {args.steps} | {rate:,.1f} | {compile_s:.0f} |", flush=True
        )


if __name__ == "__main__":
    main()
