"""A small hand-written sweep directory: two tasks x two seeds, and one unfinished run.

The returns are chosen to be checked by hand:

| run | 100k | 500k | 1M (final, 100 episodes) | dm_control |
|---|---|---|---|---|
| cartpole-swingup seed 0 | 100 | 800 | 850 ± 2 | 848 ± 2 |
| cartpole-swingup seed 1 | 200 | 900 | 870 ± 2 | 700 ± 2 (fails the transfer check) |
| cheetah-run seed 0 | 300 | 600 | 700 ± 3 | 690 ± 3 |
| cheetah-run seed 1 | 400 | 700 | 720 ± 3 | 725 ± 3 |

so cartpole-swingup's 100k mean is 150 (t interval 150 ± 12.706 * 50 = ±635.3), its 500k
mean 850, its 1M mean 860; cheetah-run's 500k mean is 650, 115 short of CURL's 765. Each run
took 1 wall-clock hour and 2 CPU-hours on a 2-core machine. walker-walk seed 0 has trained
but has no eval.json or sweep_run.json yet.
"""

from __future__ import annotations

import json
import pathlib

RETURNS = {
    ("cartpole-swingup", 0): (100.0, 800.0, 840.0, 850.0, 848.0),
    ("cartpole-swingup", 1): (200.0, 900.0, 860.0, 870.0, 700.0),
    ("cheetah-run", 0): (300.0, 600.0, 690.0, 700.0, 690.0),
    ("cheetah-run", 1): (400.0, 700.0, 730.0, 720.0, 725.0),
}
STDERR = {"cartpole-swingup": 2.0, "cheetah-run": 3.0}
STEPS = 1_000_000
CHUNK = 100_000
MACHINE = {"cpu": "AMD EPYC 7B13", "cores": 2, "platform": "cpu", "host": "3f2a"}


def _dump(path: pathlib.Path, value) -> None:
    path.write_text(json.dumps(value, indent=1) + "\n")


def metrics_lines(at_100k: float, at_500k: float, at_1m: float) -> list[str]:
    """metrics.jsonl of a 1M-step run in chunks of 100k, with periodic evaluations at 100k,
    500k and 1M (10 episodes each)."""
    evals = {100_000: at_100k, 500_000: at_500k, 1_000_000: at_1m}
    lines = []
    for chunk, steps in enumerate(range(CHUNK, STEPS + 1, CHUNK)):
        entry = {
            "chunk": chunk,
            "env_steps": steps,
            "wall_seconds": steps / 300.0,
            "steps_per_second": 300.0,
            "critic_loss": 0.5,
        }
        if steps in evals:
            entry |= {
                "eval_mean_return": evals[steps],
                "eval_stderr": 5.0,
                "eval_episodes": 10,
                "eval_returns": [evals[steps]] * 10,
            }
        lines.append(json.dumps(entry))
    return lines


def _eval(env: str, mean: float, stderr: float, **extra) -> dict:
    return {
        "mean_return": mean,
        "stderr": stderr,
        "episodes": 100,
        "env_steps": STEPS,
        "wall_seconds": 3000.0,
        "eval_seconds": 60.0,
        "returns": [mean] * 100,
        "evaluated_at": "2026-12-01T00:00:00Z",
        "env": env,
        "action_repeat": 1,
        "pixels": False,
        "published": None,
        **extra,
    }


def make_sweep(root: pathlib.Path) -> pathlib.Path:
    """Writes the fake sweep under `root`; returns its directory."""
    sweep = root / "sweep"
    sweep.mkdir(parents=True)
    _dump(
        sweep / "sweep.json",
        {
            "agent": "sac",
            "tasks": ["cartpole-swingup", "cheetah-run", "walker-walk"],
            "seeds": [0, 1],
            "steps": STEPS,
            "set": [],
            "action_repeat": 1,
            "eval_every": 100_000,
            "eval_episodes": 10,
            "final_episodes": 100,
            "in_dm_control": True,
        },
    )
    for (env, seed), (r100k, r500k, r1m, final, dmc) in RETURNS.items():
        run = sweep / env / f"seed-{seed}"
        (run / "checkpoints" / "1000000").mkdir(parents=True)
        (run / "checkpoints" / "1000000" / "state").write_bytes(b"\0" * 64)
        _dump(
            run / "run.json",
            {
                "env": env,
                "agent": "sac",
                "seed": seed,
                "action_repeat": 1,
                "config": {"total_env_steps": STEPS},
                "backend": "mujoco",
            },
        )
        (run / "metrics.jsonl").write_text("\n".join(metrics_lines(r100k, r500k, r1m)) + "\n")
        _dump(run / "eval.json", _eval(env, final, STDERR[env]))
        _dump(
            run / "eval_dm_control.json",
            _eval(env, dmc, STDERR[env], checkpoint="checkpoints/1000000", renderer=None),
        )
        _dump(
            run / "sweep_run.json",
            {
                "finished_at": "2026-12-01T00:00:00Z",
                "wall_seconds": 3600.0,
                "cpu_seconds": 7200.0,
                "code_version": "abc1234",
                "jax_version": "0.9.2",
                "jaxcontrol_version": "0.1.0",
                "machine": MACHINE,
            },
        )
    unfinished = sweep / "walker-walk" / "seed-0"
    unfinished.mkdir(parents=True)
    _dump(
        unfinished / "run.json",
        {"env": "walker-walk", "agent": "sac", "seed": 0, "action_repeat": 1, "config": {}},
    )
    (unfinished / "metrics.jsonl").write_text("\n".join(metrics_lines(1.0, 2.0, 3.0)[:3]) + "\n")
    return sweep
