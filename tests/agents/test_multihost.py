"""Multi-host through `jax.distributed.initialize`: two processes on this machine.

Each process is one "host" with 2 forced CPU devices, so the mesh spans 4 devices
of 2 processes, as on a 2-host cluster. The run is compared with one process
holding all 4 devices: the same global program, so the metrics agree up to the
order of float sums.
"""

import json
import multiprocessing
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
from agent_configs import TINY_PPO_CLI

pytestmark = pytest.mark.xdist_group("agents_multihost")

# One backend named for both runs, so that they are one global program. The distributed
# runtime does not depend on it; C MuJoCo compiles no physics, so the three processes
# take 87 s on one core instead of MJX's 204 s. MJX's training program is
# test_cli.py's `test_train_on_the_other_backend`.
TRAIN = ["train", *TINY_PPO_CLI, "--eval-episodes", "4", "--backend", "mujoco"]


def _env(devices):
    """The test run's environment (its XLA flags kept, so its optimisation level too)
    with `devices` forced CPU devices."""
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}"
    return dict(
        os.environ,
        XLA_FLAGS=flags.strip(),
        JAX_PLATFORMS="cpu",
        MUJOCO_GL="disable",
    )


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _read(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        metrics = [json.loads(line) for line in f]
    with open(os.path.join(out, "eval.json")) as f:
        return metrics, json.load(f)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("multihost")
    shared, single = str(base / "two_hosts"), str(base / "one_host")
    port = _free_port()
    command = [sys.executable, "-m", "jaxcontrol", *TRAIN, "--out", shared, "--distributed"]
    hosts = [
        subprocess.Popen(
            command
            + [
                "--coordinator",
                f"localhost:{port}",
                "--num-processes",
                "2",
                "--process-id",
                str(i),
            ],
            env=_env(2),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    outputs = [host.communicate(timeout=900) for host in hosts]
    # Every host's error: when one dies early, the other only reports the timeout.
    failed = [
        f"process {i} exited {host.returncode}:\n{err[-3000:]}"
        for i, (host, (_, err)) in enumerate(zip(hosts, outputs))
        if host.returncode != 0
    ]
    assert not failed, "\n".join(failed)
    done = subprocess.run(
        [sys.executable, "-m", "jaxcontrol", *TRAIN, "--out", single, "--devices", "4"],
        env=_env(4),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return _read(shared), _read(single), [out for out, _ in outputs]


def test_two_processes_train_as_one_four_device_run(runs):
    (two_metrics, two_eval), (one_metrics, one_eval), stdouts = runs
    assert len(two_metrics) == len(one_metrics) == 2
    for key in ("policy_loss", "value_loss", "entropy"):
        np.testing.assert_allclose(
            two_metrics[0][key], one_metrics[0][key], rtol=1e-4, atol=1e-5, err_msg=key
        )
    assert two_eval["episodes"] == one_eval["episodes"] == 4
    np.testing.assert_allclose(two_eval["mean_return"], one_eval["mean_return"], rtol=1e-3)
    # Both processes evaluated the same policy; only process 0 wrote the files.
    assert all("eval: mean_return" in out for out in stdouts)


def _check_out_many_times(out, times, errors):
    from jaxcontrol.cli import args as cli_args  # pylint: disable=import-outside-toplevel
    from jaxcontrol.cli import train  # pylint: disable=import-outside-toplevel

    failures = 0
    for _ in range(times):
        try:
            train.check_writable(out)
        except cli_args.UsageError:
            failures += 1
    errors.put(failures)


def test_the_processes_of_one_run_check_their_shared_out_at_once(tmp_path):
    """Each host checks that --out is writable before the cluster forms. With one probe
    name for all, one process deleted the other's probe (FileNotFoundError: 'cannot
    write to --out'), so it exited and its peer waited out the coordinator's timeout.
    Two processes checking one folder 2,000 times each failed
    10 and 21 times in two trials with the shared name."""
    spawn = multiprocessing.get_context("spawn")
    errors = spawn.Queue()
    out = str(tmp_path / "shared")
    processes = [
        spawn.Process(target=_check_out_many_times, args=(out, 2000, errors)) for _ in range(2)
    ]
    for process in processes:
        process.start()
    failures = [errors.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert failures == [0, 0]
    assert [p.exitcode for p in processes] == [0, 0]
    assert os.listdir(out) == []
