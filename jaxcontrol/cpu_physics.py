"""C MuJoCo as an Env's physics: dm_control's own engine behind the same jittable step.

`jaxcontrol.load(domain, task, backend="mujoco")` changes only the physics: a
control step, and the forward pass that ends a reset (or `set_state`, `mirror`).
The task's code (its reset's sampling, observations, rewards), wrappers and
learners are the MJX Env's; a reset that tests collisions itself (a rejection
sampler) still does so with MJX. The step hands the whole batch to one host call
(`jax.pure_callback`, `vmap_method="broadcast_all"`), where MuJoCo's batched
simulation (`mujoco.batch`, C threads without the GIL) steps each environment as
dm_control's `Physics.step` does: `n_sub_steps` steps, then `mj_step1`. Each
environment carries its own solver warm start and per-episode model fields, so
float64 trajectories are dm_control's, bit for bit.

C returns qpos, qvel, act, time, the warm start, `sensordata` (position and
velocity sensors at the new state, acceleration sensors of the last substep, as
dm_control reads them) and the poses of `mj_kinematics` (bodies, geoms, sites).
Whatever else a task reads (centres of mass, velocities) its `sync` recomputes
in JAX, where the MJX backend ends its step too; the sensors stay C's. MJX's
constraint and contact rows are never computed here, so a `State` of this backend
carries none (`without_constraint_rows`): dog's is 75 kB instead of 12 MB.

Threads: `JAXCONTROL_MUJOCO_THREADS`, else the machine's CPU count.

A state that C finds invalid (MuJoCo's bad qpos/qvel/qacc warnings, which make
dm_control raise) comes back as NaN, so `Env.step` contains it as it contains
an MJX divergence: that environment's episode ends with its last finite state.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import batch as mujoco_batch
from mujoco import mjx

from jaxcontrol import ffi_step
from jaxcontrol import physics as physics_lib
from jaxcontrol.mjcf import common, compat, model_diff

BACKENDS = ("mjx", "mujoco")

# The state a control step reads, and (its first five) writes back: MjData fields
# within each simulation's `mujoco.batch` state row.
_STATE = (
    "time",
    "qpos",
    "qvel",
    "act",
    "qacc_warmstart",
    "ctrl",
    "qfrc_applied",
    "xfrc_applied",
)
_STATE_OUT = _STATE[:5]
# What physics steps in a reset leave for its forward pass (`step_in_reset`).
RESET_STEPPED = _STATE_OUT[1:]
# What the host call reads from each environment's data (besides time).
_INPUTS = _STATE[1:]
# What `mj_kinematics` computes: C's values come back with the state, so the JAX side
# compiles no kinematics of its own (dog's cost 19 s).
_KINEMATICS = physics_lib.KINEMATICS
# What a call returns besides the state: sensors and poses.
_DERIVED = ("sensordata", *_KINEMATICS)
_OUTPUTS = (*_STATE_OUT[1:], *_DERIVED)
_NO_SENSORS = int(mujoco.mjtDisableBit.mjDSBL_SENSOR)
_INVALID = [
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
]


def default_backend() -> str:
    """The command line's physics where none is named: C MuJoCo ("mujoco") when JAX
    runs on the CPU, MJX on an accelerator.

    On a CPU the C backend trains PPO 2.3x faster on cheetah-run and SAC 1.5x on
    walker-walk, and steps 2-25x faster at 256+ environments (docs/benchmarks.md,
    "C MuJoCo backend"). `jaxcontrol.load` itself keeps "mjx" everywhere: the same
    physics on every device, differentiable, and what the parity tests measure.
    """
    return "mujoco" if jax.default_backend() == "cpu" else "mjx"


def check_backend(backend: str) -> str:
    """`backend`, if it names one of `BACKENDS`; else a ValueError naming them."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; valid backends: {', '.join(BACKENDS)}")
    return backend


