"""C MuJoCo as an Env's physics: dm_control's own engine behind the same jittable step.

`jaxcontrol.load(domain, task, backend="mujoco")` changes only the physics: a
control step, and the forward pass that ends a reset (or `set_state`, `mirror`).
The task's code (its reset's sampling, observations, rewards), wrappers and
learners are the MJX Env's; a reset that tests collisions itself (a rejection
sampler) still does so with MJX. The step hands the whole batch to one host call
(`jax.pure_callback`, `vmap_method="broadcast_all"`), where worker threads step each environment with
`mj_step` (MuJoCo releases the GIL while it steps) as dm_control's
`Physics.step` does: `n_sub_steps` steps, then `mj_step1`. Each environment
carries its own solver warm start and per-episode model fields, so float64
trajectories are dm_control's, bit for bit.

C returns qpos, qvel, act, time, the warm start, `sensordata` (position and
velocity sensors at the new state, acceleration sensors of the last substep, as
dm_control reads them) and the poses of `mj_kinematics` (bodies, geoms, sites).
Whatever else a task reads (centres of mass, velocities) its `sync` recomputes
in JAX, where the MJX backend ends its step too; the sensors stay C's.

Worker threads: `JAXCONTROL_MUJOCO_THREADS`, else the machine's CPU count.

A state that C finds invalid (MuJoCo's bad qpos/qvel/qacc warnings, which make
dm_control raise) comes back as NaN, so `Env.step` contains it as it contains
an MJX divergence: that environment's episode ends with its last finite state.
"""

from __future__ import annotations

import concurrent.futures
import copy
import ctypes
import dataclasses
import os
from collections.abc import Callable

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol import physics as physics_lib
from jaxcontrol.mjcf import compat

BACKENDS = ("mjx", "mujoco")

_S = mujoco.mjtState
# The state a control step reads (mj_setState) and, its first five, writes back
# (mj_getState): data field and mjtState bit, in mjtState's bit order, which is the
# order of a state vector. One call each per environment; NumPy packs the batch.
_STATE = (
    ("time", _S.mjSTATE_TIME),
    ("qpos", _S.mjSTATE_QPOS),
    ("qvel", _S.mjSTATE_QVEL),
    ("act", _S.mjSTATE_ACT),
    ("qacc_warmstart", _S.mjSTATE_WARMSTART),
    ("ctrl", _S.mjSTATE_CTRL),
    ("qfrc_applied", _S.mjSTATE_QFRC_APPLIED),
    ("xfrc_applied", _S.mjSTATE_XFRC_APPLIED),
)
_STATE_OUT = [name for name, _ in _STATE[:5]]
_SET_SPEC = int(np.bitwise_or.reduce([int(bit) for _, bit in _STATE]))
_GET_SPEC = int(np.bitwise_or.reduce([int(bit) for _, bit in _STATE[:5]]))
# What the host call reads from each environment's data (besides time), and writes back.
_INPUTS = tuple(name for name, _ in _STATE[1:])
# What `mj_kinematics` computes (as `mjx.kinematics` does): C's values come back with
# the state, so the JAX side compiles no kinematics of its own (dog's cost 19 s).
_KINEMATICS = (
    "xanchor",
    "xaxis",
    "xpos",
    "xquat",
    "xmat",
    "xipos",
    "ximat",
    "geom_xpos",
    "geom_xmat",
    "site_xpos",
    "site_xmat",
)
_OUTPUTS = (*_STATE_OUT[1:], "sensordata", *_KINEMATICS)
_INVALID = [
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
]


