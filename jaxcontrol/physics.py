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

from jaxcontrol.collision import ray_hfield

Sync = Callable[["Physics"], mjx.Data]

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
    "subtree_linvel": ("body", _XYZ),
    "subtree_angmom": ("body", _XYZ),
    "cacc": ("body", None),
    "cfrc_int": ("body", None),
    "cfrc_ext": ("body", None),
    "xanchor": ("joint", _XYZ),
    "xaxis": ("joint", _XYZ),
    "qfrc_constraint": ("dof", None),
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
    "body_quat": ("body", _QUAT),
    "geom_size": ("geom", None),
    "geom_pos": ("geom", _XYZ),
    "geom_quat": ("geom", _QUAT),
    "geom_rgba": ("geom", None),
    "geom_friction": ("geom", None),
    "site_size": ("site", None),
    "site_pos": ("site", _XYZ),
    "site_quat": ("site", _QUAT),
    "site_rgba": ("site", None),
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
        try:
            array = getattr(self._source, field)
        except AttributeError:  # MJX keeps some derived data in its JAX backend part
            array = getattr(self._source._impl, field)
        return NamedArray(array, self._names, kind, columns)


@dataclasses.dataclass(frozen=True)
class _Named:
    data: _NamedFields
    model: _NamedFields
    mj_model: _NamedFields  # static NumPy constants, e.g. for reward bounds


# Model fields that MJX 3.17 keeps static (NumPy) but that may still vary per
# environment. Both stay static in the MJX model, whose pytree cannot hold a
# traced value in a static field (MJX vmaps over the model, e.g. in
# `xfrc_accumulate`, and unflattening then fails). The per-environment value is
# carried in `State.model_fields` and read through `physics.named.model`.
# `wrap_prm` is consumed by NumPy inside `mjx.tendon`, so `tendon` below
# recomputes the fixed tendons from the per-environment one. `site_size` reaches
# the physics only through touch sensors' zones, which keep the compiled sizes
# (known limitation: randomising a touch site's size does not change its zone).
STATIC_MODEL_FIELDS = ("site_size", "wrap_prm")
_KEPT_STATIC = STATIC_MODEL_FIELDS


def _mjx_leaves() -> set[str]:
    return {
        f.name
        for f in dataclasses.fields(mjx.Model)
        if f.type in (jax.Array, "jax.Array") and not f.name.startswith("_")
    }


def _render_only() -> set[str]:
    """MjModel arrays that mjx.Model lacks: MJX never reads them (e.g. site_rgba).

    A per-environment value is carried in the state for the CPU path and
    renderers, and has no effect on MJX physics.
    """
    mjx_fields = {f.name for f in dataclasses.fields(mjx.Model)}
    return {
        name
        for name in dir(mujoco.MjModel)
        if not name.startswith("_")
        and name not in mjx_fields
        and isinstance(getattr(_EMPTY_MODEL, name, None), np.ndarray)
    }


_EMPTY_MODEL = mujoco.MjModel.from_xml_string("<mujoco/>")


def per_env_model_fields() -> tuple[str, ...]:
    """The model fields that may take per-environment values (`State.model_fields`)."""
    return tuple(sorted(_mjx_leaves() | set(STATIC_MODEL_FIELDS) | _render_only()))


def check_model_fields(names) -> None:
    """Raises a ValueError naming the valid fields if a name cannot vary per env."""
    valid = per_env_model_fields()
    unknown = sorted(set(names) - set(valid))
    if unknown:
        raise ValueError(
            f"model field(s) {unknown} cannot vary per environment under MJX 3.17 "
            f"(unknown, or static in mjx.Model); valid fields: {', '.join(valid)}"
        )


# Fields that the step writes into the MJX model (the rest are carried only).
APPLIED_MODEL_FIELDS = frozenset(_mjx_leaves() | (set(STATIC_MODEL_FIELDS) - set(_KEPT_STATIC)))