class Engine:
    """C MuJoCo simulations for one Env, stepped on MuJoCo's own thread pool.

    `mujoco.batch.Batch` loads each environment's state row (its warm start
    included) and per-episode model fields into an MjData, steps it in C without
    the GIL, and copies the state and the bound derived fields back out: no Python
    runs per environment (but for fields a batch cannot expand: `_Simulations`).
    One batch of simulations serves every call; a call with more environments
    than it holds makes a larger one.

    Args:
      mj_model: the Env's model (dm_control's solver settings).
      n_sub_steps: physics steps per control step.
      threads: threads, the calling one included (default: `JAXCONTROL_MUJOCO_THREADS`,
        else the CPU count).
      substep_sensors: compute the sensors at every substep, as a plain `mj_step`
        does; the results are the same bits, only slower (for measurement).
      make_model: builds `mj_model` afresh (the task's `make_model`). Given it,
        per-environment model copies are made from a build without textures
        (`mjcf.common.without_textures`), once it is proven equal to `mj_model` in
        every other field; quadruped-escape's copy is 0.2 MB instead of 12.4 MB.
    """

    def __init__(
        self,
        mj_model: mujoco.MjModel,
        n_sub_steps: int,
        threads: int | None = None,
        substep_sensors: bool = False,
        make_model: Callable[[], mujoco.MjModel] | None = None,
    ):
        threads = threads or int(os.environ.get("JAXCONTROL_MUJOCO_THREADS", "0"))
        self.threads = max(1, threads or os.cpu_count() or 1)
        self.model = compat.to_mjx_compatible(mj_model)  # as CpuPath: the energy flag off
        self.n_sub_steps = n_sub_steps
        self.substep_sensors = substep_sensors
        self._make_model = make_model
        self._copyable: mujoco.MjModel | None = None
        self._sims: _Simulations | None = None
        self._steppers: dict[tuple, ffi_step.Stepper | None] = {}
        self._lock = threading.Lock()  # a batch takes one call at a time (pmap may make two)

    def stepper(self, fields: tuple[str, ...], outputs: tuple[str, ...]) -> ffi_step.Stepper | None:
        """The XLA FFI step for environments with their own `fields` (model field
        names), returning `outputs` (MjData fields) after the state; None where the
        step goes through the Python callback: the handler is switched off or cannot
        be built here (`ffi_step.library`), or a field is one a batch cannot expand
        (quadruped-escape's `hfield_data`)."""
        key = (fields, outputs)
        if key not in self._steppers:
            lib = ffi_step.library()
            usable = lib is not None and ffi_step.supports(fields)
            self._steppers[key] = (
                ffi_step.Stepper(
                    lib,
                    self.model,
                    self.n_sub_steps,
                    self.substep_sensors,
                    self.threads,
                    fields,
                    outputs,
                )
                if usable
                else None
            )
        return self._steppers[key]

    def step(
        self,
        time,
        fields: dict[str, np.ndarray],
        inputs: dict[str, np.ndarray],
        forward_only: bool = False,
    ):
        """One control step of every environment of a batch (NumPy, leading batch axis).

        `fields` are the environments' own model fields (any MjModel arrays). With
        `forward_only`, no step: `mj_forward` with actuation disabled, as dm_control
        ends a reset. Returns the new time and the `_OUTPUTS` arrays, float64.
        """
        with self._lock:
            return self._simulations(time.shape[0], fields).run(time, fields, inputs, forward_only)

    def contacts(
        self, qpos: np.ndarray, fields: dict[str, np.ndarray], slack: float | None = None
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """C's `ncon` at each environment's `qpos` (the position stage of `mj_forward`).

        Given `slack`, returns instead the number of contacts deeper than `slack`
        inside their margin (`margin - dist > slack`; `ncon` at 0), and the deepest
        contact's `margin - dist` (0 without contacts)."""
        with self._lock:
            return self._simulations(qpos.shape[0], fields).contacts(qpos, fields, slack)

    def step_in_reset(
        self, qpos: np.ndarray, fields: dict[str, np.ndarray], n_steps: int
    ) -> dict[str, np.ndarray]:
        """dm_control's `physics.step(nstep=n_steps)` in a reset, right after the task
        writes each environment's `qpos`: from the model's reset state (`mj_resetData`,
        then `mj_forward` with actuation disabled, as `Physics.reset` ends), `qpos` put
        in place, then `mj_step2` to finish that forward pass's step (for the Euler
        integrator; `mj_step` for the others) and `n_steps - 1` further `mj_step`s.

        Returns the `RESET_STEPPED` fields, float64; NaN for a simulation C found
        invalid (MuJoCo's bad qpos/qvel/qacc warnings)."""
        with self._lock:
            return self._simulations(qpos.shape[0], fields).step_in_reset(qpos, fields, n_steps)

    def copyable_model(self) -> mujoco.MjModel:
        """The model that per-environment copies are made from: `model` without its
        textures where `make_model` was given and rebuilds it equal in every other
        field, else `model` itself (with a warning naming the difference)."""
        if self._copyable is None:
            self._copyable = self.model
            if self._make_model is not None:
                with common.without_textures():
                    lean = compat.to_mjx_compatible(self._make_model())
                differ = model_diff.compare_models(
                    lean, self.model, ignore=model_diff.TEXTURE_FIELDS
                )
                if differ:
                    warnings.warn(
                        "the model rebuilt without textures differs from the Env's "
                        f"({'; '.join(differ[:3])}): each environment copies the whole model",
                        stacklevel=2,
                    )
                else:
                    self._copyable = lean
        return self._copyable

    def _simulations(self, size: int, fields) -> _Simulations:
        names, sims = tuple(sorted(fields)), self._sims
        if sims is None or sims.size < size or sims.names != names:
            self._sims = sims = _Simulations(self, max(size, sims.size if sims else 0), names)
        return sims


class _Simulations:
    """A `mujoco.batch.Batch` of `size` simulations, and its bound arrays.

    Per-environment model fields are the batch's expanded fields, except where
    one cannot be (quadruped-escape's `hfield_data`): then each simulation runs
    on a model of its own, into which its environment's values are written.
    """

    def __init__(self, engine: Engine, size: int, names: tuple[str, ...]):
        self.size, self.names = size, names
        self.n_sub_steps = engine.n_sub_steps
        self.substep_sensors = engine.substep_sensors
        self.batch = mujoco_batch.Batch(engine.model, size, engine.threads)
        self.state = {name: self.batch.bind(name) for name in _STATE}
        self.derived = {name: self.batch.bind(name) for name in _DERIVED}
        self.ncon = self.batch.bind("ncon")
        self.flags = int(engine.model.opt.disableflags)
        self._integrator = engine.model.opt.integrator
        # A reset's forward pass runs with actuation disabled, as dm_control's does.
        self.still = self.flags | int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)
        self.models = None
        self._base_model = engine.model
        self._shared_model: mujoco.MjModel | None = None
        self._scratch_model: mujoco.MjModel | None = None
        self._scratch_data: dict[int, mujoco.MjData] = {}
        if set(names) <= set(mujoco_batch.MODEL_FIELDS):
            self.fields = {name: self.batch.expand(name) for name in names}
            self.disableflags = self.batch.expand("opt.disableflags")
        else:
            model = engine.copyable_model()
            self.models = [copy.deepcopy(model) for _ in range(size)]

    def run(self, time, fields, inputs, forward_only):
        n = time.shape[0]
        ids = None if n == self.size else np.arange(n, dtype=np.int32)
        self.state["time"][:n] = time
        for name in _INPUTS:
            self.state[name][:n] = inputs[name].reshape(self.state[name][:n].shape)
        self._write_fields(n, fields)
        self.batch.warning[:n] = 0
        if forward_only:
            self._write_flags(n, self.still)
            self.batch.forward(ids, stage=mujoco.mjtStage.mjSTAGE_ACC)
        else:
            self._step(n, ids)
        # MuJoCo's bad qpos/qvel/qacc warnings: C reset that simulation (dm_control raises).
        invalid = self.batch.warning[:n, _INVALID, 1].any(axis=1)
        out = {name: self.state[name][:n].copy() for name in _STATE_OUT}
        out.update({name: self.derived[name][:n].copy() for name in self.derived})
        for name in ("time", *_STATE_OUT[1:], "sensordata"):
            out[name][invalid] = np.nan
        return out.pop("time"), out

    def _step(self, n: int, ids) -> None:
        """n substeps, then `mj_step1`'s stages at the new state, as dm_control steps.

        Sensors feed nothing back into the dynamics, and a control step's observation
        reads only the last substep's acceleration-stage sensors and the other sensors
        of the final stages, so the substeps before the last skip them: the same states
        and sensordata, bit for bit (a batch's call resumes from its integration state).
        quadruped-escape's 20 rangefinders against its heightfield are 95 % of a
        substep's cost.
        """
        last = self.n_sub_steps if self.substep_sensors else 1
        if last < self.n_sub_steps:
            self._write_flags(n, self.flags | _NO_SENSORS)
            self.batch.step(ids, nstep=self.n_sub_steps - last)
        self._write_flags(n, self.flags)
        self.batch.step(ids, nstep=last, stage=mujoco.mjtStage.mjSTAGE_VEL)

    def step_in_reset(self, qpos, fields, n_steps):
        n = qpos.shape[0]
        ids = None if n == self.size else np.arange(n, dtype=np.int32)
        self._write_fields(n, fields)
        self._write_flags(n, self.flags)
        euler = self._integrator == mujoco.mjtIntegrator.mjINT_EULER
        # The first step finishes the reset's forward pass, which the batch cannot:
        # each simulation on a scratch MjData of its own model.
        for sim in range(n):
            model, data = self._one_simulation(sim)
            mujoco.mj_resetData(model, data)
            model.opt.disableflags = self.still
            mujoco.mj_forward(model, data)
            model.opt.disableflags = self.flags
            data.qpos[:] = qpos[sim]
            (mujoco.mj_step2 if euler else mujoco.mj_step)(model, data)
            for name in _STATE:
                self.state[name][sim] = np.reshape(getattr(data, name), self.state[name][sim].shape)
        self.batch.warning[:n] = 0
        if n_steps > 1:
            self.batch.step(ids, nstep=n_steps - 1)
        invalid = self.batch.warning[:n, _INVALID, 1].any(axis=1)
        out = {name: self.state[name][:n].copy() for name in RESET_STEPPED}
        for values in out.values():
            values[invalid] = np.nan
        return out

    def contacts(self, qpos, fields, slack):
        n = qpos.shape[0]
        ids = None if n == self.size else np.arange(n, dtype=np.int32)
        self.state["qpos"][:n] = qpos
        self._write_fields(n, fields)
        self._write_flags(n, self.flags)
        self.batch.forward(ids, stage=mujoco.mjtStage.mjSTAGE_POS)
        count = self.ncon[:n].copy()
        if slack is None:
            return count
        # The batch keeps no contacts: rerun the collision of each simulation that has
        # any, on its own model, and read them. Collision reads the poses alone, so
        # `mj_kinematics` before it finds the position stage's contacts.
        depth = np.zeros(n)
        for sim in np.flatnonzero(count):
            model, data = self._one_simulation(sim)
            data.qpos[:] = qpos[sim]
            mujoco.mj_kinematics(model, data)
            mujoco.mj_collision(model, data)
            contact = data.contact
            margin = np.maximum(*model.geom_margin[contact.geom.T])  # C's: the larger
            inside = margin - contact.dist
            count[sim] = np.count_nonzero(inside > slack)
            depth[sim] = max(inside.max(initial=0.0), 0.0)
        return count, depth

    def _one_simulation(self, sim: int) -> tuple[mujoco.MjModel, mujoco.MjData]:
        """Simulation `sim`'s model (its fields and flags) and a scratch MjData for it.

        Without per-environment fields every simulation's model is the batch's own
        (its flags as `_write_flags` last set them, the same for all), so one copy
        serves them all: materialising quadruped's model per simulation was 70 % of
        its reset's height search."""
        if self.models is not None:
            model = self.models[sim]
        elif not self.names:
            if self._shared_model is None:
                self._shared_model = copy.deepcopy(self._base_model)
            model = self._shared_model
            model.opt.disableflags = int(self.disableflags[sim])
        else:
            model = self._scratch_model = self.batch.get_model(sim, self._scratch_model)
        data = self._scratch_data.get(id(model))
        if data is None:
            data = self._scratch_data[id(model)] = mujoco.MjData(model)
        return model, data

    def _write_fields(self, n: int, fields) -> None:
        """Each environment's model fields into its simulation (read at the next call)."""
        if self.models is None:
            for name, values in fields.items():
                self.fields[name][:n] = values.reshape(self.fields[name][:n].shape)
            return
        for i, model in enumerate(self.models[:n]):
            for name, values in fields.items():
                getattr(model, name)[...] = values[i].reshape(getattr(model, name).shape)

    def _write_flags(self, n: int, flags: int) -> None:
        """The simulations' `opt.disableflags` for the next call (and any model fields)."""
        if self.models is None:
            self.disableflags[:n] = flags
            return
        for model in self.models[:n]:
            model.opt.disableflags = flags
        self.batch.set_models(self.models)  # the batch reads them afresh


