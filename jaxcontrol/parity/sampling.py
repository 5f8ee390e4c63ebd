"""Our resets as samples, in the same quantities as dm_control's (`reference_resets`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxcontrol.core import Env, State
from jaxcontrol.reference.batched import batched_reset


def reset_samples(states: State) -> dict[str, np.ndarray]:
    """The same quantities as `reference_resets`, from a batch of our resets."""
    act = states.data.act
    return {
        "qpos": np.asarray(states.data.qpos),
        "qvel": np.asarray(states.data.qvel),
        **({"act": np.asarray(act)} if act.shape[-1] else {}),
        **{k: np.asarray(v) for k, v in states.variables.items()},
        **{k: np.asarray(v) for k, v in states.model_fields.items()},
    }


RESET_CHUNK_BYTES = 1 << 30


def state_bytes(env: Env) -> int:
    """The size of one of `env`'s states, from its shapes (nothing is computed)."""
    state = jax.eval_shape(env.reset, jax.random.key(0))
    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state))


def chunked_reset_samples(
    env: Env, keys: jax.Array, max_bytes: int = RESET_CHUNK_BYTES
) -> dict[str, np.ndarray]:
    """`reset_samples(batched_reset(env, keys))`, reset a chunk at a time so that one
    chunk's states take at most `max_bytes`.

    A reset state holds the whole MJX `Data`, constraint rows included: dog's is
    12 MB (32,530 rows by 79 dofs), so 1024 of them at once would need 12 GB. The
    keys are padded to whole chunks (one compile) and the padding is dropped.
    """
    n = len(keys)
    chunk = int(max(1, min(n, max_bytes // state_bytes(env))))
    padded = jnp.concatenate([keys, keys[: -n % chunk]])
    parts = [
        reset_samples(batched_reset(env, padded[start : start + chunk]))
        for start in range(0, len(padded), chunk)
    ]
    return {name: np.concatenate([part[name] for part in parts])[:n] for name in parts[0]}
