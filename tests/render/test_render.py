"""`Env.render` (MuJoCo's OpenGL renderer on our model) against dm_control's `physics.render`.

Our models equal dm_control's in every field, cameras, lights, materials and
textures included, so the images of the same state must be identical, pixel
for pixel. Default tier: every task, cameras 0 and 1, from dm_control states
after a reset and a random rollout, in float64 (the state holds dm_control's
qpos exactly). Full tier: every camera, through `reference.mirror`.

Tests that need OpenGL are skipped, with what to install, where no backend works.
"""

import numpy as np
import pytest
from markers import needs_gl

import jaxcontrol
from jaxcontrol import reference
from jaxcontrol.registry import REGISTRY
from jaxcontrol.render import cpu, gl


def _dm_states(task, n, seed=0, steps_between=10):
    """dm_control's env after a reset and after `steps_between` random steps, n times."""
    dm_env = reference.reference_env(*task, seed=seed)
    rng = np.random.RandomState(seed)
    spec = dm_env.action_spec()
    dm_env.reset()
    try:
        for i in range(n):
            if i:
                for _ in range(steps_between):
                    dm_env.step(rng.uniform(spec.minimum, spec.maximum))
            yield dm_env
    finally:
        dm_env.close()  # frees its GL context now, not noisily at exit


def _state_like_mirror(env, dm_state: reference.DmState):
    """The physics and model fields `mirror` copies, in a State, without compiling `inject`.

    The renderer reads only qpos, qvel, act and model fields, which `inject`
    copies verbatim (test_mirror_state_renders_the_same checks the real thing).
    """
    import jax.numpy as jnp

    data = env._initial_data()
    data = data.replace(qpos=jnp.asarray(dm_state.qpos), qvel=jnp.asarray(dm_state.qvel))
    if dm_state.act.size:
        data = data.replace(act=jnp.asarray(dm_state.act))
    fields = {**env.default_model_fields(), **dm_state.model_fields}
    return jaxcontrol.State(
        data=data,
        observation={},
        reward=jnp.zeros(()),
        discount=jnp.ones(()),
        step_type=jnp.int32(0),
        step=jnp.int32(dm_state.step),
        variables={},
        model_fields={k: jnp.asarray(v) for k, v in fields.items()},
        key=None,
        diverged=jnp.bool_(False),
    )


def _difference(ours, theirs):
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype == np.uint8
    return float(np.abs(ours.astype(np.int16) - theirs).mean())


@needs_gl
@pytest.mark.float64
def test_render_equals_dm_control(task):
    with reference.precision(True):
        env = jaxcontrol.load(*task)
        cameras = range(min(2, env.mj_model.ncam))
        for dm_env in _dm_states(task, n=2):
            state = _state_like_mirror(env, reference.DmState.capture(env, dm_env))
            for camera in cameras:
                ours = env.render(state, 96, 128, camera)
                theirs = dm_env.physics.render(96, 128, camera_id=camera)
                assert _difference(ours, theirs) == 0.0, f"camera {camera}"


@needs_gl
@pytest.mark.full
@pytest.mark.float64
def test_full_mirror_renders_every_camera(task):
    with reference.precision(True):
        env = jaxcontrol.load(*task)
        for dm_env in _dm_states(task, n=3, seed=1):
            state = reference.mirror(env, dm_env)
            for camera in range(-1, env.mj_model.ncam):
                ours = env.render(state, 240, 320, camera)
                theirs = dm_env.physics.render(240, 320, camera_id=camera)
                assert _difference(ours, theirs) == 0.0, f"camera {camera}"


@needs_gl
def test_mirror_state_renders_the_same():
    """A real `mirror`ed state (reacher: its target's per-episode geom_pos), one of a batch."""
    import jax

    with reference.precision(True):
        env = jaxcontrol.load("reacher", "easy")
        dm_states = _dm_states(("reacher", "easy"), n=1, seed=3)
        dm_env = next(dm_states)
        state = reference.mirror(env, dm_env)
        theirs = dm_env.physics.render(120, 160, camera_id="fixed")
        dm_states.close()
        assert _difference(env.render(state, 120, 160, "fixed"), theirs) == 0.0
        batch = jax.tree.map(lambda x: jax.numpy.stack([x, x]), state)
        assert _difference(env.render(batch, 120, 160, "fixed", index=1), theirs) == 0.0
        compiled = state.replace(model_fields=env.default_model_fields())
        assert _difference(env.render(compiled, 120, 160, "fixed"), theirs) > 0  # target moved


@needs_gl
@pytest.mark.float64
def test_each_episodes_height_field_is_drawn():
    """Tasks that write `hfield_data` at reset (quadruped-escape's terrain): one renderer
    draws each episode's own terrain, as dm_control's, though GL keeps an uploaded copy."""
    tasks = [
        t
        for t in jaxcontrol.ALL_TASKS
        if "hfield_data" in REGISTRY.prototype(*t).episode_model_fields
    ]
    assert tasks, "no task writes a height field at reset"
    with reference.precision(True):
        for task in tasks:
            env = jaxcontrol.load(*task)
            images = []
            for seed in (0, 1):
                dm_env = next(_dm_states(task, n=1, seed=seed))
                state = _state_like_mirror(env, reference.DmState.capture(env, dm_env))
                images.append(env.render(state, 96, 128, 0))
                assert _difference(images[-1], dm_env.physics.render(96, 128, camera_id=0)) == 0
                dm_env.close()
            assert _difference(*images) > 0, f"{task}: both episodes drew the same terrain"


def test_bad_arguments_name_the_choices():
    env = jaxcontrol.load("cartpole", "balance")
    with pytest.raises(
        ValueError, match=r"valid: -1 \(free camera\), 0 \(fixed\), 1 \(lookatcart\)"
    ):
        cpu.camera_index(env.mj_model, 2)
    with pytest.raises(ValueError, match="no camera named 'side'"):
        cpu.camera_index(env.mj_model, "side")
    with pytest.raises(ValueError, match="height must be a positive int"):
        cpu.check_size(0, 10)
    with pytest.raises(ValueError, match="exceeds the model's offscreen framebuffer 480x640"):
        cpu.check_size(481, 640, (480, 640))


def test_batched_state_needs_an_index():
    import jax

    env = jaxcontrol.load("cartpole", "balance")
    states = jax.eval_shape(jax.vmap(env.reset), jax.random.split(jax.random.key(0), 3))
    with pytest.raises(ValueError, match="batch of 3 environments; pass index=i"):
        cpu.pick(states, None)
    with pytest.raises(ValueError, match="index 3 out of range for a batch of 3"):
        cpu.pick(states, 3)


def test_missing_backend_says_what_to_install(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "disable")
    message = gl._missing_library() + "; " + gl.INSTALL
    assert "MUJOCO_GL=disable turns rendering off" in message
    assert "apt-get install libosmesa6" in message and "MUJOCO_GL=egl" in message
