"""Batching helpers shared by the collision tests: many poses through one compiled program."""

import jax
import numpy as np

CHUNK = 4096  # every call is padded to this batch size: one compile per dtype


def stack(inputs):
    """A list of argument tuples -> one stacked array per argument."""
    return [np.stack(z) for z in zip(*inputs)]


def padded(fn):
    """jit(vmap(fn)), called on batches padded to CHUNK (repeating the first pose)."""
    jitted = jax.jit(jax.vmap(fn))

    def call(*args):
        n, outs = len(args[0]), []
        for start in range(0, n, CHUNK):
            chunk = [np.asarray(a[start : start + CHUNK]) for a in args]
            k = len(chunk[0])
            chunk = [np.concatenate([a, np.repeat(a[:1], CHUNK - k, 0)]) for a in chunk]
            out = jitted(*chunk)
            outs.append([np.asarray(o)[:k] for o in (out if isinstance(out, tuple) else (out,))])
        return [np.concatenate(z) for z in zip(*outs)]

    return call
