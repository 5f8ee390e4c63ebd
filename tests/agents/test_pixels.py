"""Learning from pixels: the encoder, frame stacking, uint8 replay, the critic-only encoder, --pixels.

The default tier trains on a toy pixel env (the toy line drawn as a 16x16
image), which compiles in seconds; the real ``train --env cartpole-balance
--agent d4pg --pixels`` (84x84 raycast frames, a video) is in the slow tier.
"""

import collections
import dataclasses
import json
import math
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from agent_configs import TINY
from dm_env import specs
from markers import needs_gl
from toy_cli import use_toy_env
from toy_env import ToyEnv

import jaxcontrol.wrappers
from jaxcontrol.agents.common import offpolicy, run_dir
from jaxcontrol.agents.common.augment import random_shift
from jaxcontrol.agents.common.evaluation import evaluate
from jaxcontrol.agents.common.networks import Conv3x3, PixelEncoder
from jaxcontrol.agents.d4pg.train import D4PG
from jaxcontrol.agents.registry import get_agent
from jaxcontrol.agents.sac.train import SAC
from jaxcontrol.cli import evaluate as evaluate_command
from jaxcontrol.cli import train
from jaxcontrol.wrappers import AutoReset, FrameStack, Wrapper

pytestmark = pytest.mark.xdist_group("agents_pixels")

SIZE = 16  # the toy's images: conv maps 7x7, then 5x5


@dataclasses.dataclass(frozen=True)
class ToyPixels(Wrapper):
    """The toy line as a uint8 image: a bright column at the point's position.

    Stands in for ``Pixels`` (which needs a MuJoCo model) with its defaults'
    interface: ``ToyPixels(env)`` observes {"pixels": uint8 (SIZE, SIZE, 3)}.
    """

    height: int = SIZE
    width: int = SIZE

    def _observe(self, state):
        column = jnp.round((state.data["x"] + 2.0) / 4.0 * (self.width - 1))
        row = jnp.where(jnp.arange(self.width) == column, 255, 40).astype(jnp.uint8)
        image = jnp.broadcast_to(row[None, :, None], (self.height, self.width, 3))
        return state.replace(observation=collections.OrderedDict(pixels=image))

    def reset(self, key):
        return self._observe(self.env.reset(key))

    def step(self, state, action):
        return self._observe(self.env.step(state, action))

    def observation_spec(self):
        shape = (self.height, self.width, 3)
        return collections.OrderedDict(pixels=specs.Array(shape, np.uint8, name="pixels"))


def _pixel_env(episode_length=50):
    return FrameStack(ToyPixels(ToyEnv(episode_length)), 3)


def _config(name, **changes):
    small = {"num_envs": 4, "batch_size": 16, "learning_starts": 64, "replay_capacity": 512}
    return dataclasses.replace(TINY[name], **{**small, **changes})


# ----- the encoder ---------------------------------------------------------------------


