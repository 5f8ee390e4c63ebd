"""jaxcontrol's CPU XLA setting: applied before JAX starts, never over the user's choice."""

import os

import pytest

from jaxcontrol import xla_flags


def test_in_effect_in_this_process():
    """conftest imports jaxcontrol before any computation, so the flag is set."""
    assert xla_flags.FUSION_EMITTERS_FLAG in os.environ["XLA_FLAGS"].split()


@pytest.mark.parametrize("started", [False, True])
def test_the_users_setting_wins(monkeypatch, started):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    monkeypatch.setattr(xla_flags, "_backends_started", lambda: started)
    assert not xla_flags.apply()
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_use_fusion_emitters=true"


def test_added_beside_other_flags_before_jax_starts(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    monkeypatch.setattr(xla_flags, "_backends_started", lambda: False)
    assert xla_flags.apply()
    assert os.environ["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=4",
        xla_flags.FUSION_EMITTERS_FLAG,
    ]


def test_too_late_warns_and_leaves_flags_alone(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setattr(xla_flags, "_backends_started", lambda: True)
    with pytest.warns(UserWarning, match="Import jaxcontrol first"):
        assert not xla_flags.apply()
    assert "XLA_FLAGS" not in os.environ


@pytest.mark.parametrize(
    "version, knows",
    [("0.9.2", True), ("0.10.2", True), ("0.11.0", False), ("0.11.2", False), ("1.0", False)],
)
def test_only_added_where_xla_knows_the_flag(monkeypatch, version, knows):
    """jaxlib 0.11's XLA aborts the process on the (then unknown) flag."""
    assert xla_flags.xla_knows_flag(version) is knows
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setattr(xla_flags, "_backends_started", lambda: False)
    monkeypatch.setattr(xla_flags, "xla_knows_flag", lambda: knows)
    assert xla_flags.apply() is knows
    assert (os.environ.get("XLA_FLAGS") == xla_flags.FUSION_EMITTERS_FLAG) is knows
