"""The bridge to dm_control: its environments, its states in ours, and samples of both.

What talks to dm_control (`pip install 'jaxcontrol[test]'`), used by the parity
harness (`jaxcontrol.parity`), the renderer's fidelity measure and
`evaluate --in-dm-control`; users can call it too:

    dm_env = reference.reference_env("cartpole", "swingup", seed=0)
    dm_env.reset()
    state = reference.mirror(jaxcontrol.load("cartpole", "swingup"), dm_env)

The modules, one idea each:
  * `suite`: dm_control's environment of a task, seeded (`reference_env`,
    `reference_for`);
  * `overrides`: the tasks whose environment or variables need their own code,
    keyed on (domain, task);
  * `state`: `DmState` (a dm_control state), `inject` and `mirror` (ours, equal to it);
  * `batched`: batches of resets, steps and injected states, jitted per Env, and
    their C-backend variants;
  * `samples`: dm_control's transitions and resets;
  * `actions`: the range random actions are drawn from;
  * `episodes`: the steps of a whole episode;
  * `precision`: float64 or float32 for a comparison.
"""

from jaxcontrol.reference.actions import action_bounds
from jaxcontrol.reference.batched import (
    batched_inject,
    batched_inject_on_c,
    batched_reset,
    batched_reset_on_c,
    batched_step,
    stack,
)
from jaxcontrol.reference.episodes import EPISODE_STEPS, episode_steps
from jaxcontrol.reference.precision import precision
from jaxcontrol.reference.samples import Transition, reference_resets, reference_transitions
from jaxcontrol.reference.state import DmState, inject, mirror
from jaxcontrol.reference.suite import dm_control_suite, reference_env, reference_for

__all__ = [
    "EPISODE_STEPS",
    "DmState",
    "Transition",
    "action_bounds",
    "batched_inject",
    "batched_inject_on_c",
    "batched_reset",
    "batched_reset_on_c",
    "batched_step",
    "dm_control_suite",
    "episode_steps",
    "inject",
    "mirror",
    "precision",
    "reference_env",
    "reference_for",
    "reference_resets",
    "reference_transitions",
    "stack",
]