def test_encoder_is_the_suite_papers():
    """3x3x32 stride 2, 3x3x32 stride 1 (unpadded), Dense 50, LayerNorm: shapes and count."""
    encoder = PixelEncoder()
    pixels = jnp.zeros((2, 84, 84, 9), jnp.uint8)
    params = jax.eval_shape(encoder.init, jax.random.key(0), pixels)["params"]
    shapes = jax.tree.map(lambda x: x.shape, params)
    assert shapes == {
        "Conv_0": {"kernel": (3, 3, 9, 32), "bias": (32,)},
        "Conv_1": {"kernel": (3, 3, 32, 32), "bias": (32,)},
        "Dense_0": {"kernel": (39 * 39 * 32, 50), "bias": (50,)},  # 84 -> 41 -> 39
        "LayerNorm_0": {"scale": (50,), "bias": (50,)},
    }
    count = sum(math.prod(s) for s in jax.tree.leaves(shapes, is_leaf=lambda x: type(x) is tuple))
    assert count == (3 * 3 * 9 * 32 + 32) + (3 * 3 * 32 * 32 + 32) + (48_672 * 50 + 50) + 100
    assert count == 2_445_622
    # Any leading batch axes; features are tanh'd.
    small = jax.random.randint(jax.random.key(1), (3, 2, SIZE, SIZE, 9), 0, 256).astype(jnp.uint8)
    variables = encoder.init(jax.random.key(0), small)
    features = encoder.apply(variables, small)
    assert features.shape == (3, 2, 50) and features.dtype == jnp.float32
    assert bool(jnp.all(jnp.abs(features) < 1.0))


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("patches", [True, False])
def test_conv3x3_is_flax_conv(stride, patches):
    """The encoder's convolution (a patch product on the CPU) has nn.Conv's parameters,
    initial values and outputs, and their gradients, so runs and checkpoints carry over."""
    x = jnp.asarray(np.random.RandomState(stride).rand(3, 17, 17, 5), jnp.float32)
    ours = Conv3x3(4, stride=stride, patches=patches)
    flax_conv = nn.Conv(4, (3, 3), strides=(stride, stride), padding="VALID")
    params = flax_conv.init(jax.random.key(0), x)
    jax.tree.map(np.testing.assert_array_equal, ours.init(jax.random.key(0), x), params)
    np.testing.assert_allclose(ours.apply(params, x), flax_conv.apply(params, x), atol=1e-5)
    loss = lambda conv: lambda p: jnp.sum(jnp.sin(conv.apply(p, x)))
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5),
        jax.grad(loss(ours))(params),
        jax.grad(loss(flax_conv))(params),
    )


def test_random_shift_moves_each_image_by_at_most_the_pad():
    """Each output is the edge-padded image cropped at an offset in [0, 2 pad]; offsets vary."""
    pad, images = 3, jax.random.randint(jax.random.key(0), (32, 12, 10, 6), 0, 256)
    images = images.astype(jnp.uint8)
    shifted = jax.jit(random_shift, static_argnums=2)(jax.random.key(1), images, pad)
    assert shifted.shape == images.shape and shifted.dtype == jnp.uint8
    padded = np.pad(np.asarray(images), ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="edge")
    offsets = set()
    for i in range(len(images)):
        found = [
            (dy, dx)
            for dy in range(2 * pad + 1)
            for dx in range(2 * pad + 1)
            if np.array_equal(shifted[i], padded[i, dy : dy + 12, dx : dx + 10])
        ]
        assert len(found) == 1, i  # random images: one crop matches
        offsets.add(found[0])
    assert len(offsets) > 10  # 49 offsets, 32 draws: not one move for the batch
    assert random_shift(jax.random.key(1), images, 0) is images


@pytest.mark.parametrize("pad", [0, 2])
def test_random_shift_reaches_the_update_only_when_asked(pad, monkeypatch):
    """The learner shifts a batch's observations and its next observations, each with
    its own key, and nothing at all with random_shift = 0 (the paper's method)."""
    calls = []

    def spy(key, images, size):
        calls.append((images.shape, images.dtype, size))
        return random_shift(key, images, size)

    monkeypatch.setattr(offpolicy, "random_shift", spy)
    config = _config("d4pg", total_env_steps=64 + 4 * 5, iterations_per_chunk=5, random_shift=pad)
    learner = get_agent("d4pg").make_learner(config, _pixel_env())
    _, metrics = jax.jit(learner.run_chunk)(jax.jit(learner.init)(jax.random.key(0)))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    expected = [((16, SIZE, SIZE, 9), jnp.uint8, pad)] * 2 if pad else []
    assert calls == expected  # traced once: obs and next_obs


# ----- frame stacking ------------------------------------------------------------------


