"""MuJoCo Playground's ports of suite tasks, as a throughput peer (benchmarks only).

Playground (PyPI `playground`, module `mujoco_playground`) is not a dependency of
jaxcontrol; `benchmarks/throughput.py --playground` loads it when installed.
Its package `__init__` imports the locomotion, manipulation and torch modules
too, which need more than the suite ports; `load` imports the suite ports alone.

Playground's ports change the physics for speed (timesteps, solver caps, contact
settings), so `describe` reports each port's control step, physics step and
solver caps beside its speed. `impl="jax"` runs the same MJX JAX pipeline as
jaxcontrol; Playground's own default, MuJoCo Warp, needs `warp-lang`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types

# jaxcontrol DOMAIN-TASK -> Playground's name for its port (the ports that exist).
NAMES = {
    "acrobot-swingup": "AcrobotSwingup",
    "acrobot-swingup_sparse": "AcrobotSwingupSparse",
    "ball_in_cup-catch": "BallInCup",
    "cartpole-balance": "CartpoleBalance",
    "cartpole-balance_sparse": "CartpoleBalanceSparse",
    "cartpole-swingup": "CartpoleSwingup",
    "cartpole-swingup_sparse": "CartpoleSwingupSparse",
    "cheetah-run": "CheetahRun",
    "finger-spin": "FingerSpin",
    "finger-turn_easy": "FingerTurnEasy",
    "finger-turn_hard": "FingerTurnHard",
    "fish-swim": "FishSwim",
    "hopper-hop": "HopperHop",
    "hopper-stand": "HopperStand",
    "humanoid-run": "HumanoidRun",
    "humanoid-stand": "HumanoidStand",
    "humanoid-walk": "HumanoidWalk",
    "pendulum-swingup": "PendulumSwingup",
    "point_mass-easy": "PointMass",
    "reacher-easy": "ReacherEasy",
    "reacher-hard": "ReacherHard",
    "swimmer-swimmer6": "SwimmerSwimmer6",
    "walker-run": "WalkerRun",
    "walker-stand": "WalkerStand",
    "walker-walk": "WalkerWalk",
}


def available() -> bool:
    """Whether Playground is installed."""
    return importlib.util.find_spec("mujoco_playground") is not None


def _suite_module():
    """`mujoco_playground._src.dm_control_suite`, without the package's `__init__`."""
    if "mujoco_playground" not in sys.modules:
        spec = importlib.util.find_spec("mujoco_playground")
        if spec is None:
            raise ImportError("MuJoCo Playground is not installed: pip install playground")
        package = types.ModuleType("mujoco_playground")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["mujoco_playground"] = package
    return importlib.import_module("mujoco_playground._src.dm_control_suite")


def load(name: str, impl: str = "jax"):
    """Playground's port of `name` (a jaxcontrol DOMAIN-TASK) on MJX `impl`."""
    if name not in NAMES:
        raise ValueError(f"Playground has no port of {name!r}; it ports {sorted(NAMES)}")
    os.environ.setdefault("MUJOCO_GL", "disable")
    return _suite_module().load(NAMES[name], config_overrides={"impl": impl})


def describe(env) -> str:
    """The port's control step, physics step and solver caps, e.g. 'dt 0.01/0.005 it 4/8'."""
    opt = env.mj_model.opt
    return f"dt {env.dt:g}/{env.sim_dt:g} it {opt.iterations}/{opt.ls_iterations}"
