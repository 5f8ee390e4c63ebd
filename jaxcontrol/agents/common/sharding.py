"""Data parallelism across local (and, after jax.distributed.initialize, all) devices.

The learners are written for one global batch of environments. Giving them a
``jax.sharding.Mesh`` with one axis, ``"envs"``, places the environment axis
of the env states, rollouts and replay on all devices; parameters and
optimiser state are replicated. XLA's SPMD partitioner turns the global
program into per-device programs with the cross-device reductions it needs,
so the maths is the same as on one device up to the order of float sums.

Multi-host: call ``jax.distributed.initialize()`` on every host before
anything else touches jax (the CLI does with ``--distributed``); then
``jax.devices()`` lists every host's devices and ``make_mesh()`` spans them.
Every host runs the same program with the same seed; each holds its own
shard of the environments.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "envs"


def make_mesh(num_devices: int | None = None) -> Mesh:
    """A one-axis mesh over the first ``num_devices`` devices (all by default)."""
    devices = jax.devices()
    if num_devices is not None:
        if num_devices > len(devices):
            raise ValueError(f"asked for {num_devices} devices, only {len(devices)} exist")
        devices = devices[:num_devices]
    return Mesh(np.array(devices), (AXIS,))


def check_divisible(num_envs: int, mesh: Mesh | None) -> None:
    """Raises ValueError unless the env count splits evenly over the mesh."""
    if mesh is not None and num_envs % mesh.size:
        raise ValueError(
            f"num_envs={num_envs} is not divisible by the {mesh.size} devices of the mesh"
        )


def spec(mesh: Mesh | None, axis: int, ndim: int) -> NamedSharding | None:
    """Sharding that splits dimension ``axis`` of an ``ndim`` array over the mesh."""
    if mesh is None:
        return None
    parts = [None] * ndim
    parts[axis] = AXIS
    return NamedSharding(mesh, PartitionSpec(*parts))


def constrain(tree: Any, mesh: Mesh | None, axis: int = 0) -> Any:
    """Inside jit: shard every leaf with ndim > axis along ``axis``; others replicated."""
    if mesh is None:
        return tree

    def one(x):
        if x.ndim <= axis:
            return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec()))
        return jax.lax.with_sharding_constraint(x, spec(mesh, axis, x.ndim))

    return jax.tree.map(one, tree)


def replicate(tree: Any, mesh: Mesh | None) -> Any:
    """Inside jit: replicate every leaf over the mesh."""
    if mesh is None:
        return tree
    return jax.tree.map(
        lambda x: jax.lax.with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec())), tree
    )
