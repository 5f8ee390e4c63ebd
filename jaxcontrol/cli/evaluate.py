"""``jaxcontrol evaluate``: evaluate a run's newest intact checkpoint.

jaxcontrol evaluate runs/a --episodes 100          # into runs/a/eval.json
jaxcontrol evaluate runs/a --in-dm-control          # into runs/a/eval_dm_control.json
"""

from __future__ import annotations

import json
import os

from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli import compile_cache
from jaxcontrol.cli.args import INT_MAX, UsageError, fail, integer
from jaxcontrol.cli.train import extra_missing, print_published

SUMMARY = "evaluate a run's newest checkpoint, in jaxcontrol or inside dm_control"


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol evaluate``."""
    p = args_lib.Parser(
        prog="jaxcontrol evaluate",
        description="Re-evaluate a run's latest checkpoint into DIR/eval.json.",
    )
    p.add_argument("dir", help="a run directory of `jaxcontrol train`")
    p.add_argument("--episodes", type=integer(1, INT_MAX), default=100)
    compile_cache.add_flag(p)
    p.add_argument(
        "--in-dm-control",
        action="store_true",
        help="evaluate inside dm_control's own environment of the task (its physics, "
        "observations and, for --pixels runs, MuJoCo's OpenGL images) into "
        "DIR/eval_dm_control.json; needs dm-control (jaxcontrol[test])",
    )
    return p


def read_run(run_dir: str):
    """`run_dir.read_run`, its problems as usage errors: (info, domain, task, config)."""
    from jaxcontrol.agents.common import run_dir as run_dir_lib  # pylint: disable=import-outside-toplevel

    try:
        return run_dir_lib.read_run(run_dir)
    except run_dir_lib.RunDirError as e:
        raise UsageError(str(e)) from e


def check_dm_control(pixels_run: bool) -> None:
    """Fails before restoring anything if dm_control (or, for pixels, OpenGL) is missing."""
    try:
        import dm_control  # pylint: disable=import-outside-toplevel,unused-import  # noqa: F401
    except ImportError as e:
        raise UsageError("--in-dm-control needs dm-control: pip install 'jaxcontrol[test]'") from e
    if pixels_run:
        from jaxcontrol.render import gl  # pylint: disable=import-outside-toplevel

        try:
            gl.require()
        except gl.RenderingUnavailable as e:
            raise UsageError(f"--in-dm-control renders dm_control's pixels: {e}") from e


def main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol evaluate``: re-evaluates the latest checkpoint."""
    status = extra_missing("evaluate")
    if status is not None:
        return status
    from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

    try:
        args = parser().parse_args(argv)
        info, domain, task, config = read_run(args.dir)
        if args.in_dm_control:
            check_dm_control(run_dir.pixels(info))
        compile_cache.use(args.compile_cache)
    except (UsageError, ValueError, TypeError) as e:
        return fail(str(e))

    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    env, learner, params, meta, step = run_dir.restore_policy(
        args.dir, info, domain, task, config, "evaluate"
    )
    if step is None:
        return fail(f"no intact checkpoint in {os.path.join(args.dir, 'checkpoints')!r}", status=1)
    if args.in_dm_control:
        return _in_dm_control(args, info, (domain, task), env, learner, params, meta, step)
    result = run_lib.evaluate_policy(env, learner, params, info["seed"], args.episodes)
    run_dir.write_eval(
        args.dir, result, meta, domain, task, run_dir.action_repeat(info), run_dir.pixels(info)
    )
    print(
        f"eval: mean_return {result['mean_return']:.1f} +- {result['stderr']:.1f} "
        f"over {result['episodes']} episodes (checkpoint {step}, "
        f"{meta['env_steps']} env steps)"
    )
    print_published(domain, task)
    return 0


def _in_dm_control(args, info, domain_task, env, learner, params, meta, step) -> int:
    """``--in-dm-control``: the policy in dm_control, beside the run's eval.json."""
    from jaxcontrol.agents.common import (
        dm_control_eval,  # pylint: disable=import-outside-toplevel
        run_dir,  # pylint: disable=import-outside-toplevel
    )
    from jaxcontrol.agents.common import run as run_lib  # pylint: disable=import-outside-toplevel

    result = dm_control_eval.evaluate_in_dm_control(
        env, learner.policy, params, info["seed"], args.episodes
    )
    pixels = run_dir.pixels(info)
    payload = run_dir.eval_payload(result, meta, *domain_task, run_dir.action_repeat(info), pixels)
    payload["checkpoint"] = step
    # where dm_control's images come from, for pixel runs
    payload["renderer"] = (
        f"MuJoCo OpenGL (MUJOCO_GL={os.environ.get('MUJOCO_GL', '')})" if pixels else None
    )
    path = os.path.join(args.dir, "eval_dm_control.json")
    run_lib.write_atomic(path, json.dumps(payload, indent=2) + "\n")
    line = (
        f"eval in dm_control: mean_return {result['mean_return']:.1f} +- "
        f"{result['stderr']:.1f} over {result['episodes']} episodes (checkpoint {step}, "
        f"{meta['env_steps']} env steps)"
    )
    ours = os.path.join(args.dir, "eval.json")
    if os.path.exists(ours):
        with open(ours, encoding="utf-8") as f:
            theirs = json.load(f).get("mean_return")
        if isinstance(theirs, (int, float)) and theirs:
            line += f"; in jaxcontrol {theirs:.1f} (ratio {result['mean_return'] / theirs:.3f})"
    print(line)
    return 0