def step(env, physics: physics_lib.Physics, sync: Callable) -> mjx.Data:
    """`physics_lib.step` on C MuJoCo: a control step of `env`, jittable and vmappable."""
    return _host_physics(env, physics, sync, forward_only=False)


def forward_without_actuation(env, physics: physics_lib.Physics, sync: Callable) -> mjx.Data:
    """`physics_lib.forward_without_actuation` on C MuJoCo (a reset's forward pass).

    C's contacts, constraint forces and sensors, as dm_control's after its reset,
    and no MJX collision or solver to compile: the C backend's resets compile
    only the task's code. Rejection samplers and quadruped's height search ask C
    for their contacts too (`contact_count`), so their loops compile no MJX
    kinematics or collision (`physics_lib.Physics.count_contacts`).
    """
    return _host_physics(env, physics, sync, forward_only=True)


def without_constraint_rows(data: mjx.Data) -> mjx.Data:
    """`data` without MJX's constraint and contact rows (`efc_*`, `contact`), as a
    C backend `State` carries it: C keeps its own, and MJX's stay unused. They were
    99 % of dog's state (12 MB of it per environment, `efc_J` alone 10 MB).

    A reset or `set_state` starts from a whole `mjx.Data` (a rejection sampler may
    run MJX's collision there); only what a `State` keeps is cut."""
    impl = data._impl
    cut = {
        f.name: getattr(impl, f.name)[:0]
        for f in dataclasses.fields(impl)
        if f.name.startswith("efc_")
    }
    cut["contact"] = jax.tree.map(lambda x: x[:0], impl.contact)
    return data.replace(_impl=impl.replace(**cut))


