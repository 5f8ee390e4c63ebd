"""``jaxcontrol video``: an mp4 of a run's policy, or of a random policy.

jaxcontrol video --env cheetah-run --seconds 10 --out cheetah.mp4      # random policy
jaxcontrol video --run runs/a --seconds 10 --out a.mp4                 # a run's policy
"""

from __future__ import annotations

import math

from jaxcontrol.cli import args as args_lib
from jaxcontrol.cli.args import SEED_MAX, UsageError, fail, integer

SUMMARY = "an mp4 of a run's policy or of a random one (needs jaxcontrol[video])"


def parser() -> args_lib.Parser:
    """The command line of ``jaxcontrol video``."""
    p = args_lib.Parser(
        prog="jaxcontrol video",
        description="Record an mp4 of a run's policy (--run) or of a random policy.",
    )
    args_lib.add_env(p, default=None, help="DOMAIN-TASK (default: the run's)")
    p.add_argument("--run", default=None, help="a run directory of `jaxcontrol train`")
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds")
    p.add_argument("--out", required=True, help="the mp4 to write")
    p.add_argument("--camera", default="0", help="camera index or name (default 0)")
    p.add_argument("--height", type=integer(2, 4096), default=240)
    p.add_argument("--width", type=integer(2, 4096), default=320)
    p.add_argument("--seed", type=integer(0, SEED_MAX), default=0)
    return p


def main(argv: list[str]) -> int:
    """Entry point of ``jaxcontrol video``; returns the exit status."""
    from jaxcontrol.render import gl, video  # pylint: disable=import-outside-toplevel

    try:
        args = parser().parse_args(argv)
        if args.env is None and args.run is None:
            raise UsageError("give --env DOMAIN-TASK, or --run RUN_DIR (or both)")
        if not (math.isfinite(args.seconds) and 0 < args.seconds <= 3600):
            raise UsageError(f"--seconds must be in (0, 3600], got {args.seconds}")
        if args.height % 2 or args.width % 2:
            raise UsageError("--height and --width must be even (the mp4's yuv420p needs it)")
        camera = int(args.camera) if args.camera.lstrip("-").isdigit() else args.camera
        video.require_encoder()
        run = None
        if args.run is not None:
            from jaxcontrol.cli.evaluate import read_run  # pylint: disable=import-outside-toplevel

            run = read_run(args.run)
            if args.env is not None and args.env != run[0]["env"]:
                raise UsageError(f"--env {args.env} but the run trained {run[0]['env']}")
        domain, task = args_lib.parse_env(args.env or run[0]["env"])
        gl.require()
        import jaxcontrol  # pylint: disable=import-outside-toplevel
        from jaxcontrol.render import cpu  # pylint: disable=import-outside-toplevel

        env = jaxcontrol.load(domain, task)
        cpu.camera_index(env.mj_model, camera)
        mj = env.mj_model.vis.global_
        cpu.check_size(args.height, args.width, (mj.offheight, mj.offwidth))
    except (UsageError, ValueError, TypeError, ImportError, gl.RenderingUnavailable) as e:
        return fail(str(e))

    policy = params = None
    if run is not None:
        from jaxcontrol.agents.common import run_dir  # pylint: disable=import-outside-toplevel

        info, domain, task, config = run
        env, learner, params, _, step = run_dir.restore_policy(
            args.run, info, domain, task, config, "video"
        )
        if step is None:
            return fail(f"no intact checkpoint in {args.run!r}", status=1)
        policy = learner.policy
        print(f"video: {info['agent']} policy of checkpoint {step} from {args.run}")
    try:
        frames = video.record(
            env,
            args.out,
            args.seconds,
            policy,
            params,
            seed=args.seed,
            height=args.height,
            width=args.width,
            camera_id=camera,
        )
    except OSError as e:
        return fail(f"cannot write {args.out!r}: {e}", status=1)
    print(f"video: wrote {args.out} ({frames} frames, {args.seconds:g} s of {domain}-{task})")
    return 0
