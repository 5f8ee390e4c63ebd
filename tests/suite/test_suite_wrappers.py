"""dm_control's own wrappers and renderer over `jaxcontrol.suite`, against dm_control's.

Both environments are wrapped, reset, and ours put in dm_control's state
(`suite.mirror`); then the same actions give the same observations (float64,
C backend), pixels included.
"""

import numpy as np
import pytest
from dm_control import suite as dm_suite
from dm_control.suite.wrappers import action_scale, pixels
from markers import needs_gl

from jaxcontrol import suite


def _wrapped_pair(domain, task, wrap, **kwargs):
    theirs = dm_suite.load(domain, task, task_kwargs={"random": 0}, **kwargs)
    ours = suite.load(domain, task, task_kwargs={"random": 0}, **kwargs)
    wrapped_theirs, wrapped_ours = wrap(theirs), wrap(ours)
    wrapped_theirs.reset()
    wrapped_ours.reset()
    suite.mirror(ours, theirs)
    return wrapped_ours, wrapped_theirs


def _assert_same(a, b):
    assert a.step_type == b.step_type
    assert list(a.observation) == list(b.observation)
    for key in b.observation:
        assert a.observation[key].dtype == b.observation[key].dtype
        np.testing.assert_array_equal(a.observation[key], b.observation[key], err_msg=key)
    assert abs(a.reward - b.reward) <= 1e-9


def test_dm_controls_action_scale_wrapper_gives_dm_controls_observations():
    def wrap(env):
        return action_scale.Wrapper(env, minimum=np.zeros(1), maximum=np.full(1, 0.5))

    ours, theirs = _wrapped_pair("cartpole", "swingup", wrap)
    assert ours.action_spec() == theirs.action_spec()
    random = np.random.RandomState(0)
    for _ in range(20):
        action = random.uniform(0, 0.5, (1,))
        _assert_same(ours.step(action), theirs.step(action))


@needs_gl
@pytest.mark.parametrize("pixels_only", [True, False])
def test_dm_controls_pixels_wrapper_gives_dm_controls_observations(pixels_only):
    def wrap(env):
        render_kwargs = {"height": 48, "width": 64, "camera_id": 0}
        return pixels.Wrapper(env, pixels_only=pixels_only, render_kwargs=render_kwargs)

    ours, theirs = _wrapped_pair("reacher", "easy", wrap)
    assert ours.observation_spec() == theirs.observation_spec()
    random = np.random.RandomState(0)
    for _ in range(5):
        action = random.uniform(-1, 1, (2,))
        _assert_same(ours.step(action), theirs.step(action))


@needs_gl
def test_physics_render_and_segmentation_are_dm_controls():
    theirs = dm_suite.load("finger", "spin", task_kwargs={"random": 0})
    ours = suite.load("finger", "spin", task_kwargs={"random": 0})
    theirs.reset()
    for _ in range(3):
        theirs.step(np.full(2, 0.3))
    suite.mirror(ours, theirs)
    for kwargs in ({"camera_id": 0}, {"camera_id": "cam1", "segmentation": True}):
        np.testing.assert_array_equal(
            ours.physics.render(60, 80, **kwargs), theirs.physics.render(60, 80, **kwargs)
        )


@needs_gl
def test_visualize_reward_colours_frames_as_dm_controls():
    kwargs = {"task_kwargs": {"random": 0}, "visualize_reward": True}
    theirs = dm_suite.load("cartpole", "balance", **kwargs)
    ours = suite.load("cartpole", "balance", **kwargs)
    theirs.reset()
    theirs.step(np.zeros(1))
    suite.mirror(ours, theirs)
    random = np.random.RandomState(0)
    for _ in range(3):
        action = random.uniform(-1, 1, (1,))
        ours.step(action)
        theirs.step(action)
    colors = ours.physics.named.model.mat_rgba
    assert not np.allclose(colors["self"], colors["self_default"])  # a blend, not an end
    np.testing.assert_allclose(colors.__array__(), theirs.physics.named.model.mat_rgba.__array__())
    np.testing.assert_array_equal(ours.physics.render(48, 64, 0), theirs.physics.render(48, 64, 0))


