"""Rendering: faithful CPU images and videos (OpenGL), and pixel observations in pure JAX.

* `cpu`: `mujoco.Renderer` on a state, equal to dm_control's `physics.render`
  (`Env.render`, the `jaxcontrol video` command);
* `gl`: the `MUJOCO_GL` backend and what to install when none works;
* `video`: mp4 encoding (the `jaxcontrol[video]` extra) and recording a policy;
* `raycast`, `scene`: pixels in pure JAX, inside jit and vmap
  (`jaxcontrol.wrappers.Pixels`).

The pure-JAX renderer's fidelity to MuJoCo's, on dm_control's states, is measured
by `jaxcontrol.parity.fidelity` (a proof tool: it needs dm_control).
"""
