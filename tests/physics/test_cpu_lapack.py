"""JAX's batched LAPACK calls on the CPU must not deadlock a small thread pool.

MJX factorises the mass matrix and the solver's Hessian with Cholesky; under
`vmap` each becomes one batched LAPACK call, and the two can run at once.
jaxlib 0.10.0-0.11.0 split such a call over XLA's CPU thread pool and wait for
the pieces on a pool thread, so two of them at once leave a pool of two threads
(a 2-core CPU) waiting for each other forever. pyproject.toml pins the jax
release before that change; this test fails if a release with it comes back.
It runs the pattern in a fresh process confined to two CPUs, so that the pool
has two threads on any machine.
"""

import os
import subprocess
import sys
import textwrap

import pytest

# Two independent batched Cholesky factorisations per scan step, each above the
# work (batch x n**3 / 3 >= 2e5 flop) at which jaxlib 0.10 splits the batch.
_PROGRAM = textwrap.dedent(
    """
    import os
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
    import jax, jax.numpy as jnp

    n, batch = 27, 1024
    a = jax.random.normal(jax.random.key(0), (batch, n, n))
    a = a @ jnp.swapaxes(a, -1, -2) + n * jnp.eye(n)

    @jax.jit
    def run(x, y):
        def body(carry, _):
            x, y = carry
            x = x + 1e-3 * jnp.tanh(jnp.sin(x))
            y = y + 1e-3 * jnp.tanh(jnp.cos(y))
            lx, ly = jnp.linalg.cholesky(x), jnp.linalg.cholesky(y)
            return (x + 1e-6 * lx, y + 1e-6 * ly), None
        return jax.lax.scan(body, (x, y), None, length=5)[0]

    for _ in range(3):
        out = jax.block_until_ready(run(a, a + 1.0))
    assert bool(jnp.isfinite(out[0]).all() & jnp.isfinite(out[1]).all())
    print("ok")
    """
)


@pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs two CPUs to give XLA a pool of two threads",
)
def test_concurrent_batched_cholesky_completes_on_two_threads():
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    try:
        result = subprocess.run(
            [sys.executable, "-c", _PROGRAM],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(
            "two batched Cholesky factorisations deadlocked XLA's two-thread CPU pool: "
            "this jaxlib splits batched LAPACK calls over the pool (jaxlib 0.10.0-0.11.0); "
            "keep jax < 0.10 (pyproject.toml) until a release without the split"
        )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
