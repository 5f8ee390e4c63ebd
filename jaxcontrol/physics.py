"""MJX physics with dm_control's step semantics, and named indexing.

dm_control's `Physics.step` finishes each control step with `mj_step1`, so every
position- and velocity-dependent quantity (`xpos`, `xmat`, sites, tendons,
position sensors) describes the *current* `qpos`/`qvel`, while acceleration
quantities (touch and force sensors, `qacc`) belong to the transition just taken.
A plain `mjx.step` leaves them one step stale. `step` below reproduces
dm_control without a second full forward pass: each substep ends with the
kinematics of its new `qpos`, and the next substep's forward pass starts from
them instead of computing them again. After the last substep, a task adds only
the rest of the synchronisation that it reads (nothing more by default).

Named indexing mirrors dm_control's `physics.named.data.qpos['slider']` and
`physics.named.data.xmat['pole_1', 'zz']`. Names resolve to NumPy indices at
trace time, so the jitted program only sees static gathers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

Sync = Callable[[mjx.Model, mjx.Data], mjx.Data]

_XYZ = ("x", "y", "z")
_MAT = ("xx", "xy", "xz", "yx", "yy", "yz", "zx", "zy", "zz")
_QUAT = ("qw", "qx", "qy", "qz")

# field -> (MuJoCo object type whose names index the rows, column names).
# Joint-indexed fields are special: their rows are qpos or dof addresses.
_DATA_FIELDS = {
    "qpos": ("qpos", None),
    "qvel": ("dof", None),
    "qacc": ("dof", None),
    "qfrc_applied": ("dof", None),
    "qfrc_actuator": ("dof", None),
    "qfrc_passive": ("dof", None),
    "qfrc_bias": ("dof", None),
    "ctrl": ("actuator", None),
    "act": ("actuator", None),
    "actuator_force": ("actuator", None),
    "actuator_length": ("actuator", None),
    "xpos": ("body", _XYZ),
    "xquat": ("body", _QUAT),
    "xmat": ("body", _MAT),
    "xipos": ("body", _XYZ),
    "ximat": ("body", _MAT),
    "subtree_com": ("body", _XYZ),
    "cvel": ("body", None),
    "xfrc_applied": ("body", None),
    "geom_xpos": ("geom", _XYZ),
    "geom_xmat": ("geom", _MAT),
    "site_xpos": ("site", _XYZ),
    "site_xmat": ("site", _MAT),
    "cam_xpos": ("camera", _XYZ),
    "cam_xmat": ("camera", _MAT),
    "ten_length": ("tendon", None),
    "ten_velocity": ("tendon", None),
    "sensordata": ("sensor", None),
}
_MODEL_FIELDS = {
    "body_mass": ("body", None),
    "body_pos": ("body", _XYZ),
    "geom_size": ("geom", None),
    "geom_pos": ("geom", _XYZ),
    "geom_rgba": ("geom", None),
    "geom_friction": ("geom", None),
    "site_size": ("site", None),
    "site_pos": ("site", _XYZ),
    "jnt_range": ("joint", None),
    "dof_damping": ("dof", None),
    "actuator_gear": ("actuator", None),
    "actuator_ctrlrange": ("actuator", None),
    "tendon_length0": ("tendon", None),
}
_OBJ = {
    "body": mujoco.mjtObj.mjOBJ_BODY,
    "joint": mujoco.mjtObj.mjOBJ_JOINT,
    "geom": mujoco.mjtObj.mjOBJ_GEOM,
    "site": mujoco.mjtObj.mjOBJ_SITE,
    "camera": mujoco.mjtObj.mjOBJ_CAMERA,
    "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR,
    "tendon": mujoco.mjtObj.mjOBJ_TENDON,
    "sensor": mujoco.mjtObj.mjOBJ_SENSOR,
}
# Number of qpos / dof entries per joint type (free, ball, slide, hinge).
_QPOS_SIZE = {0: 7, 1: 4, 2: 1, 3: 1}
_DOF_SIZE = {0: 6, 1: 3, 2: 1, 3: 1}

Key = str | int | slice | Sequence[str | int] | np.ndarray


class Names:
    """Static name -> index tables for one MjModel, built once per model."""

    def __init__(self, model: mujoco.MjModel):
        self.mj_model = model
        self._rows: dict[str, dict[str, int | np.ndarray]] = {}
        for kind, obj in _OBJ.items():
            count = {
                "body": model.nbody,
                "joint": model.njnt,
                "geom": model.ngeom,
                "site": model.nsite,
                "camera": model.ncam,
                "actuator": model.nu,
                "tendon": model.ntendon,
                "sensor": model.nsensor,
            }[kind]
            table = {}
            for i in range(count):
                name = mujoco.mj_id2name(model, obj, i)
                if not name:
                    continue
                if kind == "sensor":  # a sensor can span several sensordata entries
                    adr, dim = model.sensor_adr[i], model.sensor_dim[i]
                    table[name] = np.arange(adr, adr + dim)
                else:
                    table[name] = i
            self._rows[kind] = table
        qpos, dof = {}, {}
        for j in range(model.njnt):
            name = mujoco.mj_id2name(model, _OBJ["joint"], j)
            if not name:
                continue
            jtype = int(model.jnt_type[j])
            qadr, dadr = model.jnt_qposadr[j], model.jnt_dofadr[j]
            qpos[name] = np.arange(qadr, qadr + _QPOS_SIZE[jtype])
            dof[name] = np.arange(dadr, dadr + _DOF_SIZE[jtype])
        self._rows["qpos"] = qpos
        self._rows["dof"] = dof

    def rows(self, kind: str) -> Mapping[str, int | np.ndarray]:
        """Returns the name -> row index table for an object kind."""
        return self._rows[kind]

    def index(self, kind: str, key: Key) -> Any:
        """Resolves a row key (name, list of names, int, slice) to an index."""
        table = self._rows[kind]
        if isinstance(key, str):
            return _lookup(table, key, kind)
        if isinstance(key, (list, tuple)) and key and all(isinstance(k, str) for k in key):
            parts = [np.atleast_1d(_lookup(table, k, kind)) for k in key]
            return np.concatenate(parts)
        return key


def _lookup(table, name, kind):
    try:
        return table[name]
    except KeyError:
        valid = ", ".join(sorted(table)) or "(none)"
        raise KeyError(f"no {kind} named {name!r}; valid names: {valid}") from None


@dataclasses.dataclass(frozen=True)
class NamedArray:
    """An array whose rows (and columns, for poses) can be indexed by name."""

    array: jax.Array
    names: Names
    kind: str
    columns: tuple[str, ...] | None = None

    def _full(self):
        if self.columns is not None:
            return self.array.reshape(self.array.shape[0], len(self.columns))
        return self.array

    def _index(self, key):
        if isinstance(key, tuple) and len(key) == 2 and self._full().ndim == 2:
            row, col = key
            return self.names.index(self.kind, row), self._column(col)
        return self.names.index(self.kind, key)

    def _column(self, col):
        if isinstance(col, str):
            return self._col_lookup(col)
        if isinstance(col, (list, tuple)) and col and all(isinstance(c, str) for c in col):
            return np.array([self._col_lookup(c) for c in col])
        return col

    def _col_lookup(self, col):
        if self.columns is None or col not in self.columns:
            raise KeyError(f"column {col!r} is not one of {self.columns}")
        return self.columns.index(col)

    def __getitem__(self, key: Key | tuple[Key, Any]) -> jax.Array:
        index = self._index(key)
        if isinstance(index, tuple):
            row, col = index
            full = self._full()
            if isinstance(row, np.ndarray) and isinstance(col, np.ndarray):
                return full[row][:, col]
            return full[row, col]
        return self._full()[index]

    @property
    def at(self) -> _NamedAt:
        """Functional update by name: `named.at['slider'].set(v).array`."""
        return _NamedAt(self)


@dataclasses.dataclass(frozen=True)
class _NamedAt:
    named: NamedArray

    def __getitem__(self, key):
        return _NamedUpdate(self.named, key)


@dataclasses.dataclass(frozen=True)
class _NamedUpdate:
    named: NamedArray
    key: Any

    def set(self, value) -> NamedArray:
        """Returns a NamedArray with the entries set (take `.array` at the end)."""
        return self._apply(lambda ref: ref.set(value))

    def add(self, value) -> NamedArray:
        return self._apply(lambda ref: ref.add(value))

    def _apply(self, update) -> NamedArray:
        full = self.named._full()
        new = update(full.at[self.named._index(self.key)])
        return dataclasses.replace(self.named, array=new.reshape(self.named.array.shape))


class _NamedFields:
    def __init__(self, source, names: Names, fields):
        self._source, self._names, self._fields = source, names, fields

    def __getattr__(self, field: str) -> NamedArray:
        if field.startswith("_"):
            raise AttributeError(field)
        try:
            kind, columns = self._fields[field]
        except KeyError:
            raise AttributeError(
                f"no named field {field!r}; valid fields: {', '.join(sorted(self._fields))}"
            ) from None
        array = getattr(self._source, field)
        return NamedArray(array, self._names, kind, columns)


@dataclasses.dataclass(frozen=True)
class _Named:
    data: _NamedFields
    model: _NamedFields
    mj_model: _NamedFields  # static NumPy constants, e.g. for reward bounds


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Physics:
    """A read-only view of one environment's model and data for task code.

    Attributes:
      model: the `mjx.Model` (with any per-episode overrides applied).
      data: the `mjx.Data`.
      names: static name tables (not a pytree leaf).
    """

    model: mjx.Model
    data: mjx.Data
    names: Names = dataclasses.field(metadata={"static": True})

    @property
    def named(self) -> _Named:
        return _Named(
            data=_NamedFields(self.data, self.names, _DATA_FIELDS),
            model=_NamedFields(self.model, self.names, _MODEL_FIELDS),
            mj_model=_NamedFields(self.names.mj_model, self.names, _MODEL_FIELDS),
        )

    @property
    def mj_model(self) -> mujoco.MjModel:
        """The static CPU model (for reading constants at trace time)."""
        return self.names.mj_model

    def position(self) -> jax.Array:
        """Generalised positions, like dm_control's `physics.position()`."""
        return self.data.qpos

    def velocity(self) -> jax.Array:
        """Generalised velocities, like dm_control's `physics.velocity()`."""
        return self.data.qvel

    def control(self) -> jax.Array:
        """The last control signal as given (unclipped), like dm_control's."""
        return self.data.ctrl

    def time(self) -> jax.Array:
        return self.data.time

    def timestep(self) -> float:
        return self.model.opt.timestep


