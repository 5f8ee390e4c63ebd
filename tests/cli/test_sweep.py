"""``jaxcontrol sweep`` end to end on a tiny budget: it runs, is killed, resumes without
repeating work, shares its directory between processes, and its runs render."""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jaxcontrol.agents.common import sweep_dir
from jaxcontrol.cli import sweep

pytestmark = pytest.mark.xdist_group("cli_sweep")

TASKS = ["cartpole-balance", "pendulum-swingup"]
# 4 chunks of 2 PPO updates of 16 envs x 16 steps (512 env steps) per run; evaluations
# of 2 episodes after chunks 2 and 4; final evaluations of 2 episodes, here and in dm_control.
TINY = [
    "--agent",
    "ppo",
    "--tasks",
    ",".join(TASKS),
    "--seeds",
    "2",
    "--steps",
    "2048",
    "--set",
    "num_envs=16",
    "--set",
    "unroll_length=16",
    "--set",
    "num_minibatches=2",
    "--set",
    "updates_per_chunk=2",
    "--set",
    "hidden_sizes=8,8",
    "--checkpoint-every",
    "2",
    "--eval-every",
    "1000",
    "--eval-episodes",
    "2",
    "--final-episodes",
    "2",
]
RUNS = [(task, seed) for seed in (0, 1) for task in TASKS]


