"""A run directory's identity: what run.json holds, and how a run is rebuilt from it.

A run directory (what ``jaxcontrol train --out DIR`` writes) holds run.json (the
task, agent, seed, physics, observation setting and the agent's whole config),
``checkpoints/``, metrics.jsonl, eval.json and the learning curve. This module
builds a run's environment and config, reads and checks run.json, compares a
saved run with a new request (what may change on resume: only the budget,
upwards) and restores a run's policy. Errors are `RunDirError`s (ValueErrors);
the command line turns them into usage errors.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from typing import Any

from jaxcontrol import registry
from jaxcontrol.agents.common.config import INT_MAX, config_from_dict, to_dict
from jaxcontrol.agents.registry import get_agent
from jaxcontrol.user_input import parse_whole_number

MAX_ACTION_REPEAT = 1000  # a suite episode's length in control steps
# Pixels: the suite paper's pixel setting (84x84 from camera 0, 3 stacked frames), for the
# agents with a pixel encoder; a replay row of two uint8 84x84x9 stacks is 127 kB, so the
# replay holds 50k transitions (6.4 GB) unless a config override says otherwise.
PIXEL_AGENTS = ("d4pg", "sac")
PIXEL_FRAMES = 3
PIXEL_DEFAULTS = {"replay_capacity": 50_000}
# A value support (D4PG's v_min, v_max) is sized for the discounted return of rewards in
# [0, 1] per step; ActionRepeat(k) sums k rewards per step, so its default scales by k.
# Unscaled, cartpole-balance's returns at k = 8 (up to 800) all sat on the support's top
# atom: the critic could not rank actions (docs/training.md, "Learning from pixels").
SUPPORT_FIELDS = ("v_min", "v_max")
BUDGET = "total_env_steps"  # the one config field a resumed run may change (upwards)
# Config fields added after runs began, with what those runs did: PPO ran in lock-step
# with a state-independent std; the off-policy learners shifted no images.
_ADDED_FIELDS = {"stagger_episodes": False, "state_dependent_std": False, "random_shift": 0}


class RunDirError(ValueError):
    """A run directory that cannot serve the request: missing, damaged, or another run."""


def make_env(
    domain: str, task: str, action_repeat: int = 1, pixels: bool = False, backend: str = "mjx"
):
    """The environment a run trains on.

    The task on ``backend``'s physics, under ``ActionRepeat`` when k > 1; with
    ``pixels``, observed as the suite paper's 84x84 images of camera 0, the last
    ``PIXEL_FRAMES`` stacked: ``FrameStack(Pixels(...))``, uint8 (84, 84, 9), rendered
    once per (repeated) step.
    """
    import jaxcontrol  # pylint: disable=import-outside-toplevel
    from jaxcontrol import wrappers  # pylint: disable=import-outside-toplevel

    env = jaxcontrol.load(domain, task, backend=backend)
    if action_repeat > 1:
        env = wrappers.ActionRepeat(env, action_repeat)
    if pixels:
        env = wrappers.FrameStack(wrappers.Pixels(env), PIXEL_FRAMES)
    return env


def run_defaults(agent: str, pixels: bool, action_repeat: int) -> dict:
    """Config defaults that depend on the run: the pixel replay size, a value support
    scaled by the action repeat. Overrides given to `build_config` win over them."""
    defaults = dict(PIXEL_DEFAULTS) if pixels else {}
    fields = {f.name: f for f in dataclasses.fields(get_agent(agent).config_cls)}
    for name in SUPPORT_FIELDS:
        if name in fields and action_repeat > 1:
            defaults[name] = fields[name].default * action_repeat
    return defaults


def _convert(field: dataclasses.Field, text: str) -> Any:
    """A ``name=value`` override's value as the field's type; the error names what was expected."""
    default = field.default
    if isinstance(default, bool):
        expected = "true or false (or 1 or 0)"
        value = {"true": True, "1": True, "false": False, "0": False}.get(text.lower())
    elif isinstance(default, int):
        expected, value = "an integer", parse_whole_number(text)
    elif isinstance(default, float):
        expected, value = "a finite number", None
        try:
            value = float(text) if math.isfinite(float(text)) else None
        except ValueError:
            pass
    elif isinstance(default, tuple):
        expected = "comma-separated positive integers, e.g. 64,64"
        widths = [parse_whole_number(x) for x in text.split(",")] if text else []
        ok = all(w is not None and 0 < w <= INT_MAX for w in widths)
        value = tuple(widths) if ok else None
    else:
        expected, value = "text", text
    if value is None:
        raise RunDirError(f"bad value {text!r} for {field.name}: expected {expected}")
    return value


def build_config(agent: str, steps: int, overrides: list[str], defaults: dict | None = None):
    """The agent's config with ``total_env_steps``, then ``defaults``, then ``name=value``
    overrides (each value text, converted to the field's type).

    Raises:
      RunDirError: an unknown field, a bad value or a failed validation.
    """
    config_cls = get_agent(agent).config_cls
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    values: dict[str, Any] = {BUDGET: steps, **(defaults or {})}
    for item in overrides:
        name, sep, text = item.partition("=")
        if not sep:
            raise RunDirError(f"--set expects name=value, got {item!r}")
        if name == BUDGET:
            raise RunDirError(f"--set {BUDGET}: give the budget with --steps instead")
        if name not in fields:
            raise RunDirError(str(registry.unknown_name(f"{agent} config field", name, fields)))
        values[name] = _convert(fields[name], text)
    try:
        return config_cls(**values)
    except (TypeError, ValueError) as e:
        raise RunDirError(str(e)) from e


def run_info(
    env: str, agent: str, seed: int, config, action_repeat: int, pixels: bool, backend: str
) -> dict:
    """What run.json records of a run: its identity, which a resumed run must match."""
    info = {
        "env": env,
        "action_repeat": action_repeat,
        "agent": agent,
        "seed": seed,
        "config": to_dict(config),
    }
    if pixels:  # absent for state runs, as in runs from before pixels
        info["pixels"] = True
    if backend != "mjx":  # absent for MJX runs, as in runs from before the C backend
        info["backend"] = backend
    return info


def holds_run(run_dir: str) -> bool:
    """Whether ``run_dir`` already holds a run (its run.json or its checkpoints)."""
    return os.path.exists(os.path.join(run_dir, "run.json")) or os.path.exists(
        os.path.join(run_dir, "checkpoints")
    )


def read_run_json(run_dir: str) -> dict:
    """The run.json of ``run_dir``.

    Raises:
      RunDirError: it is missing (named, with the checkpoints it would match when
        those exist) or damaged.
    """
    path = os.path.join(run_dir, "run.json")
    if not os.path.exists(path):
        if os.path.exists(os.path.join(run_dir, "checkpoints")):
            raise RunDirError(
                f"{path} is missing, so the checkpoints beside it cannot be "
                "matched to this command; restore it, or choose another --out"
            )
        raise RunDirError(f"no run in {run_dir!r} ({path} missing)")
    try:
        with open(path) as f:
            saved = json.load(f)
    except (OSError, ValueError) as e:  # ValueError: json.JSONDecodeError, bad UTF-8
        saved = f"{e}"
    if not isinstance(saved, dict):
        reason = saved if isinstance(saved, str) else "not a JSON object"
        raise RunDirError(f"{path}: damaged ({reason}); restore it, or choose another --out")
    return saved


def differences(saved: dict, current: dict) -> list[str]:
    """What differs between a run's saved identity (run.json, or a checkpoint's
    manifest) and a request's (`run_info`); the budget is `extended_from`'s to judge."""
    diffs = []
    # Runs from before action repeats, pixels and backends leave them out, as state
    # and MJX runs still do.
    saved = {"action_repeat": 1, "pixels": False, "backend": "mjx", **saved}
    current = {"pixels": False, "backend": "mjx", **current}
    for key in ("env", "action_repeat", "pixels", "backend", "agent", "seed"):
        if saved.get(key) != current[key]:
            diffs.append(f"{key} {saved.get(key)!r} != {current[key]!r}")
    old, new = saved.get("config"), current["config"]
    old = old if isinstance(old, dict) else {}  # a run.json edited by hand
    old = {**{name: v for name, v in _ADDED_FIELDS.items() if name in new}, **old}
    for name in sorted((set(old) | set(new)) - {BUDGET}):
        if old.get(name) != new.get(name):
            diffs.append(f"{name} {old.get(name)!r} != {new.get(name)!r}")
    return diffs


def extended_from(saved: dict, config) -> int | None:
    """The run's budget when ``config``'s budget extends it; None when it is the run's own.

    Raises:
      RunDirError: a budget below the run's, a budget the config's training depends
        on (``budget_fixed_by``), or a run.json without a budget.
    """
    old = saved["config"].get(BUDGET) if isinstance(saved.get("config"), dict) else None
    new = getattr(config, BUDGET)
    if old == new:
        return None
    if not isinstance(old, int) or isinstance(old, bool):
        raise RunDirError(f"run.json: config.{BUDGET} must be an integer, got {old!r}")
    if new < old:
        raise RunDirError(
            f"the run's budget is {old} env steps; a run can be extended, not shortened"
        )
    reason = config.budget_fixed_by()
    if reason is not None:
        raise RunDirError(
            f"the run's budget is {old} env steps, and {reason}, "
            "so the run cannot be extended; start a new run"
        )
    return old


def check_same_chunks(learner, before) -> None:
    """An extended run must be cut into the chunks it was cut into (see
    `run._check_chunks`): only a budget under one chunk shortens them.

    Raises:
      RunDirError: the learner for the old budget (``before``) cuts other chunks.
    """
    if (learner.env_steps_at_init, learner.env_steps_per_chunk) != (
        before.env_steps_at_init,
        before.env_steps_per_chunk,
    ):
        raise RunDirError(
            f"the run's budget was under one chunk, so its "
            f"chunks hold {before.env_steps_per_chunk} env steps, and the new budget's would "
            f"hold {learner.env_steps_per_chunk}; start a new run"
        )


def action_repeat(info: dict) -> int:
    """A run's action repeat (1 for runs from before action repeats)."""
    k = info.get("action_repeat", 1)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_ACTION_REPEAT:
        raise RunDirError(
            f"run.json: action_repeat must be an integer in [1, {MAX_ACTION_REPEAT}], got {k!r}"
        )
    return k


