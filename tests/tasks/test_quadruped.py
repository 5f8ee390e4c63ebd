"""quadruped's resets follow dm_control's code, draw for draw.

* escape's terrain: dm_control's first draw of an episode is the 30 x 30 bump grid;
  given the same bumps (its own random state's), our `terrain_from_bumps` (a
  precomputed zoom matrix) must give dm_control's `hfield_data` to round-off.
* the resting-height search: given dm_control's random orientation, our
  `find_non_contacting_height` (MJX collision in a while loop) must stop at the
  same height, bit for bit in float64, and the root pose must equal dm_control's.
  fetch's upright start touches the floor exactly at a grid height, so its float32
  search must resolve that boundary as float64 does: the same height to float32's
  rounding, and no contact there.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import physics as physics_lib
from jaxcontrol import reference
from jaxcontrol.physics import Physics
from jaxcontrol.render import gl
from jaxcontrol.tasks import quadruped

SEEDS = (0, 1, 2, 3)


def _dm_reset(task: str, seed: int):
    """dm_control's physics after its reset with `seed` (the env is kept alive with it)."""
    env = reference.reference_env("quadruped", task, seed=seed)
    env.reset()
    _ALIVE.append(env)
    return env.physics


_ALIVE = []  # dm_control's named indexers hold weak references to their environments


@pytest.fixture(autouse=True, scope="module")
def _close_reference_envs():
    """Closes the kept environments before exit (their GL contexts complain at exit)."""
    yield
    while _ALIVE:
        _ALIVE.pop().close()


def test_terrain_matches_dm_control():
    env = jaxcontrol.load("quadruped", "escape")
    physics = Physics.create(env.mjx_model, env._initial_data(), env.names)
    for seed in SEEDS[:2]:
        dm = _dm_reset("escape", seed)
        bumps = np.random.RandomState(seed).uniform(0.15, 1, (30, 30))
        with reference.precision(True):
            ours = quadruped.terrain_from_bumps(physics, jnp.asarray(bumps, jnp.float64))
            np.testing.assert_allclose(np.asarray(ours), dm.model.hfield_data, rtol=0, atol=1e-14)


def test_escape_reference_says_it_needs_opengl(monkeypatch):
    """dm_control's escape fails at reset without OpenGL; ours says so when it is made."""
    monkeypatch.setattr(gl, "unavailable_reason", lambda: "no libOSMesa; install libosmesa6")
    with pytest.raises(gl.RenderingUnavailable, match="escape needs OpenGL.*libosmesa6"):
        reference.reference_env("quadruped", "escape", seed=0)


# The default tier searches fetch's knife edge at our precision (float32); the float64
# searches, bit for bit, are the full tier's (about 35 s of CI each).
@pytest.mark.parametrize(
    "task_name, x64",
    [
        pytest.param("walk", True, marks=pytest.mark.full),
        pytest.param("fetch", True, marks=pytest.mark.full),
        ("fetch", False),
    ],
    ids=["walk-float64", "fetch-float64", "fetch-float32"],
)
def test_resting_height_matches_dm_control(task_name, x64):
    """Same orientation (and fetch's position): same first contact-free height."""
    with reference.precision(x64):
        env = jaxcontrol.load("quadruped", task_name)
        orientations, xy, expected = [], [], []
        for seed in SEEDS:
            random = np.random.RandomState(seed)
            if task_name == "walk":
                orientation = random.randn(4)
                orientation /= np.linalg.norm(orientation)
                position = (0.0, 0.0)
            else:  # fetch: azimuth, then x and y
                azimuth = random.uniform(0, 2 * np.pi)
                orientation = np.array((np.cos(azimuth / 2), 0, 0, np.sin(azimuth / 2)))
                position = tuple(random.uniform(-13.5, 13.5, size=(2,)))
            orientations.append(orientation)
            xy.append(position)
            expected.append(_dm_reset(task_name, seed).named.data.qpos["root"].copy())

        @jax.jit
        @jax.vmap
        def search(orientation, position):
            physics = Physics.create(env.mjx_model, env._initial_data(), env.names)
            found = quadruped.find_non_contacting_height(
                physics, orientation, position[0], position[1]
            )
            return found.named.data.qpos["root"], physics_lib.contact_count(found)

        dtype = env.mjx_model.opt.timestep.dtype
        ours, contacts = search(jnp.asarray(orientations, dtype), jnp.asarray(xy, dtype))
        ours = np.asarray(ours)
    assert np.asarray(contacts).tolist() == [0] * len(SEEDS)  # C's rule: nothing touches
    if x64:
        np.testing.assert_array_equal(ours, np.stack(expected))
    else:  # one grid step off would be 0.01
        np.testing.assert_allclose(ours, np.stack(expected), rtol=0, atol=1e-6)
    assert np.all(ours[:, 2] > 0.2), ours[:, 2]  # it did climb out of the floor
