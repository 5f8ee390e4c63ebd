"""``--compile-cache``: where ``jaxcontrol train`` and ``evaluate`` keep compiled programs."""

import os

import jax
import pytest
from conftest import _persistent_cache
from toy_cli import TOY_ARGS, use_toy_env

from jaxcontrol.cli import compile_cache, evaluate, train


@pytest.fixture
def fresh_cache_config():
    """No cache configured (as in a fresh process), then the test process's own again."""
    yield from _persistent_cache(None)


def _files(directory):
    return {name for _, _, names in os.walk(directory) for name in names}


@pytest.fixture
def cache_events():
    """Counts JAX's persistent-cache hits and misses while the test runs."""
    counts = {"hits": 0, "misses": 0}

    def listen(event, **kwargs):
        for name in counts:
            if event == f"/jax/compilation_cache/cache_{name}":
                counts[name] += 1

    jax.monitoring.register_event_listener(listen)
    yield counts
    jax.monitoring.unregister_event_listener(listen)


def test_the_cache_directory_is_the_flags_then_jaxs_then_ours(
    fresh_cache_config, tmp_path, monkeypatch
):
    monkeypatch.delenv("JAXCONTROL_COMPILE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache.use(None) == os.path.join(tmp_path, "jaxcontrol", "xla")
    jax.config.update("jax_compilation_cache_dir", None)
    flag, ours = str(tmp_path / "flag"), str(tmp_path / "ours")
    assert compile_cache.use(flag) == flag
    assert jax.config.jax_compilation_cache_dir == flag
    assert compile_cache.use(None) == flag  # set already (JAX_COMPILATION_CACHE_DIR)
    jax.config.update("jax_compilation_cache_dir", None)
    monkeypatch.setenv("JAXCONTROL_COMPILE_CACHE", ours)
    assert compile_cache.use(None) == ours
    jax.config.update("jax_compilation_cache_dir", None)
    assert compile_cache.use("none") is None
    assert jax.config.jax_compilation_cache_dir is None
    monkeypatch.setenv("JAXCONTROL_COMPILE_CACHE", "none")
    assert compile_cache.use(None) is None
    assert jax.config.jax_compilation_cache_dir is None


def test_an_unusable_cache_folder_is_one_warning_not_an_error(fresh_cache_config, tmp_path, capsys):
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert compile_cache.use(str(blocked / "xla")) is None
    assert jax.config.jax_compilation_cache_dir is None
    assert capsys.readouterr().err.startswith("warning: no compilation cache: ")


def test_a_second_run_compiles_nothing(fresh_cache_config, cache_events, tmp_path, monkeypatch):
    """The same command again (another --out) loads every program from the cache."""
    use_toy_env(monkeypatch)
    cache = str(tmp_path / "xla")
    argv = [*TOY_ARGS, "--compile-cache", cache]
    jax.clear_caches()  # nothing compiled by earlier tests in this process is reused
    assert train.main([*argv, "--out", str(tmp_path / "a")]) == 0
    first = _files(cache)
    assert first and cache_events["misses"] and not cache_events["hits"], cache_events
    cache_events.update(hits=0, misses=0)
    jax.clear_caches()  # as in a new process: no executables kept in memory
    assert train.main([*argv, "--out", str(tmp_path / "b")]) == 0
    assert cache_events["hits"] and not cache_events["misses"], cache_events
    assert _files(cache) == first
    again = ["--compile-cache", cache, "--episodes", "2"]
    assert evaluate.main([str(tmp_path / "b"), *again]) == 0


def test_a_rejected_command_line_leaves_the_cache_alone(fresh_cache_config, tmp_path, capsys):
    cache = tmp_path / "xla"
    argv = ["--env", "cartpole-nope", "--agent", "ppo", "--steps", "10"]
    rc = train.main([*argv, "--out", str(tmp_path / "run"), "--compile-cache", str(cache)])
    assert rc == 2 and "cartpole-nope" in capsys.readouterr().err
    assert not cache.exists() and jax.config.jax_compilation_cache_dir is None