def backend(info: dict) -> str:
    """A run's physics backend ("mjx" for runs without the key)."""
    from jaxcontrol import cpu_physics  # pylint: disable=import-outside-toplevel

    value = info.get("backend", "mjx")
    if value not in cpu_physics.BACKENDS:
        raise RunDirError(
            f"run.json: backend must be one of {', '.join(cpu_physics.BACKENDS)}, got {value!r}"
        )
    return value


def pixels(info: dict) -> bool:
    """Whether a run learns from pixels (False for runs without the key)."""
    value = info.get("pixels", False)
    if not isinstance(value, bool):
        raise RunDirError(f"run.json: pixels must be true or false, got {value!r}")
    return value


def read_run(run_dir: str) -> tuple[dict, str, str, Any]:
    """A run directory's run.json, checked: (info, domain, task, config).

    Raises:
      RunDirError: no run there, a damaged run.json, or an unknown task or agent.
    """
    run_json = os.path.join(run_dir, "run.json")
    if not os.path.exists(run_json):
        raise RunDirError(f"no run in {run_dir!r} ({run_json} missing)")
    info = read_run_json(run_dir)
    try:
        domain, task = registry.parse_task_id(str(info.get("env")))
    except ValueError as e:
        raise RunDirError(str(e)) from e
    action_repeat(info)
    pixels(info)
    backend(info)
    try:
        agent = get_agent(info.get("agent"))
        config = config_from_dict(agent.config_cls, info.get("config", {}))
    except (ValueError, TypeError) as e:
        raise RunDirError(str(e)) from e
    return info, domain, task, config


