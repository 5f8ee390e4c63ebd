"""Shared fixtures for the learner tests: the fast toy env and an XLA cache."""

import os
import sys

import jax
import pytest

sys.path.insert(0, os.path.dirname(__file__))

from toy_env import ToyEnv


@pytest.fixture(scope="session")
def toy_env():
    return ToyEnv(episode_length=50)


@pytest.fixture(scope="module")
def xla_cache(tmp_path_factory):
    """A persistent XLA compilation cache for one test module, then restored.

    Tests that rebuild the same learner (resume, re-evaluation) then load the
    compiled programs from disk instead of compiling them again.
    """
    before = (
        jax.config.jax_compilation_cache_dir,
        jax.config.jax_persistent_cache_min_compile_time_secs,
    )
    jax.config.update("jax_compilation_cache_dir", str(tmp_path_factory.mktemp("xla")))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    yield
    jax.config.update("jax_compilation_cache_dir", before[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", before[1])
