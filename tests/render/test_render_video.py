"""Videos: mp4 encoding, `jaxcontrol video` and `jaxcontrol train --video`.

Each mp4 is decoded back (ffmpeg) and its frames counted: a playable file.
"""

import os
import sys

import numpy as np
import pytest
from markers import needs_gl

from jaxcontrol.cli import video as video_command
from jaxcontrol.render import video

needs_encoder = pytest.mark.skipif(
    "imageio_ffmpeg" not in sys.modules
    and not __import__("importlib").util.find_spec("imageio_ffmpeg"),
    reason="needs the video extra: pip install 'jaxcontrol[video]'",
)

pytestmark = pytest.mark.xdist_group("render_video")


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@needs_encoder
def test_mp4_round_trip(tmp_path):
    rng = np.random.RandomState(0)
    frames = [np.full((24, 32, 3), 40 * i, np.uint8) for i in range(5)]
    frames[2][8:16, 8:16] = rng.randint(0, 255, (8, 8, 3))
    path = str(tmp_path / "a.mp4")
    video.write_mp4(path, frames, fps=10)
    meta, decoded = video.read_mp4(path)
    assert len(decoded) == 5 and decoded[0].shape == (24, 32, 3)
    assert meta["fps"] == 10
    assert np.abs(decoded[4].astype(int) - frames[4]).mean() < 3  # lossy, but that frame
    with pytest.raises(ValueError, match="even H and W"):
        video.write_mp4(path, [np.zeros((5, 4, 3), np.uint8)], fps=10)


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    with pytest.raises(ImportError, match=r"pip install 'jaxcontrol\[video\]'"):
        video.require_encoder()


def test_frame_stride_plays_in_real_time():
    assert video.frame_stride(0.01) == 4  # 25 fps
    assert video.frame_stride(0.04) == 1
    assert video.frame_stride(0.025) == 2  # 20 fps


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--seconds", "1"], "give --env DOMAIN-TASK, or --run"),
        (["--env", "cartpole-swingpu"], "did you mean 'cartpole-swingup'"),
        (["--env", "cartpole-swingup", "--camera", "side"], "no camera named 'side'"),
        (["--env", "cartpole-swingup", "--height", "101"], "must be even"),
        (["--env", "cartpole-swingup", "--seconds", "nan"], "--seconds must be in"),
        (["--run", "/nonexistent"], "no run in"),
    ],
)
def test_video_bad_arguments(args, expected, tmp_path, capsys):
    out = tmp_path / "x.mp4"
    assert video_command.main([*args, "--out", str(out)]) == 2
    assert expected in _one_error_line(capsys)
    assert not out.exists()


@needs_gl
@needs_encoder
def test_video_of_a_random_policy(tmp_path, capsys):
    out = str(tmp_path / "random.mp4")
    assert video_command.main(["--env", "cartpole-swingup", "--seconds", "0.4", "--out", out]) == 0
    assert "10 frames" in capsys.readouterr().out
    meta, frames = video.read_mp4(out)
    assert len(frames) == 10 and frames[0].shape == (240, 320, 3) and meta["fps"] == 25
    assert np.std(frames[0]) > 10  # a scene, not a blank frame


@needs_gl
@needs_encoder
def test_train_video_writes_one_evaluation_episode(tmp_path, capsys):
    """`train --video`'s last step, on a 20-step episode and a stand-in policy."""
    import types

    import jax.numpy as jnp

    import jaxcontrol
    from jaxcontrol.cli import train

    env = jaxcontrol.load("cartpole", "balance", time_limit=0.2)
    learner = types.SimpleNamespace(policy=lambda params, obs: jnp.full((1, 1), params))
    train.write_video(str(tmp_path), env, learner, 0.5, seed=0)
    assert "video.mp4 (5 frames)" in capsys.readouterr().out
    assert len(video.read_mp4(str(tmp_path / "video.mp4"))[1]) == 5


@pytest.mark.slow
@needs_gl
@needs_encoder
def test_train_video_and_video_of_the_run(tmp_path, capsys):
    """The whole path on a tiny PPO run (about 80 s on 2 cores, so slow tier)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "agents"))
    from agent_configs import TINY_PPO_CLI

    from jaxcontrol.cli import train

    out = str(tmp_path / "run")
    args = [*TINY_PPO_CLI, "--eval-episodes", "2", "--out", out, "--video", "--no-progress"]
    assert train.main(args) == 0
    _, frames = video.read_mp4(os.path.join(out, "video.mp4"))
    assert len(frames) == 250  # one 1000-step episode at 25 fps
    mp4 = str(tmp_path / "policy.mp4")
    assert (
        video_command.main(["--run", out, "--seconds", "0.2", "--out", mp4, "--camera", "lookatcart"]) == 0
    )
    assert "ppo policy of checkpoint" in capsys.readouterr().out
    assert len(video.read_mp4(mp4)[1]) == 5
