"""The pixel encoder's gradient, outside and inside a rolled loop, per convolution method.

A learner takes its gradient steps inside ``lax.scan`` (the chunk's loop over
iterations, and the iteration's loop over gradient steps). On the CPU, XLA's
convolution gradient is far slower there than in a plain jitted call; the
patch product (``Conv3x3(patches=True)``, the CPU default) is not. This prints
milliseconds per gradient step of the suite paper's encoder on a batch of
84x84x9 uint8 stacks, for both methods:

    python benchmarks/pixel_encoder.py --batch-sizes 64 256
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol.agents.common import networks


def _ms_per_step(fn, *args, steps: int, repeats: int) -> float:
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / repeats / steps * 1e3


def measure(batch: int, steps: int = 4, repeats: int = 2) -> dict:
    """ms per encoder gradient step: {method: {"plain": ..., "in_scan": ...}}."""
    pixels = jnp.asarray(np.random.RandomState(0).randint(0, 256, (batch, 84, 84, 9)), jnp.uint8)
    out = {}
    for patches in (False, True):
        encoder = networks.PixelEncoder(patches=patches)
        params = encoder.init(jax.random.key(0), pixels[:1])

        def grad(p, x, encoder=encoder):
            return jax.grad(lambda q: jnp.sum(encoder.apply(q, x) ** 2))(p)

        def descend(p, x, grad=grad):
            # Each step depends on the last (as an optimiser's do), so none is shared.
            def body(q, _):
                return jax.tree.map(lambda a, g: a - 1e-6 * g, q, grad(q, x)), None

            return jax.lax.scan(body, p, None, length=steps)[0]

        name = "patch product" if patches else "XLA convolution"
        out[name] = {
            "plain": _ms_per_step(jax.jit(grad), params, pixels, steps=1, repeats=repeats),
            "in_scan": _ms_per_step(jax.jit(descend), params, pixels, steps=steps, repeats=repeats),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64])
    parser.add_argument("--steps", type=int, default=4, help="gradient steps in the scan")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.default_backend()}, {jax.device_count()} device(s)")
    print("| batch | method | ms per gradient step, plain jit | inside lax.scan | ratio |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for batch in args.batch_sizes:
        for name, ms in measure(batch, args.steps).items():
            ratio = ms["in_scan"] / ms["plain"]
            print(f"| {batch} | {name} | {ms['plain']:.0f} | {ms['in_scan']:.0f} | {ratio:.1f}x |")


if __name__ == "__main__":
    main()
