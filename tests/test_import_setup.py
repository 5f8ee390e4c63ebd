"""What `import jaxcontrol` sets up (`jaxcontrol.import_setup`), seen from a fresh process.

The import prints nothing, leaves every `jax.config` value as the user set it (or at
JAX's default), and applies its pieces in an order that lets each one work. The XLA
flag and the MJX fix have their own tests (test_xla_flags.py, test_mjx_line_search.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from jaxcontrol import import_setup, mjx_capsule_capsule, mjx_capsule_frame
from jaxcontrol.render import gl

# Prints `jax.config.values` (as reprs) after the user's settings (argv[1], JSON) and
# again after the statement argv[2] ("import jaxcontrol", or a hand-made change).
_SNAPSHOT = textwrap.dedent(
    """
    import json, sys
    import jax
    for name, value in json.loads(sys.argv[1]).items():
        jax.config.update(name, value)
    before = {name: repr(value) for name, value in jax.config.values.items()}
    exec(sys.argv[2])
    after = {name: repr(value) for name, value in jax.config.values.items()}
    print(json.dumps({"before": before, "after": after}))
    """
)

USER_SETTINGS = {
    "jax_enable_x64": True,
    "jax_default_matmul_precision": "highest",
    "jax_compilation_cache_dir": "/tmp/the-users-own-cache",
}


def _env(**changes: str | None) -> dict[str, str]:
    """This process's environment with `changes` (None: removed)."""
    env = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _python(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=env if env is not None else _env(),
        timeout=300,
        check=False,
    )


def _snapshots(settings: dict, statement: str) -> tuple[dict, dict]:
    done = _python(["-c", _SNAPSHOT, json.dumps(settings), statement])
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return out["before"], out["after"]


def _changed(before: dict, after: dict) -> dict:
    """The names whose values differ, as {name: (before, after)}."""
    return {
        name: (before.get(name), after.get(name))
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    }


def test_import_prints_nothing():
    done = _python(["-c", "import jaxcontrol"])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


@pytest.mark.parametrize("settings", [{}, USER_SETTINGS], ids=["defaults", "user-settings"])
def test_import_leaves_jax_config_as_the_user_left_it(settings):
    before, after = _snapshots(settings, "import jaxcontrol")
    assert _changed(before, after) == {}
    for name, value in settings.items():
        assert after[name] == repr(value), name
    # The same settings in a process that never imports jaxcontrol: every other
    # value is JAX's default there and here.
    _, without = _snapshots(settings, "")
    assert _changed(without, after) == {}


def test_the_comparison_sees_a_changed_config():
    """The check above can fail: a statement that resets a user's value, or sets
    one the user left alone, shows up in the comparison."""
    statement = (
        "jax.config.update('jax_enable_x64', False); jax.config.update('jax_debug_nans', True)"
    )
    before, after = _snapshots(USER_SETTINGS, statement)
    assert _changed(before, after) == {
        "jax_debug_nans": ("False", "True"),
        "jax_enable_x64": ("True", "False"),
    }
    _, without = _snapshots(USER_SETTINGS, "")
    assert set(_changed(without, after)) == {"jax_debug_nans", "jax_enable_x64"}


def test_too_late_for_the_xla_flag_warns_at_the_users_import_line(tmp_path):
    """JAX started before `import jaxcontrol`: the warning names the user's own line."""
    script = tmp_path / "started_jax_first.py"
    script.write_text("import jax\njax.devices()\nimport jaxcontrol\n")
    done = _python([str(script)], env=_env(XLA_FLAGS=None, JAX_PLATFORMS="cpu"))
    assert done.returncode == 0, done.stderr
    assert f"{script}:3: UserWarning: JAX started its backends" in done.stderr, done.stderr


def test_gymnasium_imported_first_gets_the_ids_at_once():
    """Where Gymnasium is imported before jaxcontrol, the ids are registered at the end
    of `import jaxcontrol` (they read `jaxcontrol.ALL_TASKS`)."""
    code = (
        "import gymnasium, jaxcontrol; "
        "print(all(f'jaxcontrol/{d}-{t}-v0' in gymnasium.registry for d, t in jaxcontrol.ALL_TASKS))"
    )
    done = _python(["-c", code])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_the_mujoco_gl_default_never_overrides(monkeypatch):
    monkeypatch.setattr(gl, "headless_default", lambda: "osmesa")
    monkeypatch.delitem(sys.modules, "mujoco")  # as before MuJoCo loads
    monkeypatch.setenv("MUJOCO_GL", "disable")
    assert import_setup.choose_mujoco_gl() is None
    assert os.environ["MUJOCO_GL"] == "disable"  # the user's value
    monkeypatch.delenv("MUJOCO_GL")
    assert import_setup.choose_mujoco_gl() == "osmesa"
    assert os.environ["MUJOCO_GL"] == "osmesa"
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setitem(sys.modules, "mujoco", object())  # MuJoCo already read it
    assert import_setup.choose_mujoco_gl() is None
    assert "MUJOCO_GL" not in os.environ


def test_only_the_missing_warp_lines_are_dropped():
    text = (
        "Failed to import warp: No module named 'warp'\n"
        "Failed to import mujoco_warp: No module named 'warp'\n"
        "Failed to import warp: CUDA driver version is insufficient\n"
        "something else\n"
    )
    assert import_setup.without_missing_warp_lines(text) == (
        "Failed to import warp: CUDA driver version is insufficient\nsomething else\n"
    )


@pytest.mark.parametrize("fix", [mjx_capsule_frame, mjx_capsule_capsule], ids=["frame", "pairs"])
def test_the_opt_in_capsule_fixes_are_installed_only_when_asked(fix, monkeypatch):
    """`fix_mjx_capsules` (what `import jaxcontrol` runs): "1" installs a fix, "0" or unset
    leaves MJX's own."""
    try:
        monkeypatch.setenv(fix.ENABLE_ENV, "1")
        assert import_setup.fix_mjx_capsules() == fix.applied() != ()
        monkeypatch.setenv(fix.ENABLE_ENV, "0")
        assert import_setup.fix_mjx_capsules() == ()
    finally:
        monkeypatch.delenv(fix.ENABLE_ENV)
        import_setup.fix_mjx_capsules()
    assert fix.applied() == ()
