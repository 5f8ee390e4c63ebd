"""Cheetah domain: run forward (dm_control `cheetah`)."""

import collections
import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol import mjcf, rewards
from jaxcontrol import physics as physics_lib
from jaxcontrol.physics import Physics
from jaxcontrol.registry import REGISTRY
from jaxcontrol.task import Task

# How long the simulation will run, in seconds.
_DEFAULT_TIME_LIMIT = 10

# Running speed above which reward is 1.
_RUN_SPEED = 10

# Physics steps that dm_control takes at reset to let the model settle.
_SETTLE_STEPS = 200


def speed(physics: Physics) -> jax.Array:
    """Horizontal speed of the cheetah (the subtree-linvel sensor)."""
    return physics.named.data.sensordata["torso_subtreelinvel"][0]


def settle(physics: Physics, qpos: jax.Array, n_steps: int) -> Physics:
    """dm_control's `physics.step(nstep=n_steps)` right after writing `qpos` at reset.

    dm_control's legacy step opens with `mj_step2`, which finishes the step
    begun by the last forward pass: that of `reset_context`'s entry, at the
    reset state (qpos0, zero velocity, zero control), not at the new `qpos`.
    So the first step's accelerations (gravity and the joint springs, at rest at
    qpos0) and the mass matrix of its implicit damping are those at qpos0,
    while its Euler integration starts from the new `qpos`. The other
    `n_steps - 1` steps are ordinary steps.

    Stepping from the new `qpos` with qpos0's kinematics would not do: the
    springs' passive force reads `qpos` itself.

    On the C backend (`Physics.step_in_reset`) C MuJoCo takes these steps itself,
    `mj_step2` and all, so the settled state is dm_control's bit for bit; the
    poses it leaves are stale until the reset's forward pass, as in dm_control.

    Args:
      physics: the reset state, whose forward pass `mj_step2` finishes.
      qpos: the positions written after it.
      n_steps: the number of physics steps.
    """
    if physics.mj_model.opt.integrator != mujoco.mjtIntegrator.mjINT_EULER:
        raise ValueError("settle reproduces mj_step2 for the Euler integrator only")
    if physics.step_in_reset is not None:  # the C backend: C's own steps, as dm_control's
        return physics.with_data(**physics.step_in_reset(physics, qpos, n_steps))
    model = physics.model
    data = physics_lib.forward(physics)  # the reset's forward pass, in MJX's own types
    data = mjx.kinematics(model, mjx.euler(model, data.replace(qpos=qpos)))
    physics = dataclasses.replace(physics, data=data)
    data = physics_lib.step(physics, n_steps - 1, physics_lib.sync_kinematics)
    return dataclasses.replace(physics, data=data)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Cheetah(Task):
    """Run forward as fast as possible (reward 1 from `_RUN_SPEED` m/s)."""

    time_limit: float = _DEFAULT_TIME_LIMIT

    # MJX solver caps: stock MJX's float64 trajectories under them stayed identical to
    # those at dm_control's settings (16 rollouts of 1000 steps), and it ran 5.6x
    # faster at batch 256 (docs/design/solver-caps.md). The CPU model keeps dm_control's.
    solver_caps = (8, 4)

    def make_model(self):
        return mjcf.cheetah.make_model()

    def sync(self, physics):
        # The reward reads the subtree-linvel sensor (centres of mass and body
        # velocities); the observation reads qpos and qvel only.
        return physics_lib.sync_subtree_velocity(physics)

    def initialize_episode(self, physics, key):
        mj_model = physics.mj_model
        # The indexing below assumes that all joints have a single DOF.
        assert mj_model.nq == mj_model.njnt
        is_limited = np.flatnonzero(mj_model.jnt_limited == 1)
        lower, upper = mj_model.jnt_range[is_limited].T
        dtype = physics.data.qpos.dtype
        draw = jax.random.uniform(key, lower.shape, dtype, minval=lower, maxval=upper)
        qpos = physics.data.qpos.at[is_limited].set(draw)

        # Stabilize the model before the actual simulation.
        physics = settle(physics, qpos, _SETTLE_STEPS)

        # dm_control also sets `self._timeout_progress = 0`, which nothing reads.
        return physics.with_data(time=jnp.zeros_like(physics.data.time)), {}

    def get_observation(self, physics, variables):
        # Ignores horizontal position to maintain translational invariance.
        return collections.OrderedDict(
            position=physics.position()[1:],
            velocity=physics.velocity(),
        )

    def get_reward(self, physics, variables):
        return rewards.tolerance(
            speed(physics),
            bounds=(_RUN_SPEED, float("inf")),
            margin=_RUN_SPEED,
            value_at_margin=0,
            sigmoid="linear",
        )


REGISTRY.add("cheetah", "run", Cheetah(), tags=("benchmarking",))