@needs_gl
@pytest.mark.full  # the JAX renderer's compilation takes about a minute
def test_the_pixels_wrappers_reward_colours_move_its_frames_toward_dm_controls():
    import jaxcontrol
    from jaxcontrol import reference
    from jaxcontrol.wrappers import Pixels

    theirs = dm_suite.load("cartpole", "balance", task_kwargs={"random": 0}, visualize_reward=True)
    theirs.reset()
    for _ in range(3):
        theirs.step(np.full(1, 0.2))
    reward = theirs.task.get_reward(theirs.physics)
    assert reward**4 > 0.5  # the highlight dominates
    env = jaxcontrol.load("cartpole", "balance")
    state = reference.mirror(env, theirs)
    expected = theirs.physics.render(84, 84, camera_id=0).astype(float)
    # The pixels that show a body of a reward material, by dm_control's segmentation.
    segmentation = theirs.physics.render(84, 84, camera_id=0, segmentation=True)
    model = theirs.physics.model
    materials = [model.name2id(name, "material") for name in ("self", "effector", "target")]
    geoms = np.flatnonzero(np.isin(model.geom_matid, materials))
    shown = np.isin(segmentation[..., 0], geoms) & (segmentation[..., 1] == 5)  # mjOBJ_GEOM
    assert shown.sum() > 50
    plain = np.asarray(Pixels(env).render_pixels(state), float)
    colored = np.asarray(Pixels(env, visualize_reward=True).render_pixels(state), float)
    plain_error = np.abs(plain - expected)[shown].mean()
    colored_error = np.abs(colored - expected)[shown].mean()
    assert colored_error < 0.5 * plain_error, (colored_error, plain_error)


@needs_gl
@pytest.mark.full
def test_quadruped_escapes_terrain_is_drawn_anew_in_a_rendered_physics():
    theirs = dm_suite.load("quadruped", "escape", task_kwargs={"random": 0})
    ours = suite.load("quadruped", "escape", task_kwargs={"random": 0})
    ours.reset()
    before = ours.physics.render(48, 64, camera_id=0)  # the context holds this terrain
    theirs.reset()
    theirs.reset()
    suite.mirror(ours, theirs)  # another terrain, uploaded to the context
    after = ours.physics.render(48, 64, camera_id=0)
    assert not np.array_equal(before, after)
    np.testing.assert_array_equal(after, theirs.physics.render(48, 64, camera_id=0))


@needs_gl
@pytest.mark.full
@pytest.mark.parametrize(
    "viz_task", [pytest.param(t, id=f"{t[0]}/{t[1]}") for t in suite.REWARD_VIZ]
)
def test_visualize_reward_frames_are_dm_controls_on_ten_states(viz_task):
    # Ten states per task: episodes from several seeds, 0-45 random steps in, mirrored
    # into ours; then each task colours its physics by its reward there (`after_step`,
    # as a step ends; not a step, since LQR's model is drawn from another seed in
    # jaxcontrol). Our reward is dm_control's within 1e-9, so a blended float32 colour
    # may sit one rounding away from theirs, and a pixel one level of 255.
    kwargs = {"visualize_reward": True}
    for state in range(10):
        theirs = dm_suite.load(*viz_task, task_kwargs={"random": state}, **kwargs)
        ours = suite.load(*viz_task, task_kwargs={"random": state}, **kwargs)
        spec = theirs.action_spec()
        random = np.random.RandomState(state)
        theirs.reset()
        for _ in range(5 * state):
            theirs.step(random.uniform(spec.minimum, spec.maximum))
        suite.mirror(ours, theirs)
        for env in (ours, theirs):
            env.task.after_step(env.physics)
        np.testing.assert_allclose(
            ours.physics.named.model.mat_rgba.__array__(),
            theirs.physics.named.model.mat_rgba.__array__(),
            rtol=0,
            atol=1e-7,
        )
        for camera in range(min(2, theirs.physics.model.ncam)):
            a = ours.physics.render(48, 64, camera).astype(int)
            b = theirs.physics.render(48, 64, camera).astype(int)
            assert np.abs(a - b).max() <= 1 and np.mean(a != b) <= 1e-3, (state, camera)