def test_frame_stack_repeats_the_first_frame_and_restarts_with_auto_reset():
    """Stacks oldest first; a reset, and the restart inside AutoReset, repeat the first frame."""
    env = AutoReset(FrameStack(ToyEnv(episode_length=3), 3, observation_key="position"))
    assert env.observation_spec()["position"].shape == (3,)
    assert env.observation_spec()["velocity"].shape == ()
    reset = jax.jit(jax.vmap(env.reset))
    step = jax.jit(jax.vmap(env.step))
    state = reset(jax.random.split(jax.random.key(0), 2))
    action = jnp.full((2, 1), 0.5)
    x = [np.asarray(state.data["x"])]
    np.testing.assert_array_equal(state.observation["position"], np.stack([x[0]] * 3, -1))
    for _ in range(2):
        state = step(state, action)
        x.append(np.asarray(state.data["x"]))
    np.testing.assert_array_equal(state.observation["position"], np.stack(x, -1))
    last = step(state, action)  # the time limit: the next episode starts in this step
    assert bool(jnp.all(last.last()))
    final = np.asarray(last.info["final_observation"]["position"])
    np.testing.assert_array_equal(final[:, :2], np.stack(x[1:], -1))
    assert not np.array_equal(final[:, 2], x[2])  # the finished episode's last frame
    y0 = np.asarray(last.data["x"])  # the new episode's first position, three times
    np.testing.assert_array_equal(last.observation["position"], np.stack([y0] * 3, -1))
    after = step(last, action)
    np.testing.assert_array_equal(
        after.observation["position"], np.stack([y0, y0, np.asarray(after.data["x"])], -1)
    )


def test_frame_stack_pixels_spec_and_refusals():
    env = _pixel_env()
    spec = env.observation_spec()["pixels"]
    assert spec.shape == (SIZE, SIZE, 9) and spec.dtype == np.uint8
    obs = env.reset(jax.random.key(0)).observation["pixels"]
    assert obs.shape == (SIZE, SIZE, 9) and obs.dtype == jnp.uint8
    np.testing.assert_array_equal(obs[..., :3], obs[..., 6:])
    with pytest.raises(ValueError, match="goes below AutoReset"):
        FrameStack(AutoReset(ToyPixels(ToyEnv())), 3)
    with pytest.raises(ValueError, match="num_frames >= 1"):
        FrameStack(ToyPixels(ToyEnv()), 0)
    with pytest.raises(ValueError, match=r"\['position', 'velocity'\]"):
        FrameStack(ToyEnv(), 3)


# ----- the learners --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["d4pg", "sac"])
def test_replay_keeps_pixels_as_uint8(name):
    learner = get_agent(name).make_learner(_config(name), _pixel_env())
    state = jax.eval_shape(learner.init, jax.random.key(0))
    capacity = 512 // 4
    for key in ("obs", "next_obs"):
        leaf = state.replay.data[key]
        assert leaf.dtype == jnp.uint8 and leaf.shape == (capacity, 4, SIZE, SIZE, 9), key
    assert "encoder" in state.params and "encoder" in state.target_params
    assert set(jax.eval_shape(learner.policy_params, state)) == {"encoder", "actor", "obs_stats"}


def _algorithm(name):
    if name == "d4pg":
        return D4PG(TINY["d4pg"], 1, PixelEncoder())
    return SAC(TINY["sac"], 1, PixelEncoder())


def _batch(key, size=8):
    key_obs, key_next, key_action = jax.random.split(key, 3)
    pixels = lambda k: jax.random.randint(k, (size, SIZE, SIZE, 9), 0, 256).astype(jnp.uint8)
    return {
        "obs": pixels(key_obs),
        "next_obs": pixels(key_next),
        "action": jax.random.uniform(key_action, (size, 1), minval=-1.0, maxval=1.0),
        "reward": jnp.linspace(0.0, 1.0, size),
        "bootstrap_discount": jnp.zeros((size,)),  # the target reads no actor
        "weight": jnp.ones((size,)),
    }


