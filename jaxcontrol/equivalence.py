"""An alias of the dm_control bridge and the one-step parity harness, under their old names.

Everything this module held lives elsewhere now, and is re-exported here so that
`jaxcontrol.equivalence.NAME` keeps working:

  * the bridge to dm_control, `jaxcontrol.reference`: `reference_env`,
    `reference_for`, `DmState`, `inject`, `mirror`, `batched_inject`,
    `batched_step`, `batched_reset`, `batched_inject_on_c`, `batched_reset_on_c`,
    `Transition`, `reference_transitions`, `reference_resets`, `action_bounds`,
    `EPISODE_STEPS`, `episode_steps`, `precision`;
  * the parity harness, `jaxcontrol.parity`: `check` and `ParityReport`
    (`parity.report`), `step_parity`, `raw_step_parity`, `compare_step`
    (`parity.step`), `mjx_step_from`, `raw_mjx_step_from`, `CpuPath`
    (`parity.engines`), `episode_parity`, `smooth_actions` (`parity.trajectory`),
    `ONE_STEP_TARGET`, `RAW_STATE_KEYS`, `one_step_tolerance`, `one_step_misses`
    (`parity.tolerance`), `reset_samples`, `chunked_reset_samples`, `state_bytes`,
    `RESET_CHUNK_BYTES` (`parity.sampling`).

New code imports from those homes.
"""

from jaxcontrol.parity.engines import CpuPath, mjx_step_from, raw_mjx_step_from
from jaxcontrol.parity.report import ParityReport, check
from jaxcontrol.parity.sampling import (
    RESET_CHUNK_BYTES,
    chunked_reset_samples,
    reset_samples,
    state_bytes,
)
from jaxcontrol.parity.step import compare_step, raw_step_parity, step_parity
from jaxcontrol.parity.tolerance import (
    ONE_STEP_TARGET,
    RAW_STATE_KEYS,
    one_step_misses,
    one_step_tolerance,
)
from jaxcontrol.parity.trajectory import episode_parity, smooth_actions
from jaxcontrol.reference.actions import action_bounds
from jaxcontrol.reference.batched import (
    batched_inject,
    batched_inject_on_c,
    batched_reset,
    batched_reset_on_c,
    batched_step,
)
from jaxcontrol.reference.episodes import EPISODE_STEPS, episode_steps
from jaxcontrol.reference.precision import precision
from jaxcontrol.reference.samples import Transition, reference_resets, reference_transitions
from jaxcontrol.reference.state import DmState, inject, mirror
from jaxcontrol.reference.suite import reference_env, reference_for

__all__ = [
    "EPISODE_STEPS",
    "ONE_STEP_TARGET",
    "RAW_STATE_KEYS",
    "RESET_CHUNK_BYTES",
    "CpuPath",
    "DmState",
    "ParityReport",
    "Transition",
    "action_bounds",
    "batched_inject",
    "batched_inject_on_c",
    "batched_reset",
    "batched_reset_on_c",
    "batched_step",
    "check",
    "chunked_reset_samples",
    "compare_step",
    "episode_parity",
    "episode_steps",
    "inject",
    "mirror",
    "mjx_step_from",
    "one_step_misses",
    "one_step_tolerance",
    "precision",
    "raw_mjx_step_from",
    "raw_step_parity",
    "reference_env",
    "reference_for",
    "reference_resets",
    "reference_transitions",
    "reset_samples",
    "smooth_actions",
    "state_bytes",
    "step_parity",
]
