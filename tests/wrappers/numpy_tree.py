"""`to_numpy`: a pytree of JAX arrays as NumPy, PRNG keys as their key data."""

import jax
import jax.numpy as jnp
import numpy as np


def to_numpy(tree):
    def leaf(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            return np.asarray(jax.random.key_data(x))
        return np.asarray(x)

    return jax.tree.map(leaf, tree)