def with_constraint_rows(data: mjx.Data, rows: mjx.Data) -> mjx.Data:
    """`data` of a C backend `State` with `rows`' constraint and contact rows put
    back (`without_constraint_rows`' inverse in shape: MJX's structure)."""
    impl, full = data._impl, rows._impl
    put = {
        f.name: getattr(full, f.name) for f in dataclasses.fields(full) if f.name.startswith("efc_")
    }
    put["contact"] = full.contact
    return data.replace(_impl=impl.replace(**put))


def contact_count(env, physics: physics_lib.Physics, slack: float | None = None):
    """C MuJoCo's `ncon` at `physics`' qpos and model fields: dm_control's own test
    in its rejection samplers (`physics_lib.contact_count` on the C backend).
    Given `slack`, `(count, depth)` instead, as `physics_lib.contact_count_and_depth`
    defines them (`Engine.contacts`). Jittable and vmappable; nothing of MJX's
    collision is compiled."""
    engine = _engine(env)
    dtype = physics.data.qpos.dtype
    wire = _Wire(dtype)

    def host(qpos, fields):
        qpos, fields = jax.tree.map(wire.decode, (qpos, fields))
        lead = np.shape(qpos)[:-1]
        flat = {k: _flat(v, lead) for k, v in fields.items()}
        found = engine.contacts(_flat(qpos, lead), flat, slack)
        if slack is None:
            return found.astype(np.int32).reshape(lead)
        count, depth = found
        return count.astype(np.int32).reshape(lead), wire.send(depth.reshape(lead))

    operands = jax.tree.map(wire.encode, (physics.data.qpos, dict(physics.model_fields)))
    result = jax.ShapeDtypeStruct((), np.int32)
    if slack is not None:
        result = (result, wire.spec(()))
    found = jax.pure_callback(host, result, *operands, vmap_method="broadcast_all")
    if slack is None:
        return found
    count, depth = found
    return count, wire.receive(depth).astype(dtype)