def restore_policy(run_dir: str, info: dict, domain: str, task: str, config, prog: str):
    """The env, learner and policy of a run's newest intact checkpoint.

    Returns:
      (env, learner, params, meta, step); params, meta and step are None when no
      checkpoint is intact. Skipped checkpoints are named on stderr after `prog`.
    """
    import jax  # pylint: disable=import-outside-toplevel

    from jaxcontrol.agents.common import checkpoint as ckpt_lib  # pylint: disable=import-outside-toplevel
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    env = make_env(domain, task, action_repeat(info), pixels(info), backend(info))
    learner = get_agent(info["agent"]).make_learner(config, env)
    train_key, _ = run_lib.split_run_key(info["seed"])
    directory = os.path.join(run_dir, "checkpoints")
    struct = ckpt_lib.structure(jax.eval_shape(learner.init, train_key))
    step, _, rejected = ckpt_lib.newest_intact(directory, info, struct, differences)
    for error in rejected:
        print(f"{prog}: skipped {error}", file=sys.stderr)
    if step is None:
        return env, learner, None, None, None
    checkpointer = ckpt_lib.Checkpointer(directory)
    abstract = ckpt_lib.abstract_single_device(
        jax.eval_shape(lambda k: learner.policy_params(learner.init(k)), train_key)
    )
    params, meta = checkpointer.restore_policy(step, abstract)
    checkpointer.close()
    return env, learner, params, meta, step


