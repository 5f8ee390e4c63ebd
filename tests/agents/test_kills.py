"""``jaxcontrol train`` killed (SIGKILL) at three points resumes to the uninterrupted result.

Each run is a subprocess of ``toy_cli.py`` (the real command line on the toy
env) that kills itself at a named point (``faults.point``, set through
``JAXCONTROL_FAULT``): before the first checkpoint, while a checkpoint is
being written, and between checkpoints. The runs share a compilation cache.
"""

import json
import os
import signal
import subprocess
import sys

import jax
import numpy as np
import pytest
from toy_cli import TOY_ARGS
from toy_env import ToyEnv

from jaxcontrol.agents.common import checkpoint as ckpt_lib
from jaxcontrol.agents.common import run as run_lib
from jaxcontrol.agents.common.run import WALL_FIELDS
from jaxcontrol.agents.ppo import PPOConfig, make_learner

pytestmark = pytest.mark.xdist_group("agents_kills")

HELPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "toy_cli.py")


def _start(out, cache, fault=None, resume=False):
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "JAX_COMPILATION_CACHE_DIR": cache,
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    }
    env.pop("JAXCONTROL_FAULT", None)
    if fault:
        env["JAXCONTROL_FAULT"] = fault
    argv = [sys.executable, HELPER, *TOY_ARGS, "--out", out, *(["--resume"] if resume else [])]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _run(*args, **kwargs):
    proc = _start(*args, **kwargs)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out + err


def _metrics(run_dir):
    return [
        {k: v for k, v in line.items() if k not in WALL_FIELDS}
        for line in run_lib.read_metrics(run_dir)
    ]


def _final_state(run_dir, step):
    config = PPOConfig(
        total_env_steps=3072,
        num_envs=16,
        unroll_length=16,
        num_minibatches=2,
        updates_per_chunk=2,
        hidden_sizes=(8, 8),
    )
    learner = make_learner(config, ToyEnv(episode_length=50))
    abstract = jax.eval_shape(learner.init, run_lib.split_run_key(5)[0])
    checkpointer = ckpt_lib.Checkpointer(os.path.join(run_dir, "checkpoints"))
    state, _ = checkpointer.restore_state(step, ckpt_lib.abstract_single_device(abstract))
    checkpointer.close()
    return jax.device_get(state)


def _intact(run_dir):
    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    directory = os.path.join(run_dir, "checkpoints")
    manifests = [
        os.path.join(directory, str(s), ckpt_lib.MANIFEST)
        for s in ckpt_lib.steps_on_disk(directory)
    ]
    return run, [m for m in manifests if os.path.exists(m)]


def test_killed_runs_resume_to_the_uninterrupted_result(tmp_path):
    cache, broken, straight = str(tmp_path / "xla"), str(tmp_path / "b"), str(tmp_path / "s")

    # 1. Killed after chunk 1, before the first checkpoint.
    rc, log = _run(broken, cache, "chunk-end:1:KILL")
    assert rc == -signal.SIGKILL, log
    assert len(run_lib.read_metrics(broken)) == 1
    assert ckpt_lib.steps_on_disk(os.path.join(broken, "checkpoints")) == []
    uninterrupted = _start(straight, cache)  # alongside, now that the chunk is compiled

    # 2. Killed while writing checkpoint 2: orbax is done, the manifest is not.
    rc, log = _run(broken, cache, "checkpoint-commit:1:KILL", resume=True)
    assert rc == -signal.SIGKILL, log
    assert "no complete checkpoint; starting from the beginning" in log
    assert os.path.isdir(os.path.join(broken, "checkpoints", "2"))
    assert _intact(broken)[1] == []
    assert len(run_lib.read_metrics(broken)) == 2

    # 3. Killed after chunk 3, between checkpoints 2 and 4.
    rc, log = _run(broken, cache, "chunk-end:3:KILL", resume=True)
    assert rc == -signal.SIGKILL, log
    assert "checkpoints/2: incomplete" in log and "checkpoints-rejected/2" in log, log
    assert len(_intact(broken)[1]) == 1 and len(run_lib.read_metrics(broken)) == 3

    # 4. Resumed from checkpoint 2 to the end.
    rc, log = _run(broken, cache, resume=True)
    assert rc == 0, log
    assert "resume: from checkpoint 2" in log
    assert uninterrupted.wait(timeout=300) == 0, uninterrupted.communicate()
    assert _metrics(broken) == _metrics(straight)
    assert [line["chunk"] for line in _metrics(broken)] == [1, 2, 3, 4, 5, 6]
    with (
        open(os.path.join(broken, "eval.json")) as f,
        open(os.path.join(straight, "eval.json")) as g,
    ):
        assert json.load(f)["returns"] == json.load(g)["returns"]
    jax.tree.map(np.testing.assert_array_equal, _final_state(straight, 6), _final_state(broken, 6))
