"""Field-by-field comparison of two compiled `mujoco.MjModel`s.

A neutral tool over models, with no dm_control in it: the C backend checks with it
that a model rebuilt without textures equals the textured one
(`cpu_physics.Engine.copyable_model`), and the model tests prove with it that
our `MjSpec` builders compile to exactly the physics of dm_control's XML models
(`mjcf.compare`). The comparison is generic over fields: every size
(`nq`, `nbody`, `nwrap`, ...), the names of every named object in id order,
every field of `opt`, `vis` and `stat`, and every array of `MjModel` (body,
geom, jnt, dof, actuator, tendon, wrap, site, cam, light, mat, tex, ...), is
compared, except for any field in `IGNORED_FIELDS` (each with its reason).
Enumerating the fields by introspection means fields added by future MuJoCo
versions, or used only by later domains (meshes, sensors, equalities), are
covered without edits here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import mujoco
import numpy as np

# Array fields deliberately not compared, each with its reason. Empty: so far
# every field, texture pixels (tex_data) included, can be made bit-identical.
IGNORED_FIELDS: dict[str, str] = {}

# Field-name prefixes that compiling without textures (`common.without_textures`)
# changes: the textures, the materials' references to them, the names and paths
# buffers (texture names and files are stored before later objects' ones; the
# names themselves are still compared per object) and the model's hash.
TEXTURE_FIELDS: tuple[str, ...] = (
    "tex_",
    "ntex",
    "mat_texid",
    "name_",
    "names",
    "nnames",
    "npaths",
    "paths",
    "nbuffer",
    "signature",
)

# Named object types, each with the MjModel size field that counts them.
NAMED_OBJECTS: dict[mujoco.mjtObj, str] = {
    mujoco.mjtObj.mjOBJ_BODY: "nbody",
    mujoco.mjtObj.mjOBJ_JOINT: "njnt",
    mujoco.mjtObj.mjOBJ_GEOM: "ngeom",
    mujoco.mjtObj.mjOBJ_SITE: "nsite",
    mujoco.mjtObj.mjOBJ_CAMERA: "ncam",
    mujoco.mjtObj.mjOBJ_LIGHT: "nlight",
    mujoco.mjtObj.mjOBJ_FLEX: "nflex",
    mujoco.mjtObj.mjOBJ_MESH: "nmesh",
    mujoco.mjtObj.mjOBJ_SKIN: "nskin",
    mujoco.mjtObj.mjOBJ_HFIELD: "nhfield",
    mujoco.mjtObj.mjOBJ_TEXTURE: "ntex",
    mujoco.mjtObj.mjOBJ_MATERIAL: "nmat",
    mujoco.mjtObj.mjOBJ_PAIR: "npair",
    mujoco.mjtObj.mjOBJ_EXCLUDE: "nexclude",
    mujoco.mjtObj.mjOBJ_EQUALITY: "neq",
    mujoco.mjtObj.mjOBJ_TENDON: "ntendon",
    mujoco.mjtObj.mjOBJ_ACTUATOR: "nu",
    mujoco.mjtObj.mjOBJ_SENSOR: "nsensor",
    mujoco.mjtObj.mjOBJ_NUMERIC: "nnumeric",
    mujoco.mjtObj.mjOBJ_TEXT: "ntext",
    mujoco.mjtObj.mjOBJ_TUPLE: "ntuple",
    mujoco.mjtObj.mjOBJ_KEY: "nkey",
    mujoco.mjtObj.mjOBJ_PLUGIN: "nplugin",
}

# Sub-structs of MjModel compared attribute by attribute (recursively).
STRUCTS: tuple[str, ...] = ("opt", "vis", "stat")

# Fields that must be among those compared: a guard against the introspection
# silently finding nothing (e.g. after a change of MuJoCo's Python bindings).
REQUIRED_FIELDS: tuple[str, ...] = (
    "nq",
    "nv",
    "nu",
    "na",
    "nbody",
    "njnt",
    "ngeom",
    "nsite",
    "ntendon",
    "nwrap",
    "ncam",
    "nlight",
    "nmat",
    "ntex",
    "names",
    "body_parentid",
    "body_mass",
    "body_inertia",
    "body_ipos",
    "body_iquat",
    "body_pos",
    "body_quat",
    "geom_type",
    "geom_size",
    "geom_pos",
    "geom_quat",
    "geom_bodyid",
    "geom_friction",
    "geom_condim",
    "geom_contype",
    "geom_conaffinity",
    "geom_solref",
    "geom_solimp",
    "geom_margin",
    "geom_gap",
    "geom_priority",
    "geom_rgba",
    "geom_matid",
    "jnt_type",
    "jnt_axis",
    "jnt_pos",
    "jnt_range",
    "jnt_limited",
    "jnt_stiffness",
    "jnt_solref",
    "jnt_solimp",
    "qpos0",
    "qpos_spring",
    "dof_damping",
    "dof_armature",
    "dof_frictionloss",
    "dof_bodyid",
    "actuator_trntype",
    "actuator_trnid",
    "actuator_gear",
    "actuator_ctrlrange",
    "actuator_ctrllimited",
    "actuator_forcerange",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_dyntype",
    "actuator_dynprm",
    "tendon_adr",
    "tendon_num",
    "tendon_range",
    "tendon_stiffness",
    "wrap_type",
    "wrap_objid",
    "wrap_prm",
    "site_type",
    "site_size",
    "site_pos",
    "site_quat",
    "site_bodyid",
    "cam_mode",
    "cam_pos",
    "cam_quat",
    "cam_fovy",
    "cam_targetbodyid",
    "light_pos",
    "light_dir",
    "light_type",
    "mat_rgba",
    "mat_texid",
    "tex_type",
    "tex_width",
    "tex_height",
    "opt.timestep",
    "opt.integrator",
    "opt.gravity",
    "opt.density",
    "opt.viscosity",
    "opt.wind",
    "opt.magnetic",
    "opt.iterations",
    "opt.ls_iterations",
    "opt.tolerance",
    "opt.solver",
    "opt.cone",
    "opt.jacobian",
    "opt.disableflags",
    "opt.enableflags",
    "vis.headlight.ambient",
    "vis.map.znear",
    "vis.quality.shadowsize",
    "stat.meaninertia",
)


def _public_attrs(obj: Any) -> Iterator[tuple[str, Any]]:
    """Yields (name, value) for the public, non-callable attributes of obj."""
    for name in dir(obj):
        if not name.startswith("_"):
            value = getattr(obj, name)
            if not callable(value):
                yield name, value


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _names(model: mujoco.MjModel, objtype: mujoco.mjtObj) -> list[str | None]:
    count = getattr(model, NAMED_OBJECTS[objtype])
    return [mujoco.mj_id2name(model, objtype, i) for i in range(count)]


def _diff_values(label: str, ours: Any, ref: Any, atol: float) -> list[str]:
    """Compares two scalars or arrays; returns mismatch messages."""
    a, b = np.asarray(ours), np.asarray(ref)
    if a.shape != b.shape:
        return [f"{label}: shape {a.shape} != {b.shape}"]
    if np.issubdtype(np.result_type(a, b), np.floating):
        # rtol=0 and the default atol=0 make this exact equality; NaNs in the
        # same places count as equal (MuJoCo uses NaN for "unset").
        bad = ~np.isclose(a, b, rtol=0, atol=atol, equal_nan=True)
    else:
        bad = a != b
    if not np.any(bad):
        return []
    if a.ndim == 0:
        return [f"{label}: {a.item()!r} != {b.item()!r}"]
    where = np.argwhere(bad)
    idx = tuple(int(i) for i in where[0])
    return [
        (
            f"{label}: {len(where)} element(s) differ, first at {list(idx)}: "
            f"{a[idx].item()!r} != {b[idx].item()!r}"
        )
    ]


_LEAF_TYPES = (bytes, str, bool, int, float, np.number, np.ndarray)


def _leaf_fields(label: str, obj: Any) -> Iterator[tuple[str, Any]]:
    """Yields (dotted name, value) for every leaf field of obj, recursively.

    Leaves are sizes, scalars, arrays and byte/str buffers; anything else
    (a struct such as `opt` or `vis.headlight`) is descended into.
    """
    for name, value in _public_attrs(obj):
        path = f"{label}.{name}" if label else name
        if isinstance(value, _LEAF_TYPES):
            yield path, value
        elif label or name in STRUCTS:
            yield from _leaf_fields(path, value)


def compared_fields(model: mujoco.MjModel) -> list[str]:
    """Returns the (dotted) names of all fields `compare_models` compares."""
    return [k for k, _ in _leaf_fields("", model) if k not in IGNORED_FIELDS]


def compare_models(
    ours: mujoco.MjModel,
    ref: mujoco.MjModel,
    atol: float = 0.0,
    ignore: tuple[str, ...] = (),
) -> list[str]:
    """Compares two compiled models field by field.

    Args:
        ours: The model under test.
        ref: The reference model (e.g. dm_control's).
        atol: Absolute tolerance for float fields (rtol is always 0). The
            default 0 demands bit-identical values.
        ignore: prefixes of (dotted) field names not to compare, such as
            `TEXTURE_FIELDS`; a named object type whose count field is ignored
            has its names skipped too.

    Returns:
        Human-readable mismatches, each `field: ours != ref`. An empty list
        means the models agree in every compared field.
    """
    out: list[str] = []
    fields_ours = dict(_leaf_fields("", ours))
    fields_ref = {
        k: v
        for k, v in _leaf_fields("", ref)
        if k not in IGNORED_FIELDS and not (ignore and k.startswith(ignore))
    }
    missing = [
        f for f in REQUIRED_FIELDS if f not in fields_ref and not (ignore and f.startswith(ignore))
    ]
    if missing:
        out.append(f"required fields not found, not compared: {missing}")

    # Integers (sizes, flags, enums) first: when sizes differ, most of the
    # mismatches that follow are consequences.
    ints = sorted(k for k, v in fields_ref.items() if _is_int(v))
    for name in ints:
        if fields_ours.get(name) != fields_ref[name]:
            out.append(f"{name}: {fields_ours.get(name)} != {fields_ref[name]}")

    for objtype, count in NAMED_OBJECTS.items():
        if ignore and count.startswith(ignore):
            continue
        names_ours, names_ref = _names(ours, objtype), _names(ref, objtype)
        if names_ours != names_ref:
            out.append(f"names of {objtype.name}: {names_ours} != {names_ref}")

    for name, value in sorted(fields_ref.items()):
        if name in ints:
            continue
        if name not in fields_ours:
            out.append(f"{name}: missing")
        elif isinstance(value, (bytes, str)):
            if fields_ours[name] != value:
                out.append(f"{name}: {fields_ours[name]!r} != {value!r}")
        else:
            out += _diff_values(name, fields_ours[name], value, atol)
    return out
