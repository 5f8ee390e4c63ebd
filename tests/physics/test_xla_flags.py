"""jaxcontrol's CPU XLA setting (`import_setup.set_xla_cpu_flags`): applied before JAX
starts, never over the user's choice."""

import os

import pytest

from jaxcontrol import import_setup, xla_flags


def test_in_effect_in_this_process():
    """conftest imports jaxcontrol before any computation, so the flag is set."""
    assert import_setup.FUSION_EMITTERS_FLAG in os.environ["XLA_FLAGS"].split()


@pytest.mark.parametrize("started", [False, True])
def test_the_users_setting_wins(monkeypatch, started):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    monkeypatch.setattr(import_setup, "jax_backends_started", lambda: started)
    assert not import_setup.set_xla_cpu_flags()
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_use_fusion_emitters=true"


def test_added_beside_other_flags_before_jax_starts(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    monkeypatch.setattr(import_setup, "jax_backends_started", lambda: False)
    assert import_setup.set_xla_cpu_flags()
    assert os.environ["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=4",
        import_setup.FUSION_EMITTERS_FLAG,
    ]


def test_too_late_warns_and_leaves_flags_alone(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setattr(import_setup, "jax_backends_started", lambda: True)
    with pytest.warns(UserWarning, match="Import jaxcontrol first"):
        assert not import_setup.set_xla_cpu_flags()
    assert "XLA_FLAGS" not in os.environ


@pytest.mark.parametrize(
    "version, knows",
    [("0.9.2", True), ("0.10.2", True), ("0.11.0", False), ("0.11.2", False), ("1.0", False)],
)
def test_only_added_where_xla_knows_the_flag(monkeypatch, version, knows):
    """jaxlib 0.11's XLA aborts the process on the (then unknown) flag."""
    assert import_setup.xla_knows_flag(version) is knows
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setattr(import_setup, "jax_backends_started", lambda: False)
    monkeypatch.setattr(import_setup, "xla_knows_flag", lambda: knows)
    assert import_setup.set_xla_cpu_flags() is knows
    assert (os.environ.get("XLA_FLAGS") == import_setup.FUSION_EMITTERS_FLAG) is knows


def test_the_former_module_names_the_same_functions():
    """`jaxcontrol.xla_flags` stays importable (tests/conftest.py uses it)."""
    assert xla_flags.apply is import_setup.set_xla_cpu_flags
    assert xla_flags._backends_started is import_setup.jax_backends_started
    assert xla_flags.FUSION_EMITTERS_FLAG == import_setup.FUSION_EMITTERS_FLAG
