"""dm_control's reward colours as per-environment model fields, for the JAX renderer.

With `visualize_reward`, dm_control blends the `self`, `effector` and `target`
materials from their `*_default` to their `*_highlight` colour by reward**4,
the reward clipped to [0, 1] and read at the state drawn. `colored_fields`
gives the same colours as `geom_rgba` and `site_rgba` values of the objects
that use those materials, which `raycast` draws per environment.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from jaxcontrol import physics as physics_lib

MATERIALS = ("self", "effector", "target")


def _material_ids(mj_model: mujoco.MjModel) -> dict[str, tuple[int, int, int]]:
    """{material: (its id, default's id, highlight's id)} for the materials the model has."""
    found = {}
    for name in MATERIALS:
        ids = [
            mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_MATERIAL, name + suffix)
            for suffix in ("", "_default", "_highlight")
        ]
        if min(ids) >= 0:
            found[name] = tuple(ids)
    return found


def colored_fields(env, state) -> dict[str, jax.Array]:
    """`state.model_fields` with `geom_rgba` and `site_rgba` coloured by the reward at
    `state` (the task's `get_reward` at its physics), for one environment of `env`."""
    m = env.mj_model
    ids = _material_ids(m)
    fields = dict(state.model_fields)
    if not ids:
        return fields
    physics = physics_lib.Physics.create(env.mjx_model, state.data, env.names, fields)
    reward = jnp.clip(env.task.get_reward(physics, state.variables), 0.0, 1.0)
    blend = reward**4
    for name, matid, size in (
        ("geom_rgba", m.geom_matid, m.ngeom),
        ("site_rgba", m.site_matid, m.nsite),
    ):
        if not size:
            continue
        rgba = jnp.asarray(fields.get(name, getattr(m, name)), jnp.float32)
        for own, default, highlight in ids.values():
            (objects,) = np.nonzero(matid == own)
            if objects.size:
                color = blend * m.mat_rgba[highlight] + (1 - blend) * m.mat_rgba[default]
                rgba = rgba.at[objects].set(jnp.asarray(color, jnp.float32))
        fields[name] = rgba
    return fields
