"""A run interrupted and resumed from its checkpoint equals an uninterrupted one, bit for bit."""

import dataclasses
import json
import os

import jax
import numpy as np
import pytest
from agent_configs import TINY

from jaxcontrol.agents.common import checkpoint as ckpt_lib
from jaxcontrol.agents.common import run as run_lib
from jaxcontrol.agents.common.run import WALL_FIELDS
from jaxcontrol.agents.registry import get_agent

# One xdist worker per module, so module-scoped fixtures build once under
# `pytest -n 2 --dist loadgroup`.
pytestmark = pytest.mark.xdist_group("agents_resume")

FOUR_CHUNKS = {
    "ppo": {"total_env_steps": 4 * 16 * 16 * 2, "updates_per_chunk": 2},
    "sac": {"total_env_steps": 1_000 + 4 * 8 * 20, "iterations_per_chunk": 20},
    "d4pg": {
        "total_env_steps": 1_000 + 4 * 8 * 20,
        "iterations_per_chunk": 20,
        "prioritized": True,
        "target_update_period": 7,
    },
}


class Interrupt(Exception):
    pass


def _metrics(run_dir):
    return [
        {k: v for k, v in line.items() if k not in WALL_FIELDS}
        for line in run_lib.read_metrics(run_dir)
    ]


@pytest.mark.parametrize("name", ["ppo", "sac", "d4pg"])
def test_resume_is_bit_identical(name, toy_env, tmp_path, xla_cache):
    del xla_cache
    config = dataclasses.replace(TINY[name], **FOUR_CHUNKS[name])
    learner = get_agent(name).make_learner(config, toy_env)
    assert learner.num_chunks == 4
    straight, broken = str(tmp_path / "straight"), str(tmp_path / "broken")
    os.makedirs(straight)
    os.makedirs(broken)
    final_a, _ = run_lib.train_loop(
        learner, straight, seed=3, checkpoint_every_chunks=2, resume=False, progress=False
    )

    def crash_after_third(chunk, _):
        if chunk == 2:  # chunk 3 is written to metrics.jsonl but not checkpointed
            raise Interrupt()

    with pytest.raises(Interrupt):
        run_lib.train_loop(
            learner,
            broken,
            seed=3,
            checkpoint_every_chunks=2,
            resume=False,
            progress=False,
            on_chunk=crash_after_third,
        )
    assert len(run_lib.read_metrics(broken)) == 3
    # A fresh learner object, as a new process would build.
    learner = get_agent(name).make_learner(config, toy_env)
    final_b, meta = run_lib.train_loop(
        learner, broken, seed=3, checkpoint_every_chunks=2, resume=True, progress=False
    )
    assert meta["chunks"] == 4
    assert _metrics(straight) == _metrics(broken)
    assert len(_metrics(broken)) == 4
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(final_a), jax.device_get(final_b))
    with open(os.path.join(broken, "metrics.jsonl")) as f:
        for line in f:
            json.loads(line)  # every line whole


@pytest.mark.parametrize("name", ["ppo", "sac", "d4pg"])
def test_a_run_extended_on_resume_equals_one_run_of_the_larger_budget(
    name, toy_env, tmp_path, xla_cache
):
    """Two chunks' budget, finished, then resumed with four chunks' budget: the same
    chunks, metrics and final state as four chunks straight (the budget schedules
    nothing in these configs: `budget_fixed_by`)."""
    del xla_cache
    config = dataclasses.replace(TINY[name], **FOUR_CHUNKS[name])
    assert config.budget_fixed_by() is None
    straight, extended = str(tmp_path / "straight"), str(tmp_path / "extended")
    os.makedirs(straight)
    os.makedirs(extended)
    loop = {"seed": 3, "checkpoint_every_chunks": 2, "progress": False}
    learner = get_agent(name).make_learner(config, toy_env)
    final_a, _ = run_lib.train_loop(learner, straight, resume=False, **loop)
    two_chunks = learner.env_steps_at_init + 2 * learner.env_steps_per_chunk
    short = get_agent(name).make_learner(
        dataclasses.replace(config, total_env_steps=two_chunks), toy_env
    )
    assert short.num_chunks == 2
    run_lib.train_loop(short, extended, resume=False, **loop)
    final_b, meta = run_lib.train_loop(
        get_agent(name).make_learner(config, toy_env), extended, resume=True, **loop
    )
    assert meta["chunks"] == 4
    assert _metrics(extended) == _metrics(straight)
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(final_a), jax.device_get(final_b))


def test_a_checkpoint_cut_into_other_chunks_is_refused(toy_env, tmp_path, xla_cache):
    """A budget under one chunk shortens the run's chunks: its checkpoint cannot
    continue as a run of longer chunks (the command line refuses it first)."""
    del xla_cache
    config = dataclasses.replace(TINY["ppo"], **FOUR_CHUNKS["ppo"])
    loop = {"seed": 3, "checkpoint_every_chunks": 2, "progress": False}
    one_update = dataclasses.replace(config, total_env_steps=16 * 16)
    run_lib.train_loop(
        get_agent("ppo").make_learner(one_update, toy_env), tmp_path, resume=False, **loop
    )
    with pytest.raises(
        ckpt_lib.CheckpointError, match="ended at env step 256, this run's would end at 512"
    ):
        run_lib.train_loop(
            get_agent("ppo").make_learner(config, toy_env), tmp_path, resume=True, **loop
        )