def check_backend(backend: str) -> str:
    """`backend`, if it names one of `BACKENDS`; else a ValueError naming them."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")
    return backend


class Engine:
    """C MuJoCo models and data for one Env, one of each per worker thread.

    Args:
      mj_model: the Env's model (dm_control's solver settings).
      model_fields: names of the per-episode model fields written per environment.
      n_sub_steps: physics steps per control step.
      threads: worker threads (default: `JAXCONTROL_MUJOCO_THREADS`, else the CPU count).
    """

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        model_fields: tuple[str, ...],
        n_sub_steps: int,
        threads: int | None = None,
    ):
        threads = threads or int(os.environ.get("JAXCONTROL_MUJOCO_THREADS", "0"))
        self.threads = max(1, threads or os.cpu_count() or 1)
        base = compat.to_mjx_compatible(mj_model)  # as CpuPath: the energy flag off
        # Threads share one model unless environments write their own fields into it.
        self.models = [copy.deepcopy(base) for _ in range(self.threads)] if model_fields else None
        self.model = base
        self.datas = [mujoco.MjData(base) for _ in range(self.threads)]
        self.model_fields = model_fields
        self.n_sub_steps = n_sub_steps
        self._pool = concurrent.futures.ThreadPoolExecutor(self.threads)
        self._poses = [_PoseBlock(data) for data in self.datas]
        if any(p.layout != self._poses[0].layout for p in self._poses):
            raise RuntimeError("MuJoCo laid out the poses of two MjData of one model differently")

    def step(
        self,
        time,
        fields: dict[str, np.ndarray],
        inputs: dict[str, np.ndarray],
        forward_only: bool = False,
    ):
        """One control step of every environment of a batch (NumPy, leading batch axis).

        With `forward_only`, no step: `mj_forward` with actuation disabled, as
        dm_control ends a reset. Returns the new time and the `_OUTPUTS` arrays, float64.
        """
        batch = time.shape[0]
        given = np.concatenate(
            [time[:, None]] + [inputs[name].reshape(batch, -1) for name in _INPUTS], axis=1
        )
        states = np.empty((batch, mujoco.mj_stateSize(self.model, _GET_SPEC)))
        sensors = np.empty((batch, self.model.nsensordata))
        poses = np.empty((batch, self._poses[0].size), np.uint8)
        invalid = np.zeros(batch, bool)
        chunks = np.array_split(np.arange(batch), min(self.threads, batch))

        def work(worker: int, indices: np.ndarray):
            model = self.models[worker] if self.models else self.model
            data = self.datas[worker]
            for i in indices:
                for name in self.model_fields:
                    getattr(model, name)[...] = fields[name][i]
                mujoco.mj_setState(model, data, given[i], _SET_SPEC)
                if forward_only:
                    mujoco.mj_forward(model, data)
                else:
                    mujoco.mj_step(model, data, self.n_sub_steps)
                    mujoco.mj_step1(model, data)
                mujoco.mj_getState(model, data, states[i], _GET_SPEC)
                sensors[i] = data.sensordata
                poses[i] = self._poses[worker].raw
                if data.warning.number[_INVALID].any():  # C reset the data and warned
                    invalid[i] = True
                    mujoco.mj_resetData(model, data)  # clears the warnings

        # A reset's forward pass runs with actuation disabled, as dm_control's does.
        models = self.models or [self.model]
        flags = [m.opt.disableflags for m in models]
        if forward_only:
            for m in models:
                m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        try:
            list(self._pool.map(work, range(len(chunks)), chunks))
        except RuntimeError:  # the interpreter is exiting and its pools take no more work
            for worker, indices in enumerate(chunks):
                work(worker, indices)
        finally:
            for m, f in zip(models, flags):
                m.opt.disableflags = f
        states[invalid] = np.nan
        sensors[invalid] = np.nan
        sizes = [int(np.prod(self._shape(name))) for name in _STATE_OUT]
        parts = np.split(states, np.cumsum(sizes)[:-1], axis=1)
        out = {
            name: part.reshape((batch,) + self._shape(name))
            for name, part in zip(_STATE_OUT, parts)
        }
        out["sensordata"] = sensors
        out.update(self._poses[0].split(poses))
        return out.pop("time"), out

    def _shape(self, name: str) -> tuple[int, ...]:
        return np.shape(getattr(self.datas[0], name))


class _PoseBlock:
    """The `_KINEMATICS` arrays of one MjData as one block of bytes.

    MuJoCo allocates them one after another in the data's buffer (with alignment
    gaps), so an environment's poses leave in one copy, not one per array (a dozen
    small copies per environment cost cheetah-run a quarter of its speed); `split`
    then cuts a batch of blocks into the arrays, with NumPy views.
    """

    def __init__(self, data: mujoco.MjData):
        arrays = [getattr(data, name) for name in _KINEMATICS]
        # An empty array (a model without sites) may point anywhere: it takes no bytes.
        starts = [a.__array_interface__["data"][0] if a.size else None for a in arrays]
        begin = min(s for s in starts if s is not None)
        self.size = max(s + a.nbytes for s, a in zip(starts, arrays) if s is not None) - begin
        self.layout = [
            (name, 0 if s is None else s - begin, a.nbytes, a.shape)
            for name, s, a in zip(_KINEMATICS, starts, arrays)
        ]
        self.raw = np.ctypeslib.as_array((ctypes.c_uint8 * self.size).from_address(begin))
        self._data = data  # the block is a view into its buffer

    def split(self, blocks: np.ndarray) -> dict[str, np.ndarray]:
        batch = blocks.shape[0]
        return {
            name: blocks[:, offset : offset + nbytes].view(np.float64).reshape((batch,) + shape)
            for name, offset, nbytes, shape in self.layout
        }


def step(env, physics: physics_lib.Physics, sync: Callable) -> mjx.Data:
    """`physics_lib.step` on C MuJoCo: a control step of `env`, jittable and vmappable."""
    return _host_physics(env, physics, sync, forward_only=False)


def forward_without_actuation(env, physics: physics_lib.Physics, sync: Callable) -> mjx.Data:
    """`physics_lib.forward_without_actuation` on C MuJoCo (a reset's forward pass).

    C's contacts, constraint forces and sensors, as dm_control's after its reset,
    and no MJX collision or solver to compile: the C backend's resets compile
    only kinematics and the task's code (plus any collision test of its own
    initialisation, such as a rejection sampler's).
    """
    return _host_physics(env, physics, sync, forward_only=True)


def _host_physics(env, physics: physics_lib.Physics, sync: Callable, forward_only: bool):
    engine = env._cached("cpu_engine", lambda: _engine(env))
    data = physics.data
    dtype = data.qpos.dtype
    fields = {name: physics.model_fields[name] for name in engine.model_fields}
    inputs = {name: getattr(data, name) for name in _INPUTS}
    wire = _Wire(dtype)
    tails = {name: getattr(data, name).shape for name in _OUTPUTS}  # one environment's
    result_shape = (
        wire.spec(data.time.shape),
        {name: wire.spec(tails[name]) for name in _OUTPUTS},
    )

    def host(time, fields, inputs):
        time, fields, inputs = jax.tree.map(wire.decode, (time, fields, inputs))
        lead = np.shape(time)  # () for one environment, the batch axes under vmap
        batch = int(np.prod(lead))
        flat = lambda x, tail: np.asarray(x, np.float64).reshape((batch,) + tail)
        time, out = engine.step(
            flat(time, ()),
            {k: flat(v, np.shape(v)[len(lead) :]) for k, v in fields.items()},
            {k: flat(v, np.shape(v)[len(lead) :]) for k, v in inputs.items()},
            forward_only,
        )
        shaped = lambda x, tail: wire.send(x.reshape(lead + tail))
        return shaped(time, ()), {k: shaped(v, tails[k]) for k, v in out.items()}

    operands = jax.tree.map(wire.encode, (data.time, fields, inputs))
    results = jax.pure_callback(host, result_shape, *operands, vmap_method="broadcast_all")
    time, out = jax.tree.map(wire.receive, results)
    # State, sensors and poses are C's (poses after `mj_step1`, as dm_control reads them);
    # the task's `sync` recomputes the rest it reads (centres of mass, velocities).
    data = data.replace(time=time, **{k: out[k] for k in _OUTPUTS})
    data = sync(dataclasses.replace(physics, data=data))
    return data.replace(sensordata=out["sensordata"])


class _Wire:
    """How float arrays cross the host call.

    JAX converts a callback's operands and results on the runtime thread that calls
    it, where a `jax.enable_x64` context of the tracing thread does not hold:
    float64 would be rounded to float32 on the way in and refused on the way out.
    Float64 therefore travels as its bits (uint32 pairs), bitcast on either side.
    """

    def __init__(self, dtype):
        self.bits = np.dtype(dtype) == np.float64

    def spec(self, shape) -> jax.ShapeDtypeStruct:
        if self.bits:
            return jax.ShapeDtypeStruct(tuple(shape) + (2,), np.uint32)
        return jax.ShapeDtypeStruct(tuple(shape), np.float32)

    def send(self, x: np.ndarray) -> np.ndarray:
        if self.bits:
            return np.ascontiguousarray(x, np.float64).view(np.uint32).reshape(x.shape + (2,))
        return x.astype(np.float32)

    def encode(self, x: jax.Array) -> jax.Array:
        """JAX side, before the call."""
        if self.bits and x.dtype == jnp.float64:
            return jax.lax.bitcast_convert_type(x, jnp.uint32)
        return x

    def decode(self, x) -> np.ndarray:
        """Host side: the float64 values of an operand."""
        x = np.asarray(x)
        if self.bits and x.dtype == np.uint32:
            return np.ascontiguousarray(x).view(np.float64).reshape(x.shape[:-1])
        return x.astype(np.float64)

    def receive(self, x: jax.Array) -> jax.Array:
        return jax.lax.bitcast_convert_type(x, jnp.float64) if self.bits else x


def _engine(env) -> Engine:
    return Engine(env.mj_model, tuple(env.task.episode_model_fields), env.n_sub_steps)