def eval_payload(
    result: dict, meta: dict, domain: str, task: str, action_repeat: int, pixels: bool
) -> dict:
    """What eval.json (and eval_dm_control.json) record of an evaluation."""
    from jaxcontrol import baselines  # pylint: disable=import-outside-toplevel

    return {
        "mean_return": result["mean_return"],
        "stderr": result["stderr"],
        "episodes": result["episodes"],
        "env_steps": meta["env_steps"],
        "wall_seconds": meta["wall_seconds"],
        "eval_seconds": result["eval_seconds"],
        "returns": result["returns"],
        "evaluated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "env": f"{domain}-{task}",
        # env_steps count the learner's steps; each is this many control steps of the task.
        "action_repeat": action_repeat,
        "pixels": pixels,
        # The suite report's mean and standard error over seeds, same protocol (None if the
        # task was not among its benchmarks).
        "published": baselines.reference(domain, task),
    }


def write_eval(
    run_dir: str,
    result: dict,
    meta: dict,
    domain: str,
    task: str,
    action_repeat: int,
    pixels: bool = False,
) -> dict:
    """Writes eval.json and the learning curve's plot; returns what eval.json holds."""
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    payload = eval_payload(result, meta, domain, task, action_repeat, pixels)
    run_lib.write_atomic(os.path.join(run_dir, "eval.json"), json.dumps(payload, indent=2) + "\n")
    run_lib.plot_learning_curve(run_dir, payload)
    return payload


def published_line(domain: str, task: str) -> str | None:
    """One line of the suite report's scores for the task, or None if it has none."""
    from jaxcontrol import baselines  # pylint: disable=import-outside-toplevel

    reference = baselines.reference(domain, task)
    if reference is None:
        return None
    published = ", ".join(
        f"{agent.upper()} {s['mean']:.1f} +- {s['stderr']:.1f}"
        for agent, s in reference["after_1e8_steps"].items()
    )
    return f"published after 1e8 steps (tech report, Table 1): {published}"
