"""Videos of a policy: a jitted rollout on the device, frames by `CpuRenderer`, mp4 by ffmpeg.

`record(env, path, seconds, policy, params)` writes one; `jaxcontrol video` is its
command line.

Encoding needs the `video` extra (`pip install 'jaxcontrol[video]'`:
imageio-ffmpeg, which ships an ffmpeg binary for common platforms); rendering
needs OpenGL (`MUJOCO_GL`, see `jaxcontrol.render.gl`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

MAX_FPS = 30.0


def _encoder():
    try:
        import imageio_ffmpeg  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        raise ImportError(
            "writing videos needs the video extra: pip install 'jaxcontrol[video]' (imageio-ffmpeg)"
        ) from e
    return imageio_ffmpeg


def require_encoder() -> None:
    """Raises an ImportError naming the extra to install unless mp4 encoding works."""
    _encoder()


def write_mp4(path: str, frames: Sequence[np.ndarray], fps: float) -> None:
    """Writes uint8 (H, W, 3) frames as an H.264 mp4 (yuv420p, playable everywhere).

    Raises:
      ValueError: for no frames, frames of other shapes, or an odd height or
        width (yuv420p halves both).
    """
    if not len(frames):
        raise ValueError("no frames to write")
    height, width, channels = np.shape(frames[0])
    if channels != 3 or height % 2 or width % 2:
        raise ValueError(f"frames must be (H, W, 3) with even H and W, got {np.shape(frames[0])}")
    writer = _encoder().write_frames(
        path,
        (width, height),
        fps=fps,
        codec="libx264",
        pix_fmt_out="yuv420p",
        macro_block_size=2,
        quality=7,
        ffmpeg_log_level="error",
    )
    with warnings.catch_warnings():  # ffmpeg starts by fork+exec, which JAX's warning
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)  # does not concern
        writer.send(None)
    try:
        for frame in frames:
            if np.shape(frame) != (height, width, 3):
                raise ValueError(f"frame of shape {np.shape(frame)}; expected {(height, width, 3)}")
            writer.send(np.ascontiguousarray(frame, np.uint8))
    finally:
        writer.close()


def read_mp4(path: str) -> tuple[dict, list[np.ndarray]]:
    """Decodes an mp4: (ffmpeg's metadata, the uint8 (H, W, 3) frames)."""
    reader = _encoder().read_frames(path)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
        meta = reader.__next__()
    width, height = meta["size"]
    frames = [np.frombuffer(b, np.uint8).reshape(height, width, 3) for b in reader]
    return meta, frames


def frame_stride(control_timestep: float, max_fps: float = MAX_FPS) -> int:
    """Control steps per frame so that the video plays in real time at <= max_fps."""
    return max(1, math.ceil(1.0 / (control_timestep * max_fps) - 1e-9))


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """What rendering needs of each recorded step (NumPy, leading time axis)."""

    qpos: np.ndarray
    qvel: np.ndarray
    act: np.ndarray
    model_fields: dict[str, np.ndarray]
    reward: np.ndarray


Policy = Callable[[Any, Any], jax.Array]  # policy(params, batched observation) -> [1, A]


def random_policy(env) -> tuple[Policy, Any]:
    """A uniform random policy over the action spec, as (policy, params=key)."""
    spec = env.action_spec()
    low, high = jnp.asarray(spec.minimum), jnp.asarray(spec.maximum)

    def policy(key, observation):
        del observation
        return jax.random.uniform(key, (1, *spec.shape), minval=low, maxval=high)

    return policy, None


@functools.partial(jax.jit, static_argnames=("env", "policy", "steps", "stride", "random"))
def _rollout(env, policy, params, key, steps: int, stride: int, random: bool):
    reset_key, act_key = jax.random.split(key)
    state = env.reset(reset_key)

    def record(s):
        return (s.data.qpos, s.data.qvel, s.data.act, dict(s.model_fields), s.reward)

    def one(state, key):
        batched = jax.tree.map(lambda x: x[None], state.observation)
        action = policy(key if random else params, batched)[0]
        stepped = env.step(state, action)
        # Past the time limit a new episode starts, as in a training loop.
        fresh = env.reset(stepped.key)
        return jax.tree.map(lambda a, b: jnp.where(stepped.last(), a, b), fresh, stepped)

    def frame(state, keys):
        state, _ = jax.lax.scan(lambda s, k: (one(s, k), None), state, keys)
        return state, record(state)

    keys = jax.random.split(act_key, steps * stride).reshape(steps, stride)
    first = record(state)
    _, frames = jax.lax.scan(frame, state, keys[: steps - 1])
    return jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, frames)


def rollout(
    env, seconds: float, policy=None, params=None, seed: int = 0
) -> tuple[Trajectory, float]:
    """Runs `policy` (a random one when None) for `seconds` of simulated time.

    Returns:
      The trajectory at one frame every `frame_stride` control steps, and the
      frames per second that play it in real time.
    """
    stride = frame_stride(env.control_timestep)
    steps = max(1, round(seconds / (env.control_timestep * stride)))
    random = policy is None
    if random:
        policy, params = random_policy(env)
    qpos, qvel, act, fields, reward = jax.device_get(
        _rollout(env, policy, params, jax.random.key(seed), steps, stride, random)
    )
    return Trajectory(qpos, qvel, act, fields, reward), 1.0 / (env.control_timestep * stride)


def render_trajectory(
    env, trajectory: Trajectory, height: int = 240, width: int = 320, camera_id=0
) -> list[np.ndarray]:
    """Each recorded step rendered by MuJoCo's OpenGL renderer."""
    from jaxcontrol.render.cpu import CpuRenderer  # pylint: disable=import-outside-toplevel

    with CpuRenderer(env, height, width) as renderer:
        return [
            renderer.render_physics(
                trajectory.qpos[t],
                trajectory.qvel[t],
                trajectory.act[t],
                {k: v[t] for k, v in trajectory.model_fields.items()},
                camera_id,
            )
            for t in range(len(trajectory.qpos))
        ]


def record(
    env,
    path: str,
    seconds: float,
    policy=None,
    params=None,
    *,
    seed: int = 0,
    height: int = 240,
    width: int = 320,
    camera_id=0,
) -> int:
    """Writes an mp4 of `policy` (random when None) acting in `env`; returns the frame count."""
    from jaxcontrol.render import cpu  # pylint: disable=import-outside-toplevel

    require_encoder()
    cpu.camera_index(env.unwrapped.mj_model, camera_id)  # fail before the rollout
    trajectory, fps = rollout(env, seconds, policy, params, seed)
    frames = render_trajectory(env, trajectory, height, width, camera_id)
    write_mp4(path, frames, fps)
    return len(frames)
