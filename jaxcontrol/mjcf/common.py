"""Visual assets and settings shared by every domain of the suite.

The same colours, textures and visual settings dm_control's suite domains
share (through their common includes), added to an `MjSpec` in code.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import mujoco

# False inside `without_textures()`.
_TEXTURES = contextvars.ContextVar("jaxcontrol_mjcf_textures", default=True)

# Material name -> rgba. Insertion order is material id order (after "grid").
MATERIAL_RGBA: dict[str, tuple[float, float, float, float]] = {
    "self": (0.7, 0.5, 0.3, 1.0),
    "self_default": (0.7, 0.5, 0.3, 1.0),
    "self_highlight": (0.0, 0.5, 0.3, 1.0),
    "effector": (0.7, 0.4, 0.2, 1.0),
    "effector_default": (0.7, 0.4, 0.2, 1.0),
    "effector_highlight": (0.0, 0.5, 0.3, 1.0),
    "decoration": (0.3, 0.5, 0.7, 1.0),
    "eye": (0.0, 0.2, 1.0, 1.0),
    "target": (0.6, 0.3, 0.3, 1.0),
    "target_default": (0.6, 0.3, 0.3, 1.0),
    "target_highlight": (0.6, 0.3, 0.3, 0.4),
    "site": (0.5, 0.5, 0.5, 0.3),
}


def add_visual_settings(spec: mujoco.MjSpec) -> None:
    """Sets the headlight, near clipping plane and shadow map resolution."""
    spec.visual.headlight.ambient = (0.4, 0.4, 0.4)
    spec.visual.headlight.diffuse = (0.8, 0.8, 0.8)
    spec.visual.headlight.specular = (0.1, 0.1, 0.1)
    spec.visual.map.znear = 0.01
    spec.visual.quality.shadowsize = 2048


def add_skybox(spec: mujoco.MjSpec) -> None:
    """Adds the suite's gradient skybox texture."""
    spec.add_texture(
        name="skybox",
        type=mujoco.mjtTexture.mjTEXTURE_SKYBOX,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
        rgb1=(0.4, 0.6, 0.8),
        rgb2=(0.0, 0.0, 0.0),
        width=800,
        height=800,
        mark=mujoco.mjtMark.mjMARK_RANDOM,
        markrgb=(1.0, 1.0, 1.0),
    )


def add_textures(spec: mujoco.MjSpec) -> None:
    """Adds the gradient skybox and the checkered 'grid' floor texture."""
    add_skybox(spec)
    spec.add_texture(
        name="grid",
        type=mujoco.mjtTexture.mjTEXTURE_2D,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        rgb1=(0.1, 0.2, 0.3),
        rgb2=(0.2, 0.3, 0.4),
        width=300,
        height=300,
        mark=mujoco.mjtMark.mjMARK_EDGE,
        markrgb=(0.2, 0.3, 0.4),
    )


def add_materials(spec: mujoco.MjSpec) -> None:
    """Adds the 'grid' floor material and the named colour materials."""
    grid = spec.add_material(name="grid", texrepeat=(1.0, 1.0), texuniform=True, reflectance=0.2)
    grid.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "grid"
    for name, rgba in MATERIAL_RGBA.items():
        spec.add_material(name=name, rgba=rgba)


def add_common_assets(spec: mujoco.MjSpec) -> None:
    """Adds the shared visual settings, textures and materials to `spec`.

    Args:
        spec: The spec to modify in place.
    """
    add_visual_settings(spec)
    add_textures(spec)
    add_materials(spec)


def new_spec(model_name: str) -> mujoco.MjSpec:
    """Returns an empty spec named `model_name` with the common assets."""
    spec = mujoco.MjSpec()
    spec.modelname = model_name
    add_common_assets(spec)
    return spec


@contextlib.contextmanager
def without_textures() -> Iterator[None]:
    """Within it, the domains' `make_model`s compile without textures.

    Physics never reads a texture, but the suite's skybox alone is 11.5 MB of every
    model. The C backend's per-environment model copies (fields that
    `mujoco.batch` cannot expand, such as quadruped-escape's terrain) are made from
    such a model; `model_diff.compare_models(..., ignore=model_diff.TEXTURE_FIELDS)`
    proves it equal to the textured one in everything else.
    """
    token = _TEXTURES.set(False)
    try:
        yield
    finally:
        _TEXTURES.reset(token)


def compile_spec(spec: mujoco.MjSpec) -> mujoco.MjModel:
    """Compiles `spec`, first dropping its textures inside `without_textures()`.

    Every domain's `make_model` compiles through this. Dropping a texture clears
    the materials' references to it; nothing else changes.
    """
    if not _TEXTURES.get():
        for texture in list(spec.textures):
            spec.delete(texture)
        for material in spec.materials:
            for role in range(len(material.textures)):
                material.textures[role] = ""
    return spec.compile()


def set_total_mass(model: mujoco.MjModel, total_mass: float) -> None:
    """Scales a compiled model's masses and inertias to `total_mass`, in place.

    What MJCF's `<compiler settotalmass=...>` did at compile time, which MuJoCo
    has deprecated: `mj_setTotalmass`, then `mj_setConst` for the constants derived
    from the masses. The compiler's mass statistics (`stat.meanmass`,
    `stat.meaninertia`, the latter scaling the solver's tolerance) are recomputed
    as the compiler computes them, summed in body and dof order, so the result is
    bit-identical to the compiler's.
    """
    mujoco.mj_setTotalmass(model, total_mass)
    mujoco.mj_setConst(model, mujoco.MjData(model))
    model.stat.meanmass = _sequential_mean(model.body_mass[1:])
    model.stat.meaninertia = _sequential_mean(model.dof_M0)


def _sequential_mean(values) -> float:
    total = 0.0
    for value in values:
        total += float(value)
    return total / len(values)
