"""How closely the pure-JAX renderer reproduces MuJoCo's own, on dm_control's states.

A proof tool beside the parity harness (it needs dm_control), not part of rendering.

For a task: dm_control's states after resets and random rollouts are
mirrored into ours (`reference.batched_inject`, what `mirror` does); each is
drawn by `raycast` and by MuJoCo's OpenGL renderer (`cpu.CpuRenderer`) from
the same camera, in segmentation (which object each pixel sees) and in colour.
Needs dm_control (`jaxcontrol[test]`) and OpenGL for the reference images.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxcontrol.reference.actions import action_bounds
from jaxcontrol.reference.batched import batched_inject, stack
from jaxcontrol.reference.state import DmState
from jaxcontrol.reference.suite import reference_env
from jaxcontrol.render import cpu, raycast


def dm_states(env, n: int, seed: int = 0, steps_between: int = 25):
    """`n` dm_control states of `env`'s task: a reset, then `steps_between` random steps
    apart, with actions drawn from `reference.action_bounds` (LQR's motors are
    unbounded: actions of +-1e10 throw its state to 1e8 in a few steps)."""
    dm_env = reference_env(env.domain, env.task_name, seed)
    rng = np.random.RandomState(seed)
    low, high = action_bounds(dm_env.action_spec())
    states = []
    try:
        dm_env.reset()
        for i in range(n):
            if i:
                for _ in range(steps_between):
                    if dm_env.step(rng.uniform(low, high)).last():
                        dm_env.reset()
            states.append(DmState.capture(env, dm_env))
    finally:
        dm_env.close()
    return states


def measure(env, n_states: int = 4, size: int = 84, camera_id=0, seed: int = 0) -> dict:
    """Agreement of our pixels with MuJoCo's on `n_states` of dm_control's states.

    Returns:
      dict: `segmentation` (worst fraction of pixels that see the same object),
      `segmentation_mean`, `rgb_mad` (mean absolute RGB difference, 0-255,
      over all pixels and states) and `rgb_mad_worst` (the worst state's).
    """
    starts = dm_states(env, n_states, seed)
    states = batched_inject(env, stack(starts))
    # one state at a time (lax.map): a batch of the dog's mesh tests would need gigabytes
    segment = raycast.make_render(env, size, size, camera_id, segmentation=True)
    colour = raycast.make_render(env, size, size, camera_id)
    inputs = (states.data, states.model_fields)
    ours_seg = np.asarray(jax.jit(lambda x: jax.lax.map(lambda s: segment(*s), x))(inputs))
    ours_rgb = np.asarray(jax.jit(lambda x: jax.lax.map(lambda s: colour(*s), x))(inputs))
    agreement, mad = [], []
    with cpu.CpuRenderer(env, size, size) as renderer:
        for i, s in enumerate(starts):
            args = (s.qpos, s.qvel, s.act, s.model_fields, camera_id)
            seg = renderer.render_physics(*args, segmentation=True)
            rgb = renderer.render_physics(*args)
            agreement.append(float(np.mean(np.all(ours_seg[i] == seg, axis=-1))))
            mad.append(float(np.abs(ours_rgb[i].astype(np.int16) - rgb).mean()))
    return {
        "segmentation": min(agreement),
        "segmentation_mean": float(np.mean(agreement)),
        "rgb_mad": float(np.mean(mad)),
        "rgb_mad_worst": max(mad),
    }