@pytest.mark.parametrize("name", ["d4pg", "sac"])
def test_only_the_critic_trains_the_encoder(name):
    """Another actor gives the same encoder after an update; the critic's loss moves it."""
    algorithm = _algorithm(name)
    key_init, key_batch, key_update, key_shift = jax.random.split(jax.random.key(3), 4)
    params, opt_state = algorithm.init(key_init, (SIZE, SIZE, 9), 1)
    targets = {n: params[n] for n in algorithm.target_names}
    assert algorithm.target_names[0] == "encoder"
    batch = _batch(key_batch)
    shifted = jax.tree.map(lambda x: x + jax.random.normal(key_shift, x.shape), params["actor"])
    update = jax.jit(algorithm.update)
    new, *_ = update(params, targets, opt_state, batch, key_update)
    other, *_ = update({**params, "actor": shifted}, targets, opt_state, batch, key_update)
    jax.tree.map(np.testing.assert_array_equal, new["encoder"], other["encoder"])
    changed = lambda a, b: any(
        not np.array_equal(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
    )
    assert changed(new["actor"], params["actor"]) and changed(other["actor"], shifted)
    assert changed(new["encoder"], params["encoder"])

    # The actor's loss, differentiated through the encoder too, gives it no gradient.
    def actor_loss(p):
        features = algorithm.encode(p, batch["obs"])
        if name == "d4pg":
            return algorithm.actor_loss(p["actor"], p["critic"], features)
        return algorithm.actor_loss(p["actor"], p["critic"], features, 1.0, key_update)[0]

    grads = jax.grad(actor_loss)(params)
    assert all(not np.any(g) for g in jax.tree.leaves(grads["encoder"]))
    assert any(np.any(g) for g in jax.tree.leaves(grads["actor"]))


def test_sac_learns_from_pixels_end_to_end():
    """Two chunks on the toy's pixels: finite metrics, uint8 frames stored, a policy that acts."""
    env = _pixel_env()
    config = _config("sac", total_env_steps=64 + 2 * 4 * 10, iterations_per_chunk=10)
    learner = get_agent("sac").make_learner(config, env)
    state = jax.jit(learner.init)(jax.random.key(0))
    run_chunk = jax.jit(learner.run_chunk)
    for _ in range(learner.num_chunks):
        state, metrics = run_chunk(state)
        assert all(np.isfinite(float(v)) for v in metrics.values())
    stored = state.replay.data["obs"][: int(state.replay.size)]
    assert int(jnp.max(stored)) == 255 and int(jnp.min(stored)) == 40  # real frames
    returns = evaluate(env, learner.policy, learner.policy_params(state), jax.random.key(1), 3)
    assert returns.shape == (3,) and bool(jnp.all(jnp.isfinite(returns)))


def test_pixel_misuse_is_refused_by_name(toy_env):
    with pytest.raises(ValueError, match="d4pg or sac"):
        get_agent("ppo").make_learner(TINY["ppo"], _pixel_env())
    with pytest.raises(ValueError, match="normalize_observations"):
        get_agent("d4pg").make_learner(_config("d4pg", normalize_observations=True), _pixel_env())
    with pytest.raises(ValueError, match="set replay_capacity to at most"):
        get_agent("d4pg").make_learner(_config("d4pg", replay_capacity=2_000_000_000), _pixel_env())
    with pytest.raises(ValueError, match="random_shift moves images"):
        get_agent("sac").make_learner(dataclasses.replace(TINY["sac"], random_shift=4), toy_env)
    with pytest.raises(ValueError, match=r"random_shift must be in \[0, inf\]"):
        _config("d4pg", random_shift=-1)
    get_agent("d4pg").make_learner(TINY["d4pg"], toy_env)  # state observations: as before


# ----- the command line ----------------------------------------------------------------

PIXEL_ARGS = [
    "--env",
    "toy-line",
    "--agent",
    "d4pg",
    "--pixels",
    "--steps",
    "144",
    "--set",
    "num_envs=4",
    "--set",
    "batch_size=16",
    "--set",
    "learning_starts=64",
    "--set",
    "replay_capacity=256",
    "--set",
    "iterations_per_chunk=10",
    "--set",
    "actor_hidden_sizes=16,16",
    "--set",
    "critic_hidden_sizes=16,16",
    "--eval-episodes",
    "2",
    "--no-progress",
]


def test_cli_pixels_is_refused_for_ppo(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["--env", "cartpole-balance", "--agent", "ppo", "--pixels", "--steps", "10"]
    assert train.main([*args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    expected = (
        "error: --pixels: ppo learns from state observations only; "
        "the agents that learn from pixels are d4pg, sac"
    )
    assert err == [expected]
    assert not out.exists()
    defaults = run_dir.run_defaults("d4pg", pixels=True, action_repeat=1)
    assert defaults == run_dir.PIXEL_DEFAULTS
    config = run_dir.build_config("d4pg", 10, [], defaults)
    assert config.replay_capacity == run_dir.PIXEL_DEFAULTS["replay_capacity"]
    assert (
        run_dir.build_config("d4pg", 10, ["replay_capacity=256"], defaults).replay_capacity == 256
    )


def test_action_repeat_scales_d4pg_value_support():
    """ActionRepeat(k) sums k rewards in [0, 1]: the paper's [-150, 150] support, sized for one,
    scales by k (unscaled, every return of cartpole-balance at k = 8 sat on its top atom)."""
    paper = run_dir.build_config("d4pg", 10, [], run_dir.run_defaults("d4pg", False, 1))
    scaled = run_dir.build_config("d4pg", 10, [], run_dir.run_defaults("d4pg", True, 8))
    assert (scaled.v_min, scaled.v_max) == (8 * paper.v_min, 8 * paper.v_max)
    chosen = run_dir.build_config("d4pg", 10, ["v_max=500"], run_dir.run_defaults("d4pg", True, 8))
    assert (chosen.v_min, chosen.v_max) == (scaled.v_min, 500.0)
    assert run_dir.run_defaults("sac", pixels=False, action_repeat=8) == {}  # no support to scale


def test_cli_trains_from_pixels(tmp_path, monkeypatch, capsys):
    """train --pixels: the pixel stack, run.json and eval.json say so, the curve, re-evaluation."""
    use_toy_env(monkeypatch)
    monkeypatch.setattr(jaxcontrol.wrappers, "Pixels", ToyPixels)
    out = str(tmp_path / "pixels")
    assert train.main([*PIXEL_ARGS, "--out", out]) == 0
    for name in ("run.json", "metrics.jsonl", "learning_curve.png", "eval.json"):
        assert os.path.getsize(os.path.join(out, name)) > 0, name
    with open(os.path.join(out, "run.json")) as f:
        assert json.load(f)["pixels"] is True
    with open(os.path.join(out, "eval.json")) as f:
        result = json.load(f)
    assert result["pixels"] is True and result["env_steps"] == 144
    assert 0.0 < result["mean_return"] <= 50.0
    capsys.readouterr()
    state_args = [a for a in PIXEL_ARGS if a != "--pixels"]
    assert train.main([*state_args, "--out", out, "--resume"]) == 2
    assert "pixels True != False" in capsys.readouterr().err
    assert evaluate_command.main([out, "--episodes", "2"]) == 0
    with open(os.path.join(out, "eval.json")) as f:
        assert json.load(f)["returns"] == result["returns"]


@pytest.mark.slow
@needs_gl  # --video
def test_cli_trains_d4pg_on_cartpole_pixels_with_a_video(tmp_path):
    """The real thing, tiny: 84x84 raycast frames of cartpole, 3 stacked (compiles for minutes)."""
    pytest.importorskip("imageio_ffmpeg", reason="needs the video extra")
    out = str(tmp_path / "cartpole")
    args = [a if a != "toy-line" else "cartpole-balance" for a in PIXEL_ARGS]
    args = [*args, "--action-repeat", "8", "--video", "--out", out]
    assert train.main(args) == 0
    for name in ("learning_curve.png", "eval.json", "video.mp4"):
        assert os.path.getsize(os.path.join(out, name)) > 0, name
    with open(os.path.join(out, "eval.json")) as f:
        result = json.load(f)
    assert result["pixels"] is True and 0.0 <= result["mean_return"] <= 1000.0