def _start(out, *extra):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen(
        [sys.executable, "-m", "jaxcontrol", "sweep", *TINY, "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def _attempts(out, task, seed):
    return sweep_dir.read_attempts(sweep_dir.run_dir(str(out), task, seed))


def _chunks(out, task, seed):
    path = os.path.join(sweep_dir.run_dir(str(out), task, seed), "metrics.jsonl")
    with open(path) as f:
        return [json.loads(line)["chunk"] for line in f]


def _working_on(run):
    """Whether a process (Linux's /proc) has ``run`` on its command line."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if run.encode() in f.read():
                    return True
        except OSError:
            continue
    return False


def _wait_for(predicate, timeout=300):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_a_killed_sweep_resumes_without_repeating_work(tmp_path):
    out = tmp_path / "sweep"
    first = _start(out)
    second_run = sweep_dir.run_dir(str(out), *RUNS[1])
    # Kill the sweep once its second run has written its first checkpoint.
    _wait_for(lambda: os.path.isdir(os.path.join(second_run, "checkpoints", "2")))
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    # Its child got SIGTERM (it dies with the sweep) and stopped after a checkpoint.
    _wait_for(lambda: not _working_on(second_run), 120)
    assert sweep_dir.is_finished(sweep_dir.run_dir(str(out), *RUNS[0]))
    assert not sweep_dir.is_finished(second_run)
    time.sleep(2.5)  # the killed process's claims expire after --claim-expiry 2
    again = _start(out, "--claim-expiry", "2")
    log = again.communicate(timeout=600)[0]
    assert again.returncode == 0, log
    assert f"{RUNS[0][0]} seed 0" not in log  # finished before the kill: not run again
    for task, seed in RUNS:
        assert sweep_dir.is_finished(sweep_dir.run_dir(str(out), task, seed))
        assert _chunks(out, task, seed) == [1, 2, 3, 4]  # every chunk once
    assert len(_attempts(out, *RUNS[0])) == 1
    # The killed process's attempt on the second run was kept under way in a file of
    # its own, and recorded, as killed, by the process that resumed the run.
    killed, resumed = _attempts(out, *RUNS[1])
    assert killed["status"] == "killed" and killed["pid"] == first.pid
    assert killed["wall_seconds"] >= 0 and resumed["status"] == 0
    record = json.load(open(os.path.join(sweep_dir.run_dir(str(out), *RUNS[1]), "sweep_run.json")))
    assert record["attempts"] == 2
    assert record["wall_seconds"] == killed["wall_seconds"] + resumed["wall_seconds"]
    assert record["cpu_seconds"] > 0 and record["machine"]["cores"] >= 1
    assert not glob.glob(os.path.join(sweep_dir.run_dir(str(out), *RUNS[1]), "attempt-*.json"))
    for task, seed in RUNS:
        run = sweep_dir.run_dir(str(out), task, seed)
        evals = [l for l in map(json.loads, open(os.path.join(run, "metrics.jsonl")))]
        assert [l["env_steps"] for l in evals if "eval_mean_return" in l] == [1024, 2048]
        ours = json.load(open(os.path.join(run, "eval.json")))
        theirs = json.load(open(os.path.join(run, "eval_dm_control.json")))
        assert ours["episodes"] == theirs["episodes"] == 2

    status = subprocess.run(
        [sys.executable, "-m", "jaxcontrol", "sweep", "--out", str(out), "--status"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout.count("\tfinished") == 4

    page = tmp_path / "results.md"
    records = tmp_path / "records"
    collect = ["--collect", str(out), "--records", str(records), "--no-figures"]
    subprocess.run(
        [sys.executable, "-m", "jaxcontrol", "results", *collect, "--out", str(page)],
        check=True,
        capture_output=True,
    )
    for task, seed in RUNS:
        assert (records / "ppo" / task / f"seed-{seed}" / "curve.json").exists()
    assert "4 runs of 2 tasks" in page.read_text()

    # Without its sweep directory, a sweep with the same protocol finds every run in the
    # records and trains none of them.
    elsewhere = tmp_path / "new-machine"
    command = [sys.executable, "-m", "jaxcontrol", "sweep", *TINY, "--out", str(elsewhere)]
    again = subprocess.run(
        command + ["--skip-collected", str(records)], capture_output=True, text=True, check=True
    )
    assert "worked on 0 runs; 4 already collected" in again.stdout, again.stdout
    listed = subprocess.run(
        command[:4] + ["--out", str(elsewhere), "--status", "--skip-collected", str(records)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert listed.stdout.count("\tcollected") == 4


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 7},
        {"action_repeat": 2},
        {"backend": "mjx"},
        {"config": {"hidden_sizes": [4, 4]}},
    ],
    ids=["seed", "action_repeat", "backend", "config"],
)
def test_a_collected_run_counts_only_under_the_same_protocol(tmp_path, change):
    protocol = sweep_dir.Protocol(agent="sac", steps=1000, backend="mujoco")
    assert not sweep.collected_run(str(tmp_path), protocol, "cartpole-swingup", 0)
    target = tmp_path / "sac" / "cartpole-swingup" / "seed-0"
    target.mkdir(parents=True)
    from jaxcontrol.agents.common import run_dir

    config = run_dir.build_config("sac", 1000, [])
    run = run_dir.run_info("cartpole-swingup", "sac", 0, config, 1, False, "mujoco")
    for name in ("eval.json", "sweep_run.json"):
        (target / name).write_text("{}")
    (target / "run.json").write_text(json.dumps(run))
    assert not sweep.collected_run(str(tmp_path), protocol, "cartpole-swingup", 0)  # no dm_control
    (target / "eval_dm_control.json").write_text("{}")
    assert sweep.collected_run(str(tmp_path), protocol, "cartpole-swingup", 0)
    default_backend = sweep_dir.Protocol(agent="sac", steps=1000)
    assert sweep.collected_run(str(tmp_path), default_backend, "cartpole-swingup", 0)
    on_mjx = sweep_dir.Protocol(agent="sac", steps=1000, backend="mjx")
    assert not sweep.collected_run(str(tmp_path), on_mjx, "cartpole-swingup", 0)  # C's run
    changed = {**run, **change}
    if "config" in change:
        changed["config"] = {**run["config"], **change["config"]}
    (target / "run.json").write_text(json.dumps(changed))
    assert not sweep.collected_run(str(tmp_path), protocol, "cartpole-swingup", 0)


def test_two_processes_share_a_sweep_and_never_run_one_run_twice(tmp_path):
    out = tmp_path / "sweep"
    processes = [_start(out, "--seeds", "1"), _start(out, "--seeds", "1")]
    logs = [p.communicate(timeout=600)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0], logs
    pids = set()
    for task, seed in RUNS[:2]:
        attempts = _attempts(out, task, seed)
        assert len(attempts) == 1 and sweep_dir.is_finished(sweep_dir.run_dir(str(out), task, seed))
        pids.add(attempts[0]["pid"])
    assert pids == {p.pid for p in processes}  # both did some of the work


def test_a_sweep_keeps_its_protocol(tmp_path, capsys):
    out = tmp_path / "sweep"
    sweep_dir.open_sweep(str(out), sweep_dir.Protocol(agent="ppo", steps=2048), TASKS, [0])
    argv = ["--agent", "sac", "--tasks", TASKS[0], "--seeds", "1", "--steps", "2048"]
    assert sweep.main([*argv, "--out", str(out)]) == 2
    assert "another protocol: agent 'ppo' != 'sac'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--agent", "sac", "--tasks", "benchmarking", "--seeds", "1"], "needs --steps"),
        (
            ["--agent", "sax", "--tasks", "all", "--seeds", "1", "--steps", "9"],
            "did you mean 'sac'",
        ),
        (
            ["--agent", "sac", "--tasks", "cheetah-rn", "--seeds", "1", "--steps", "9"],
            "cheetah-run",
        ),
        (["--agent", "sac", "--tasks", "all", "--seeds", "0", "--steps", "9"], "[1, 10000]"),
        (
            ["--agent", "sac", "--tasks", "all", "--seeds", "1", "--steps", "9", "--set", "x=1"],
            "sac config field 'x'",
        ),
    ],
)
def test_bad_sweeps_fail_in_one_line_before_anything_is_written(argv, expected, tmp_path, capsys):
    assert sweep.main([*argv, "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]
    assert not (tmp_path / "s").exists()


def test_an_attempt_under_way_counts_its_seconds_until_it_is_recorded(tmp_path, monkeypatch):
    run = str(tmp_path)
    monkeypatch.setattr(sweep._Attempt, "EVERY", 0.0)
    attempt = sweep._Attempt(run)
    attempt.tick()
    (live,) = glob.glob(os.path.join(run, "attempt-*.json"))
    with open(live) as f:
        assert json.load(f)["status"] == "running"
    # Taken for dead: another process records it as of its last write...
    assert sweep_dir.settle_live_attempts(run) == 1
    (settled,) = sweep_dir.read_attempts(run)
    assert settled["status"] == "killed" and not os.path.exists(live)
    time.sleep(0.05)
    # ...and this process, finishing, adds only the seconds since then.
    attempt.record(0)
    _, rest = sweep_dir.read_attempts(run)
    assert rest["status"] == 0 and 0.04 <= rest["wall_seconds"] < 10
    total = settled["wall_seconds"] + rest["wall_seconds"]
    assert abs(total - (time.time() - attempt.wall)) < 1.0
