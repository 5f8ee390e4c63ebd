"""Shared fixtures for the learner tests: the fast toy env and an XLA cache."""

import os
import sys

import jax
import pytest
from jax.experimental.compilation_cache import compilation_cache

sys.path.insert(0, os.path.dirname(__file__))

from toy_env import ToyEnv


@pytest.fixture(scope="session")
def toy_env():
    return ToyEnv(episode_length=50)


def _persistent_cache(directory: str):
    """Points JAX's persistent compilation cache at ``directory``, then restores it.

    JAX opens its cache once per process; ``reset_cache`` makes it reopen at the
    directory now configured.
    """
    before = (
        jax.config.jax_compilation_cache_dir,
        jax.config.jax_persistent_cache_min_compile_time_secs,
    )
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    compilation_cache.reset_cache()
    yield
    jax.config.update("jax_compilation_cache_dir", before[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", before[1])
    compilation_cache.reset_cache()


@pytest.fixture(scope="module")
def xla_cache(tmp_path_factory):
    """A persistent XLA compilation cache for one test module, then restored.

    Tests that rebuild the same learner (resume, re-evaluation) then load the
    compiled programs from disk instead of compiling them again.
    """
    yield from _persistent_cache(str(tmp_path_factory.mktemp("xla")))


@pytest.fixture(scope="session")
def _toy_xla_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("xla_toy"))


@pytest.fixture(scope="module")
def toy_xla_cache(_toy_xla_dir):
    """Like ``xla_cache``, but one directory for all modules that use it.

    The fault tests (test_faults.py, test_cli_faults.py and their subprocesses)
    compile the same tiny PPO on the toy env; they compile it once.
    """
    yield from _persistent_cache(_toy_xla_dir)
