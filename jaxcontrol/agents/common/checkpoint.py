"""Checkpoints with orbax-checkpoint: the full train state, the policy, and JSON metadata.

Each checkpoint step holds three items:

* ``state``: the learner's whole TrainState (params, optimiser, env states,
  replay, PRNG keys), so a resumed run continues bit for bit;
* ``policy``: the frozen policy parameters, enough for evaluation alone;
* ``meta``: JSON (chunk index, env steps, wall-clock seconds so far).

No pickle: orbax writes arrays with tensorstore and metadata as JSON. Orbax
refuses zero-size arrays (MJX data has some), so trees are stored as a flat
dict of their non-empty leaves and rebuilt from the restore target's
structure, with the empty leaves recreated.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp


def abstract_like(tree: Any) -> Any:
    """ShapeDtypeStructs (with shardings, when known) for restoring into ``tree``'s layout."""

    def one(x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None))

    return jax.tree.map(one, tree)


def abstract_single_device(tree: Any) -> Any:
    """ShapeDtypeStructs on this process's first device (for ``jax.eval_shape`` outputs)."""
    device_sharding = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=device_sharding), tree
    )


def _pack(tree: Any) -> dict[str, Any]:
    """Flat dict of the non-empty leaves, keyed by leaf index."""
    leaves = jax.tree.leaves(tree)
    return {f"{i:05d}": leaf for i, leaf in enumerate(leaves) if leaf.size > 0}


def _unpack(packed: dict[str, Any], abstract: Any) -> Any:
    """Inverse of ``_pack`` given the target's abstract tree."""
    leaves, treedef = jax.tree.flatten(abstract)
    out = []
    for i, leaf in enumerate(leaves):
        if leaf.size == 0:
            value = jnp.zeros(leaf.shape, leaf.dtype)
            if leaf.sharding is not None:
                value = jax.device_put(value, leaf.sharding)
            out.append(value)
        else:
            out.append(packed[f"{i:05d}"])
    return jax.tree.unflatten(treedef, out)


class Checkpointer:
    """Saves and restores numbered checkpoints under one directory."""

    def __init__(self, directory: str, max_to_keep: int | None = 2):
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep, create=True, enable_async_checkpointing=False
        )
        self._manager = ocp.CheckpointManager(
            os.path.abspath(directory), options=options, item_names=("state", "policy", "meta")
        )

    def save(self, step: int, state: Any, policy: Any, meta: dict) -> None:
        """Writes checkpoint ``step`` and waits until it is complete on disk."""
        self._manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(_pack(state)),
                policy=ocp.args.StandardSave(_pack(policy)),
                meta=ocp.args.JsonSave(meta),
            ),
            force=True,
        )
        self._manager.wait_until_finished()

    def latest_step(self) -> int | None:
        """The newest complete checkpoint's step, or None."""
        return self._manager.latest_step()

    def restore_meta(self, step: int) -> dict:
        return self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))[
            "meta"
        ]

    def restore_state(self, step: int, abstract_state: Any) -> tuple[Any, dict]:
        """Restores the train state into the layout of ``abstract_state`` and the metadata."""
        out = self._manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(_pack(abstract_state)), meta=ocp.args.JsonRestore()
            ),
        )
        return _unpack(out["state"], abstract_state), out["meta"]

    def restore_policy(self, step: int, abstract_policy: Any) -> tuple[Any, dict]:
        """Restores only the policy parameters and the metadata."""
        out = self._manager.restore(
            step,
            args=ocp.args.Composite(
                policy=ocp.args.StandardRestore(_pack(abstract_policy)), meta=ocp.args.JsonRestore()
            ),
        )
        return _unpack(out["policy"], abstract_policy), out["meta"]

    def close(self) -> None:
        self._manager.close()
