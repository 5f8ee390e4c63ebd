"""Envs sharded over 4 (forced host) devices: learns, and matches one device.

XLA_FLAGS must be set before jax is imported, so the runs happen in a
subprocess (multidevice_check.py).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

# One xdist worker per module, so module-scoped fixtures build once under
# `pytest -n 2 --dist loadgroup`.
pytestmark = pytest.mark.xdist_group("agents_multidevice")

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def results():
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu"
    )
    proc = subprocess.run(
        [sys.executable, os.path.join(HERE, "multidevice_check.py"), "ppo", "sac", "d4pg"],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    return {r["agent"]: r for r in lines}


@pytest.mark.parametrize("name", ["ppo", "sac", "d4pg"])
def test_four_devices_shard_learn_and_agree(results, name):
    r = results[name]
    assert r["devices_one"] == 1 and r["devices_four"] == 4
    # Same global program, so the first chunk agrees up to the order of float
    # sums; later chunks may drift apart as training amplifies rounding.
    first_one, first_four = r["one"][0], r["four"][0]
    for key in first_one:
        np.testing.assert_allclose(
            first_four[key], first_one[key], rtol=1e-3, atol=1e-4, err_msg=f"{name} {key}"
        )
    assert r["eval_four"] >= 40.0, r["eval_four"]
