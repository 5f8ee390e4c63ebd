"""A trained policy, evaluated inside dm_control itself.

The policy acts in ``dm_control.suite``'s own environment of its task: dm_control's
resets, physics, rewards and observations and, for a run that learned from pixels,
the images of MuJoCo's OpenGL renderer (``physics.render``, what
``dm_control.suite.wrappers.pixels`` adds) instead of ours. The run's wrappers are
rebuilt around it in numpy: action repeat, and the same image size, camera and
frame stack. The returns say how well what was learned in jaxcontrol carries over
to the suite that published numbers come from.

Same protocol as ``evaluation.evaluate``: the deterministic policy, whole episodes
from fresh resets, the plain sum of rewards.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any

import jax
import numpy as np

from jaxcontrol import wrappers
from jaxcontrol.agents.common.evaluation import summarize
from jaxcontrol.reference.episodes import episode_steps
from jaxcontrol.reference.suite import reference_for


@dataclasses.dataclass(frozen=True)
class RunWrappers:
    """What a run's wrapper stack does, as dm_control's side must redo it.

    Attributes:
      action_repeat: control steps per policy step.
      pixels: the ``Pixels`` wrapper's settings, or None for state observations.
      frames: images stacked along the channel axis (1: no ``FrameStack``).
    """

    action_repeat: int = 1
    pixels: wrappers.Pixels | None = None
    frames: int = 1

    @classmethod
    def of(cls, env: Any) -> RunWrappers:
        """Reads a stack of ``FrameStack``, ``Pixels`` and ``ActionRepeat`` over a task.

        Raises:
          ValueError: for any other wrapper, or a frame stack that is not of the images.
        """
        found = {}
        layer = env
        while isinstance(layer, wrappers.Wrapper):
            kind = type(layer)
            if kind not in (wrappers.FrameStack, wrappers.Pixels, wrappers.ActionRepeat):
                raise ValueError(
                    f"evaluating in dm_control rebuilds ActionRepeat, Pixels and FrameStack "
                    f"only; this env also has {kind.__name__}"
                )
            found[kind] = layer
            layer = layer.env
        pixels = found.get(wrappers.Pixels)
        stack = found.get(wrappers.FrameStack)
        if stack is not None and (
            pixels is None or stack.observation_key != pixels.observation_key
        ):
            raise ValueError("evaluating in dm_control stacks frames of Pixels' images only")
        repeat = found.get(wrappers.ActionRepeat)
        return cls(
            action_repeat=1 if repeat is None else repeat.k,
            pixels=pixels,
            frames=1 if stack is None else stack.num_frames,
        )


class _DmControlEpisode:
    """dm_control's environment behind the run's wrappers, in numpy, one episode at a time."""

    def __init__(self, env: Any, seed: int):
        self.how = RunWrappers.of(env)
        self.spec = env.observation_spec()
        task = env.unwrapped
        self.dm_env = reference_for(task, seed)
        # Policy steps in a whole episode (LQR's infinite limit: the suite paper's 1000 steps).
        self.length = -(-episode_steps(task) // self.how.action_repeat)
        self.frames = collections.deque(maxlen=self.how.frames)

    def _observation(self, dm_observation, first: bool) -> dict:
        """Our observation (batch of one) from dm_control's, with its image stack.

        The image is what ``dm_control.suite.wrappers.pixels`` adds: ``physics.render``
        of the run's size and camera, here drawn once per policy step, after the
        repeated control steps, as our ``Pixels(ActionRepeat(...))`` draws it. At
        the ``first`` step of an episode it fills the whole stack, as ``FrameStack``'s.
        """
        out = collections.OrderedDict()
        key = None if self.how.pixels is None else self.how.pixels.observation_key
        for name, spec in self.spec.items():
            if name == key:
                p = self.how.pixels
                frame = self.dm_env.physics.render(p.height, p.width, camera_id=p.camera_id)
                self.frames.extend([frame] * (self.how.frames if first else 1))
                value = np.concatenate(list(self.frames), axis=-1)
            else:
                value = dm_observation[name]
            out[name] = np.asarray(value, spec.dtype).reshape(spec.shape)[None]
        return out

    def reset(self) -> dict:
        return self._observation(self.dm_env.reset().observation, first=True)

    def step(self, action: np.ndarray) -> tuple[dict, float, bool]:
        """One policy step: ``action_repeat`` control steps (fewer at the episode's end)."""
        reward = 0.0
        for _ in range(self.how.action_repeat):
            timestep = self.dm_env.step(action)
            reward += float(timestep.reward or 0.0)
            if timestep.last():
                break
        return self._observation(timestep.observation, first=False), reward, timestep.last()

    def close(self) -> None:
        self.dm_env.close()


def evaluate_in_dm_control(env: Any, policy: Any, params: Any, seed: int, episodes: int) -> dict:
    """Returns of ``episodes`` whole episodes of a policy inside dm_control.

    Args:
      env: the run's environment (``cli.make_env``'s): the task and its wrappers.
      policy: the deterministic batched policy ``policy(params, observation)``.
      params: its parameters.
      seed: dm_control's task seed (its resets).
      episodes: how many.

    Returns:
      ``summarize``'s dict with ``returns`` and ``eval_seconds``.
    """
    act = jax.jit(policy)
    episode = _DmControlEpisode(env, seed)
    start, returns = time.time(), []
    try:
        for _ in range(episodes):
            observation, total = episode.reset(), 0.0
            for _ in range(episode.length):
                action = np.asarray(act(params, observation)[0], np.float64)
                observation, reward, last = episode.step(action)
                total += reward
                if last:
                    break
            returns.append(total)
    finally:
        episode.close()
    out = summarize(np.asarray(returns))
    out["eval_seconds"] = time.time() - start
    out["returns"] = returns
    return out