class _ModelView:
    """Attribute access to a model that prefers the per-environment fields."""

    def __init__(self, model: mjx.Model, model_fields: Mapping[str, jax.Array]):
        self._model, self._fields = model, model_fields

    def __getattr__(self, name: str):
        if name in self._fields:
            return self._fields[name]
        return getattr(self._model, name)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Physics:
    """A read-only view of one environment's model and data for task code.

    Attributes:
      model: the `mjx.Model` with this environment's model fields applied.
      data: the `mjx.Data`.
      names: static name tables (not a pytree leaf).
      model_fields: this environment's own values of model fields (full arrays),
        e.g. a target's `geom_pos` drawn at reset. Empty for most tasks.
      count_contacts: where set (the C MuJoCo backend), `(physics, slack=None) ->
        C's ncon` at the physics' qpos and model fields (given `slack`, C's
        `(count, depth)`), which `contact_count` and `contact_count_and_depth` then
        return instead of MJX's. C needs only qpos: a loop that tests contacts
        needs no kinematics of its own there.
      step_in_reset: where set (the C backend), `(physics, qpos, n_steps) -> {qpos,
        qvel, act, qacc_warmstart}`: dm_control's `physics.step(nstep=n_steps)` in a
        reset right after the task writes `qpos`, stepped by C (cheetah's settle).
    """

    model: mjx.Model
    data: mjx.Data
    names: Names = dataclasses.field(metadata={"static": True})
    model_fields: dict[str, jax.Array] = dataclasses.field(default_factory=dict)
    count_contacts: Callable[..., Any] | None = dataclasses.field(
        default=None, metadata={"static": True}
    )
    step_in_reset: Callable[..., Any] | None = dataclasses.field(
        default=None, metadata={"static": True}
    )

    @classmethod
    def create(
        cls,
        model: mjx.Model,
        data: mjx.Data,
        names: Names,
        model_fields: Mapping[str, jax.Array] | None = None,
        count_contacts: Callable[..., Any] | None = None,
        step_in_reset: Callable[..., Any] | None = None,
    ) -> Physics:
        """A view of `model` with `model_fields` applied, as one environment sees it."""
        view = cls(model, data, names, count_contacts=count_contacts, step_in_reset=step_in_reset)
        return view.with_model(**(model_fields or {}))

    def with_model(self, **fields: jax.Array) -> Physics:
        """Returns this view with model fields overridden (full arrays, e.g. geom_pos).

        This is how a task writes dm_control's per-episode model edits, such as
        `physics.named.model.geom_pos['target'] = ...`:

            pos = physics.named.model.geom_pos.at["target"].set(xyz).array
            physics = physics.with_model(geom_pos=pos)
        """
        check_model_fields(fields)
        for name, value in fields.items():
            expected = np.shape(getattr(self.names.mj_model, name))
            if np.shape(value) != expected:
                raise ValueError(
                    f"model field {name} must have shape {expected}, got {np.shape(value)}"
                )
        # MjModel's shape, validated above, is applied in MJX's (cam_mat0: 9 -> 3x3).
        applied = {
            k: jnp.reshape(v, np.shape(getattr(self.model, k)))
            for k, v in fields.items()
            if k in APPLIED_MODEL_FIELDS
        }
        return dataclasses.replace(
            self,
            model=self.model.replace(**applied) if applied else self.model,
            model_fields={**self.model_fields, **fields},
        )

    def with_data(self, **fields: jax.Array) -> Physics:
        """Returns this view with `data` fields replaced (qpos, qvel, ...)."""
        return dataclasses.replace(self, data=self.data.replace(**fields))

    @property
    def named(self) -> _Named:
        return _Named(
            data=_NamedFields(self.data, self.names, _DATA_FIELDS),
            model=_NamedFields(
                _ModelView(self.model, self.model_fields), self.names, _MODEL_FIELDS
            ),
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


def tendon(physics: Physics) -> mjx.Data:
    """`mjx.tendon`, with this environment's `wrap_prm` in the fixed tendons.

    MJX reads `wrap_prm` as a compile-time constant, so a per-environment value
    (point_mass-hard's actuation directions) is applied here: the rows of the
    fixed tendons are recomputed from it, exactly as `mj_tendon` defines them
    (length = sum of coef * qpos, moment = coef at each joint's dof).
    """
    model, data = physics.model, physics.data
    data = mjx.tendon(model, data)
    wrap_prm = physics.model_fields.get("wrap_prm")
    if wrap_prm is None:
        return data
    m = physics.mj_model
    if model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4:
        raise ValueError("a per-environment wrap_prm needs an Euler or implicit integrator")
    wraps = np.nonzero(m.wrap_type == mujoco.mjtWrap.mjWRAP_JOINT)[0]
    starts, counts = m.tendon_adr, m.tendon_num
    tendon_of = np.array([np.nonzero((starts <= w) & (w < starts + counts))[0][0] for w in wraps])
    joints = m.wrap_objid[wraps]
    coef = wrap_prm[wraps]
    fixed = np.unique(tendon_of)
    length = jax.ops.segment_sum(coef * data.qpos[m.jnt_qposadr[joints]], tendon_of, m.ntendon)
    moment = data._impl.ten_J.at[fixed].set(0).at[tendon_of, m.jnt_dofadr[joints]].add(coef)
    return data.tree_replace(
        {"ten_length": data.ten_length.at[fixed].set(length[fixed]), "_impl.ten_J": moment}
    )


def sync_kinematics(physics: Physics) -> mjx.Data:
    """Nothing to add: `step` leaves body, geom and site poses current."""
    return physics.data


def sync_position(physics: Physics) -> mjx.Data:
    """Centres of mass, cameras, tendons and position sensors (poses are current)."""
    model = physics.model
    data = mjx.com_pos(model, physics.data)
    data = mjx.camlight(model, data)
    data = tendon(dataclasses.replace(physics, data=data))
    return mjx.sensor_pos(model, data)


def sync_subtree_velocity(physics: Physics) -> mjx.Data:
    """What `mj_step1` adds that the subtree-linvel sensor reads, and no more.

    The sensor (`mj_subtreeVel`) reads the centres of mass (`com_pos`) and the
    body velocities (`com_vel`); body poses are already current after a step.
    This is exact and skips the rest of `sync_full` (mass matrix, collision,
    constraints, bias forces), which no observation or reward of walker, hopper or
    cheetah reads.
    """
    model = physics.model
    data = mjx.com_pos(model, physics.data)
    data = mjx.com_vel(model, data)
    return mjx.sensor_vel(model, data)


def sync_full(physics: Physics) -> mjx.Data:
    """Everything `mj_step1` recomputes: positions, velocities and their sensors."""
    model = physics.model
    data = _position_after_kinematics(physics)
    data = mjx.sensor_pos(model, data)
    data = mjx.fwd_velocity(model, data)
    return mjx.sensor_vel(model, data)


def _position_after_kinematics(physics: Physics) -> mjx.Data:
    """`mjx.fwd_position` minus its opening `kinematics` (MuJoCo 3.17's stage order).

    With constraints disabled C MuJoCo skips collision detection altogether
    (`mj_collision` returns at once); MJX would still run every narrow phase
    and discard the contacts, so it is skipped here too.
    """
    model = physics.model
    data = mjx.com_pos(model, physics.data)
    data = mjx.camlight(model, data)
    data = tendon(dataclasses.replace(physics, data=data))
    data = mjx.crb(model, data)
    data = mjx.tendon_armature(model, data)
    data = mjx.factor_m(model, data)
    if not model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONSTRAINT:
        data = mjx.collision(model, data)
    data = mjx.make_constraint(model, data)
    return mjx.transmission(model, data)


def forward_after_kinematics(physics: Physics) -> mjx.Data:
    """`mjx.forward` for data whose kinematics already match its `qpos`.

    The same stages as `mjx.forward` in MuJoCo 3.17 (pinned), in the same order,
    without the opening `kinematics` pass. A test checks it against
    `mjx.forward` for every model in the registry.
    """
    model = physics.model
    data = _position_after_kinematics(physics)
    data = mjx.sensor_pos(model, data)
    data = mjx.fwd_velocity(model, data)
    data = mjx.sensor_vel(model, data)
    data = mjx.fwd_actuation(model, data)
    data = mjx.fwd_acceleration(model, data)
    if data._impl.efc_J.size == 0:  # no constraint rows: mjx.forward skips the solver too
        return data.replace(qacc=data.qacc_smooth)
    data = mjx.solve(model, data)
    return mjx.sensor_acc(model, data)


def forward(physics: Physics) -> mjx.Data:
    """`mjx.forward`, honouring this environment's model fields (and, unlike MJX,
    with rangefinders that see height fields, as C MuJoCo's do)."""
    data = mjx.kinematics(physics.model, physics.data)
    data = forward_after_kinematics(dataclasses.replace(physics, data=data))
    return rangefinders_with_height_fields(dataclasses.replace(physics, data=data))


def rangefinders_with_height_fields(physics: Physics) -> mjx.Data:
    """`physics.data` with its rangefinders cast against height fields too.

    MJX 3.17's ray casts skip height fields; C MuJoCo's do not (quadruped-escape's
    terrain). Run after `sensor_pos`. A no-op for models without both.
    """
    mj_model = physics.mj_model
    rangefinders = mj_model.sensor_type == mujoco.mjtSensor.mjSENS_RANGEFINDER
    if not (mj_model.nhfield and np.any(rangefinders)):
        return physics.data
    data = physics.data
    return data.replace(
        sensordata=ray_hfield.rangefinder_with_hfields(physics.model, data, data.sensordata)
    )


_INTEGRATORS = {
    mujoco.mjtIntegrator.mjINT_EULER: mjx.euler,
    mujoco.mjtIntegrator.mjINT_RK4: mjx.rungekutta4,
    mujoco.mjtIntegrator.mjINT_IMPLICITFAST: mjx.implicit,
}


def _substep(physics: Physics) -> mjx.Data:
    """`mjx.step` from current kinematics, ending with the kinematics of the new `qpos`."""
    model = physics.model
    integrate = _INTEGRATORS.get(model.opt.integrator)
    if integrate is None:
        valid = ", ".join(i.name for i in _INTEGRATORS)
        raise ValueError(f"MJX cannot integrate with {model.opt.integrator}; use one of {valid}")
    data = integrate(model, forward_after_kinematics(physics))
    return mjx.kinematics(model, data)


def step(physics: Physics, n_sub_steps: int, sync: Sync) -> mjx.Data:
    """Advances `n_sub_steps` physics steps, then synchronises derived fields.

    Equivalent to dm_control's `Physics.step(n_sub_steps)` (legacy step): the
    state trajectory of `n_sub_steps` `mj_step`s, followed by `mj_step1`'s
    kinematics and then `sync` for the rest of `mj_step1` a task reads.

    `physics.data`'s kinematics (`xpos`, `xmat`, geom and site poses) must match
    its `qpos`, as after `reset`, `set_state` or a previous `step`; each substep
    then skips the kinematics pass that opens `mjx.forward`.
    """

    def substep(data):
        return _substep(dataclasses.replace(physics, data=data))

    if n_sub_steps == 1:
        data = substep(physics.data)
    else:
        data, _ = jax.lax.scan(lambda d, _: (substep(d), None), physics.data, None, n_sub_steps)
    return sync(dataclasses.replace(physics, data=data))


def forward_without_actuation(physics: Physics) -> mjx.Data:
    """`mj_forward` with actuation disabled, as dm_control runs after a reset."""
    model = physics.model
    flags = model.opt.disableflags | mujoco.mjtDisableBit.mjDSBL_ACTUATION
    quiet = model.tree_replace({"opt.disableflags": flags})
    return forward(dataclasses.replace(physics, model=quiet))


# What `mjx.kinematics` (and C's `mj_kinematics`) computes from qpos.
KINEMATICS = (
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


def with_kinematics_left_to_c(physics: Physics) -> Physics:
    """`physics` with its poses (`KINEMATICS`) set to NaN, for the C backend's resets.

    A reset there ends with C's forward pass, which computes every pose from qpos,
    so a loop that tests contacts on C (`count_contacts`) skips MJX's kinematics.
    The poses it leaves behind belong to no state: NaN makes reading them loud."""
    data = physics.data
    stale = {name: jnp.full_like(getattr(data, name), jnp.nan) for name in KINEMATICS}
    return dataclasses.replace(physics, data=data.replace(**stale))


def contact_count(physics: Physics, slack: float = 0.0) -> jax.Array:
    """C MuJoCo's `ncon` for the current kinematics: contacts within their margin.

    dm_control's rejection samplers test `physics.data.ncon > 0` after a forward
    pass. C adds a contact when a pair is closer than its margin, so this
    counts MJX's candidate contacts with `dist < margin - slack` (C's rule at
    the default `slack` of 0). With contacts or constraints disabled C detects
    no contacts at all, and this is 0. On the C backend (`physics.count_contacts`)
    it is C's own count (at `slack` 0 its `ncon`), and no MJX collision is compiled.
    """
    if physics.count_contacts is not None:
        return (
            physics.count_contacts(physics)
            if slack == 0
            else physics.count_contacts(physics, slack)[0]
        )
    return contact_count_and_depth(physics, slack)[0]


def contact_count_and_depth(physics: Physics, slack: float = 0.0) -> tuple[jax.Array, jax.Array]:
    """`contact_count(physics, slack)`, and how far the deepest contact is inside its
    margin (0 where C detects none), from one collision pass (C's on the C backend)."""
    if physics.count_contacts is not None:
        return physics.count_contacts(physics, slack)
    inside = _inside_margin(physics)
    dtype = physics.data.qpos.dtype
    if inside is None:
        return jnp.int32(0), jnp.zeros((), dtype)
    count = jnp.sum(inside > slack).astype(jnp.int32)
    return count, jnp.max(inside, initial=0).astype(dtype)


def _inside_margin(physics: Physics) -> jax.Array | None:
    """margin - dist of every candidate contact (positive: C counts it), or None where
    C detects no contacts at all."""
    model, data = physics.model, physics.data
    disabled = mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    if model.opt.disableflags & disabled or data._impl.ncon == 0:
        return None
    if physics.mj_model.npair:
        raise NotImplementedError("contact_count does not handle explicit <pair> contacts")
    data = mjx.collision(model, data)
    contact = data._impl.contact
    return model.geom_margin[contact.geom1] + model.geom_margin[contact.geom2] - contact.dist


def is_finite(data: mjx.Data) -> jax.Array:
    """True where qpos, qvel and qacc are all finite (divergence check)."""
    return (
        jnp.all(jnp.isfinite(data.qpos))
        & jnp.all(jnp.isfinite(data.qvel))
        & jnp.all(jnp.isfinite(data.qacc))
    )
