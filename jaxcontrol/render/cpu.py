"""Faithful images of a `State` through MuJoCo's own OpenGL renderer, for people.

`CpuRenderer` draws one environment's state with `mujoco.Renderer` on a private
copy of the Env's CPU model (`env.mj_model`, dm_control's model field for field,
cameras, lights, materials and skybox included): it writes in the state's
`qpos`, `qvel`, `act` and per-environment model fields (a target's position,
say), recomputes the kinematics with `mj_forward` and renders. The image is
then dm_control's `physics.render` of the same state (tests/render/test_render.py).

Needs OpenGL: see `jaxcontrol.render.gl` for `MUJOCO_GL`. Learning from pixels
uses the pure-JAX renderer instead (`jaxcontrol.wrappers.Pixels`).
"""

from __future__ import annotations

import atexit
import collections
import copy

import jax
import mujoco
import numpy as np

from jaxcontrol.render import gl


def camera_index(mj_model: mujoco.MjModel, camera_id: int | str) -> int:
    """A camera id or name as an index in [-1, ncam) (-1: MuJoCo's free camera).

    Raises:
      ValueError: naming the model's cameras, for an unknown id or name.
    """
    names = [
        mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(mj_model.ncam)
    ]
    valid = f"valid: -1 (free camera), {', '.join(f'{i} ({n})' for i, n in enumerate(names))}"
    if isinstance(camera_id, str):
        if camera_id not in names:
            raise ValueError(f"no camera named {camera_id!r}; {valid}")
        return names.index(camera_id)
    if isinstance(camera_id, bool) or not isinstance(camera_id, (int, np.integer)):
        raise TypeError(f"camera_id must be an int or a name, got {camera_id!r}; {valid}")
    if not -1 <= camera_id < mj_model.ncam:
        raise ValueError(f"camera_id {camera_id} out of range; {valid}")
    return int(camera_id)


def check_size(height: int, width: int, limit: tuple[int, int] | None = None) -> None:
    """Raises a ValueError unless height and width are positive ints within `limit`."""
    for name, value in (("height", height), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if limit is not None and (height > limit[0] or width > limit[1]):
        raise ValueError(
            f"{height}x{width} exceeds the model's offscreen framebuffer {limit[0]}x{limit[1]} "
            "(height x width; MjModel.vis.global_.offheight/offwidth)"
        )


def pick(state, index: int | None):
    """The physics of one environment of `state` as NumPy: qpos, qvel, act, model_fields.

    `index` picks one environment of a batch; None for an unbatched state.
    """
    shape = tuple(getattr(state.data.qpos, "shape", np.shape(state.data.qpos)))
    batched = len(shape) == 2
    if batched and index is None:
        raise ValueError(
            f"state holds a batch of {shape[0]} environments; pass index=i to render the i-th"
        )
    if not batched and index is not None:
        raise ValueError(f"index={index} given, but state holds one environment (no batch axis)")
    parts = (state.data.qpos, state.data.qvel, state.data.act, dict(state.model_fields))
    if batched:
        size = shape[0]
        if not -size <= index < size:
            raise ValueError(f"index {index} out of range for a batch of {size}")
        parts = jax.tree.map(lambda x: x[index], parts)
    return jax.tree.map(np.asarray, jax.device_get(parts))


class CpuRenderer:
    """Renders states of one Env with MuJoCo's OpenGL renderer (`mujoco.Renderer`).

    Use as a context manager, or call `close()`, to free the GL context.
    """

    def __init__(self, env, height: int = 240, width: int = 320):
        env = env.unwrapped
        model = env.mj_model
        check_size(height, width, (model.vis.global_.offheight, model.vis.global_.offwidth))
        gl.require()
        self.env, self.height, self.width = env, height, width
        self._model = copy.copy(model)  # written per state; the Env's stays pristine
        self._data = mujoco.MjData(self._model)
        self._written: set[str] = set()
        self._uploaded_hfield = self._model.hfield_data.copy()  # what GL holds
        self._renderer = mujoco.Renderer(self._model, height, width)
        # dm_control's scene options: MuJoCo's defaults without rangefinder rays.
        self._scene_option = mujoco.MjvOption()
        self._scene_option.flags[mujoco.mjtVisFlag.mjVIS_RANGEFINDER] = False

    def _set(self, qpos, qvel, act, model_fields) -> None:
        for name in self._written - set(model_fields):  # undo what an earlier state changed
            getattr(self._model, name)[...] = getattr(self.env.mj_model, name)
        for name, value in model_fields.items():
            getattr(self._model, name)[...] = value
        self._written = set(model_fields)
        if not np.array_equal(self._model.hfield_data, self._uploaded_hfield):
            self._upload_height_fields()
        self._data.qpos[:], self._data.qvel[:] = qpos, qvel
        if self._model.na:
            self._data.act[:] = act
        mujoco.mj_forward(self._model, self._data)

    def _upload_height_fields(self) -> None:
        """The GL context keeps its own copy of each height field's mesh: a per-episode
        terrain (quadruped-escape's `hfield_data`) is drawn only once uploaded again."""
        self._renderer._gl_context.make_current()
        for hfield in range(self._model.nhfield):
            mujoco.mjr_uploadHField(self._model, self._renderer._mjr_context, hfield)
        self._uploaded_hfield = self._model.hfield_data.copy()

    def render(
        self,
        state,
        camera_id: int | str = 0,
        *,
        index: int | None = None,
        segmentation: bool = False,
    ) -> np.ndarray:
        """One frame of `state` (the `index`-th environment of a batch).

        Returns:
          uint8 (height, width, 3) RGB; with `segmentation`, int32 (height,
          width, 2): the id and `mjtObj` type of the object seen at each pixel
          (geom 5, site 6, tendon 18), -1 where none is (as dm_control's
          `physics.render(segmentation=True)`).
        """
        return self.render_physics(*pick(state, index), camera_id, segmentation=segmentation)

    def render_physics(
        self, qpos, qvel, act, model_fields, camera_id: int | str = 0, *, segmentation=False
    ) -> np.ndarray:
        """`render` from one environment's physics as NumPy (as `pick` returns it)."""
        camera = camera_index(self._model, camera_id)
        self._set(qpos, qvel, act, model_fields)
        if segmentation:
            self._renderer.enable_segmentation_rendering()
        try:
            self._renderer.update_scene(self._data, camera=camera, scene_option=self._scene_option)
            return self._renderer.render().copy()
        finally:
            if segmentation:
                self._renderer.disable_segmentation_rendering()

    def close(self) -> None:
        # MjrContext.free() frees GL objects of whichever context is current, so
        # make this renderer's own context current first (another may be).
        context = getattr(self._renderer, "_gl_context", None)
        if context is not None:
            context.make_current()
        self._renderer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_OPEN: collections.OrderedDict = collections.OrderedDict()
_MAX_OPEN = 4


def render(env, state, height=240, width=320, camera_id=0, *, index=None) -> np.ndarray:
    """`CpuRenderer(env, height, width).render(state, camera_id, index=index)`, reusing
    the last few renderers (their GL contexts are freed at exit)."""
    key = (env.unwrapped, height, width)
    renderer = _OPEN.pop(key, None)
    if renderer is None:
        renderer = CpuRenderer(env, height, width)
        while len(_OPEN) >= _MAX_OPEN:
            _OPEN.popitem(last=False)[1].close()
    _OPEN[key] = renderer
    return renderer.render(state, camera_id, index=index)


@atexit.register
def _close_all() -> None:
    while _OPEN:
        _OPEN.popitem()[1].close()
