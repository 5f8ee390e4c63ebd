"""A soak shard's carry on disk, so that a shard stopped midway resumes where it was.

A shard of the parity soak (`parity.soak`) is one scan of 1000 steps that takes up to
two hours on one CPU core. It runs in chunks, and after each chunk its carry (the
batched `State`s and the running statistics) goes to a small `.npz` file beside the
piece's `Progress` file. Of each `mjx.Data` it keeps the public fields and drops
`_impl`: the backend's contact, constraint and mass-matrix arrays, which every step
computes again before it reads them. A resumed shard so steps on bit-identically
(tests/parity/test_parity_progress.py sets what is dropped to NaN first), and a file of
insert_ball's 128 environments holds 0.8 MB rather than 12 MB: small enough to commit
when a session ends in the middle of a shard.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import pathlib
from typing import Any

import jax
import numpy as np

_META = "__meta__"


def kept(path: tuple) -> bool:
    """Whether the carry leaf at `path` is saved: all but what an `mjx.Data` holds
    under `_impl` (recomputed by every step before it is read)."""
    names = [getattr(entry, "name", None) for entry in path]
    return not any(a == "data" and b == "_impl" for a, b in itertools.pairwise(names))


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """Where one part keeps its carry, and what must match for a resume (`meta`: the
    piece's config, the shard, its sizes and chunk length)."""

    path: pathlib.Path
    meta: dict[str, Any]

    def save(self, carry: Any, progress: dict[str, Any]) -> None:
        """Writes the carry with `progress` (steps done, hosts, seconds), atomically."""
        arrays = {_META: np.array(json.dumps({"meta": self.meta, **progress}))}
        for path, leaf in jax.tree_util.tree_leaves_with_path(carry):
            if kept(path):
                arrays[jax.tree_util.keystr(path)] = np.asarray(_plain(leaf))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)
        tmp.replace(self.path)

    def load(self, template: Any) -> tuple[Any, dict[str, Any]] | None:
        """The saved carry, as `template` (the shard's first carry) with the saved leaves
        put in, and the saved progress; None where no checkpoint of this `meta` is."""
        if not self.path.exists():
            return None
        with np.load(self.path) as saved:
            info = json.loads(str(saved[_META]))
            if info.pop("meta") != self.meta:
                return None
            arrays = {name: saved[name] for name in saved.files if name != _META}
        paths, treedef = jax.tree_util.tree_flatten_with_path(template)
        wanted = {jax.tree_util.keystr(path) for path, _ in paths if kept(path)}
        if wanted != set(arrays):
            raise ValueError(
                f"{self.path} holds another carry than this shard's (the code changed since "
                f"it was saved; delete it to start the shard over): missing "
                f"{sorted(wanted - set(arrays))[:3]}, extra {sorted(set(arrays) - wanted)[:3]}"
            )
        leaves = [
            _restore(leaf, arrays[jax.tree_util.keystr(path)]) if kept(path) else leaf
            for path, leaf in paths
        ]
        return jax.tree_util.tree_unflatten(treedef, leaves), info


def _plain(leaf: jax.Array) -> jax.Array:
    """A leaf as plain numbers (a typed PRNG key as its raw key data)."""
    if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        return jax.random.key_data(leaf)
    return leaf


def _restore(template: jax.Array, saved: np.ndarray) -> jax.Array:
    """`saved` as a leaf like `template`: same shape, dtype and (for keys) key kind."""
    plain = _plain(template)
    if saved.shape != plain.shape or saved.dtype != plain.dtype:
        raise ValueError(
            f"a checkpoint leaf is {saved.dtype}{list(saved.shape)}, "
            f"the shard's is {plain.dtype}{list(plain.shape)}"
        )
    if jax.dtypes.issubdtype(template.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(saved, impl=jax.random.key_impl(template))
    return jax.numpy.asarray(saved)