def step_in_reset(env, physics: physics_lib.Physics, qpos: jax.Array, n_steps: int):
    """`Engine.step_in_reset` as JAX: dm_control's `physics.step(nstep=n_steps)` in a
    reset right after `qpos` is written, on C (`physics_lib.Physics.step_in_reset`).
    Jittable and vmappable; returns {qpos, qvel, act, qacc_warmstart} in the physics'
    dtype, float64 bit for bit where that is the dtype."""
    engine = _engine(env)
    data = physics.data
    wire = _Wire(data.qpos.dtype)
    tails = {name: getattr(data, name).shape for name in RESET_STEPPED}

    def host(qpos, fields):
        qpos, fields = jax.tree.map(wire.decode, (qpos, fields))
        lead = np.shape(qpos)[:-1]
        flat = {k: _flat(v, lead) for k, v in fields.items()}
        out = engine.step_in_reset(_flat(qpos, lead), flat, n_steps)
        return {k: wire.send(v.reshape(lead + tails[k])) for k, v in out.items()}

    operands = jax.tree.map(wire.encode, (qpos, dict(physics.model_fields)))
    result = {name: wire.spec(tails[name]) for name in RESET_STEPPED}
    out = jax.pure_callback(host, result, *operands, vmap_method="broadcast_all")
    return {k: wire.receive(v).astype(getattr(data, k).dtype) for k, v in out.items()}