def sync_kinematics(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """Nothing to add: `step` leaves body, geom and site poses current."""
    del model
    return data


def sync_position(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """Centres of mass, cameras, tendons and position sensors (poses are current)."""
    data = mjx.com_pos(model, data)
    data = mjx.camlight(model, data)
    data = mjx.tendon(model, data)
    return mjx.sensor_pos(model, data)


def sync_full(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """Everything `mj_step1` recomputes: positions, velocities and their sensors."""
    data = _position_after_kinematics(model, data)
    data = mjx.sensor_pos(model, data)
    data = mjx.fwd_velocity(model, data)
    return mjx.sensor_vel(model, data)


def _position_after_kinematics(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """`mjx.fwd_position` minus its opening `kinematics` (MuJoCo 3.17's stage order)."""
    data = mjx.com_pos(model, data)
    data = mjx.camlight(model, data)
    data = mjx.tendon(model, data)
    data = mjx.crb(model, data)
    data = mjx.tendon_armature(model, data)
    data = mjx.factor_m(model, data)
    data = mjx.collision(model, data)
    data = mjx.make_constraint(model, data)
    return mjx.transmission(model, data)


def forward_after_kinematics(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """`mjx.forward` for data whose kinematics already match its `qpos`.

    The same stages as `mjx.forward` in MuJoCo 3.17 (pinned), in the same order,
    without the opening `kinematics` pass. A test checks it against
    `mjx.forward` for every model in the registry.
    """
    data = _position_after_kinematics(model, data)
    data = mjx.sensor_pos(model, data)
    data = mjx.fwd_velocity(model, data)
    data = mjx.sensor_vel(model, data)
    data = mjx.fwd_actuation(model, data)
    data = mjx.fwd_acceleration(model, data)
    if data._impl.efc_J.size == 0:  # no constraint rows: mjx.forward skips the solver too
        return data.replace(qacc=data.qacc_smooth)
    data = mjx.solve(model, data)
    return mjx.sensor_acc(model, data)


_INTEGRATORS = {
    mujoco.mjtIntegrator.mjINT_EULER: mjx.euler,
    mujoco.mjtIntegrator.mjINT_RK4: mjx.rungekutta4,
    mujoco.mjtIntegrator.mjINT_IMPLICITFAST: mjx.implicit,
}


def _substep(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """`mjx.step` from current kinematics, ending with the kinematics of the new `qpos`."""
    integrate = _INTEGRATORS.get(model.opt.integrator)
    if integrate is None:
        valid = ", ".join(i.name for i in _INTEGRATORS)
        raise ValueError(f"MJX cannot integrate with {model.opt.integrator}; use one of {valid}")
    data = integrate(model, forward_after_kinematics(model, data))
    return mjx.kinematics(model, data)


def step(model: mjx.Model, data: mjx.Data, n_sub_steps: int, sync: Sync) -> mjx.Data:
    """Advances `n_sub_steps` physics steps, then synchronises derived fields.

    Equivalent to dm_control's `Physics.step(n_sub_steps)` (legacy step): the
    state trajectory of `n_sub_steps` `mj_step`s, followed by `mj_step1`'s
    kinematics and then `sync` for the rest of `mj_step1` a task reads.

    `data`'s kinematics (`xpos`, `xmat`, geom and site poses) must match its
    `qpos`, as after `reset`, `set_state` or a previous `step`; each substep
    then skips the kinematics pass that opens `mjx.forward`.
    """
    if n_sub_steps == 1:
        data = _substep(model, data)
    else:
        data, _ = jax.lax.scan(
            lambda d, _: (_substep(model, d), None), data, None, length=n_sub_steps
        )
    return sync(model, data)


def forward_without_actuation(model: mjx.Model, data: mjx.Data) -> mjx.Data:
    """`mj_forward` with actuation disabled, as dm_control runs after a reset."""
    flags = model.opt.disableflags | mujoco.mjtDisableBit.mjDSBL_ACTUATION
    quiet = model.tree_replace({"opt.disableflags": flags})
    return mjx.forward(quiet, data)


def is_finite(data: mjx.Data) -> jax.Array:
    """True where qpos, qvel and qacc are all finite (divergence check)."""
    return (
        jnp.all(jnp.isfinite(data.qpos))
        & jnp.all(jnp.isfinite(data.qvel))
        & jnp.all(jnp.isfinite(data.qacc))
    )