def _host_physics(env, physics: physics_lib.Physics, sync: Callable, forward_only: bool):
    engine = _engine(env)
    data = physics.data
    fields = dict(physics.model_fields)  # the task's, and any a wrapper added
    stepper, from_c = None, None
    if not forward_only:
        # The FFI step returns, besides state, sensors and poses, what the task's sync
        # writes where C's `mj_step1` computes it too: then no sync runs in JAX.
        written = _written_by(sync, physics)
        if written is not None and {_leaf(path) for path in written} <= _SYNCED_FROM_C:
            from_c = tuple(path for path in written if path != "sensordata")
        outputs = (*_DERIVED, *map(_leaf, from_c or ()))
        stepper = engine.stepper(tuple(sorted(fields)), outputs)
    if stepper is None:
        time, out = _callback(engine, data, fields, forward_only)
    else:
        shapes = [data.time, *(getattr(data, name) for name in _OUTPUTS)]
        shapes += [_at(data, path) for path in from_c or ()]
        results = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in shapes]
        state = [data.time] + [getattr(data, name) for name in _INPUTS]
        time, *out = stepper(state, [fields[name] for name in stepper.fields], results)
        out, rest = dict(zip(_OUTPUTS, out)), out[len(_OUTPUTS) :]
        if from_c is not None:
            return data.replace(time=time, **out).tree_replace(dict(zip(from_c, rest)))
    # State, sensors and poses are C's (poses after `mj_step1`, as dm_control reads them);
    # the task's `sync` recomputes the rest it reads (centres of mass, velocities).
    data = data.replace(time=time, **out)
    data = sync(dataclasses.replace(physics, data=data))
    return data.replace(sensordata=out["sensordata"])


# What tasks' syncs compute, as C's `mj_step1` leaves it: dense fields whose MJX layout
# is C's. A step on the FFI path takes them from C instead of running the sync in JAX.
_SYNCED_FROM_C = frozenset(
    {
        "sensordata",
        "subtree_com",
        "cinert",
        "cdof",
        "cvel",
        "cdof_dot",
        "subtree_linvel",
        "subtree_angmom",
    }
)


def _written_by(sync: Callable, physics: physics_lib.Physics) -> tuple[str, ...] | None:
    """The fields of `physics.data` that `sync` writes, as `tree_replace` paths
    ("cvel", "_impl.cinert"), found by tracing it abstractly; None where its result
    is no longer `data`'s structure."""
    written = []

    def probe(data):
        synced = sync(dataclasses.replace(physics, data=data))
        before, tree = jax.tree_util.tree_flatten_with_path(data)
        after, synced_tree = jax.tree_util.tree_flatten_with_path(synced)
        if tree != synced_tree:
            written.append(None)
            return synced
        for (path, old), (_, new) in zip(before, after):
            if old is not new:
                written.append(".".join(str(getattr(key, "name", key)) for key in path))
        return synced

    jax.eval_shape(probe, physics.data)
    return None if None in written else tuple(written)


def _at(data: mjx.Data, path: str):
    for name in path.split("."):
        data = getattr(data, name)
    return data


def _leaf(path: str) -> str:
    """The MjData field a `tree_replace` path names ("_impl.cinert": "cinert")."""
    return path.split(".")[-1]


def _callback(engine: Engine, data: mjx.Data, fields, forward_only: bool):
    """The host call of a step or a reset's forward pass through `jax.pure_callback`:
    (time, {name: array} of `_OUTPUTS`)."""
    dtype = data.qpos.dtype
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
        time, out = engine.step(
            _flat(time, lead),
            {k: _flat(v, lead) for k, v in fields.items()},
            {k: _flat(v, lead) for k, v in inputs.items()},
            forward_only,
        )
        shaped = lambda x, tail: wire.send(x.reshape(lead + tail))
        return shaped(time, ()), {k: shaped(v, tails[k]) for k, v in out.items()}

    operands = jax.tree.map(wire.encode, (data.time, fields, inputs))
    results = jax.pure_callback(host, result_shape, *operands, vmap_method="broadcast_all")
    return jax.tree.map(wire.receive, results)


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
    """The Env's C engine, built on first use and kept with the Env."""
    return env._cached(
        "cpu_engine",
        lambda: Engine(env.mj_model, env.n_sub_steps, make_model=env.task.make_model),
    )


def _flat(x: Any, lead: tuple[int, ...]) -> np.ndarray:
    """`x` with batch axes `lead` (empty for one environment) as float64, the batch
    axes flattened into one: [prod(lead), one environment's shape...]."""
    return np.asarray(x, np.float64).reshape((int(np.prod(lead)),) + np.shape(x)[len(lead) :])
