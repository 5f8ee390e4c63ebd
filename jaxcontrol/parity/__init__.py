"""A task's full parity record: every figure of PARITY.md, measured against dm_control.

`measure_piece(domain, task, piece)` runs one of the full tier's measurements for
one task, in one process (float64 and float32 alike):
  * one_step_float64 / one_step_float32: one step from 24 dm_control states
    (`step.step_parity`), with stock MJX's own error against C MuJoCo;
  * episode: a float64 1000-step episode under a fixed smooth action sequence,
    with how far stock MJX itself drifts from C MuJoCo over it;
  * resets: two-sample Kolmogorov-Smirnov p-values, per state coordinate and
    per-episode quantity, of our resets against dm_control's;
  * returns: episode returns under three open-loop policies (zero, sinusoid,
    bang-bang), each side from its own resets, compared by a z-score;
  * soak: 1024 environments x 1000 random-action steps in float32, counting
    non-finite states, in 8 shards of 128 (stacker: 32 of 32, `settings.soak_shards`).
  * hard_states_float64 / hard_states_float32: one step from 200 states of a wider
    mix (`hard_states.state_mix`: resets, random rollouts, a trained policy's
    episodes, the states with the most contacts), each state's errors for ours and
    stock MJX, and ours held to 10x stock MJX's error state by state (`per_state`).
  * resets_float64 / returns_float64: resets and returns with ours in float64, for
    the tasks where float64 is float32's remedy (measured only when named).
Tasks whose episodes differ only in the reward (a rollout family,
`families.ROLLOUT_FAMILIES`: humanoid_CMU's stand, walk and run) have the long pieces
measured on one rollout (`family_returns`, `family_soak`, `measure_family_piece`,
`--one-rollout`), each task's parts kept as its own run keeps them.
The long pieces (returns, per quarter of a policy's episodes; soak, per shard)
keep their finished parts in a `Progress` file beside the records, so that a run
stopped midway (a session on a 2-core machine ends; humanoid's soak takes hours
there) resumes where it was; a soak shard also saves its state every 100 steps
(`soak_checkpoint`), and resumes inside the shard.
Several processes can share one piece's parts (`--parts`, one core each): each
measures its own, and the last to finish writes the record.
`missed_targets(record)` lists every target a record misses; `render` writes
PARITY.md from the records. The full test tier (`pytest -m full`) asserts the
targets and writes the records; `jaxcontrol parity` renders them:

    python -m pytest -m full -n 2 --dist loadgroup      # writes parity_records/
    python -m jaxcontrol parity --env humanoid-walk --missing  # resumes it, or updates old pieces
    python -m jaxcontrol parity --env manipulator-bring_ball --pieces soak --parts shard0,shard1
    python -m jaxcontrol parity --env humanoid_CMU-stand,humanoid_CMU-walk,humanoid_CMU-run \
        --pieces soak --one-rollout
    python -m jaxcontrol parity --render                # writes PARITY.md

`check(domain, task, ...)` (`report`) measures one task's one step (and, with
`episode`, a whole episode) into a `ParityReport`, what `jaxcontrol check` prints.

The package's modules: `settings` (sizes, targets, part names), `progress`
(resumable parts), `measures` (one step, episode, resets, returns), `soaks`, `records`
(measuring pieces, records, targets), `markdown` (PARITY.md) and `campaign` (what
`jaxcontrol parity` runs); under them,
the one-step harness: `engines` (ours, C MuJoCo and stock MJX from dm_control's
states), `step` (their worst differences), `hard_states` (a wider mix of states),
`per_state` (errors state by state), `contact_diagnosis` (C's and MJX's contacts and
constraint rows at one state: where a miss starts), `tolerance` (the one-step target),
`trajectory` (a whole episode), `sampling` (our resets as samples) and `report`
(`check`). `fidelity` measures the pure-JAX renderer against MuJoCo's. What talks
to dm_control itself is `jaxcontrol.reference`.
"""

from jaxcontrol.parity.markdown import render
from jaxcontrol.parity.measures import (
    compare_returns,
    episode,
    family_returns,
    ks_columns,
    one_step,
    open_loop_actions,
    rank_p,
    reset_pvalues,
    resets,
    returns,
)
from jaxcontrol.parity.progress import PartsLeft, Progress, TaskParts, progress_path
from jaxcontrol.parity.records import (
    FAMILY_PIECES,
    PIECES,
    check_family,
    current_piece,
    expand_parts,
    jax_versions,
    load_records,
    measure_family_piece,
    measure_piece,
    missed_targets,
    mjx_fixes_of,
    one_step_misses,
    piece_progress,
    provenance,
    read_record,
    solver_caps,
    stale_pieces,
    write_record,
)
from jaxcontrol.parity.report import ParityReport, check
from jaxcontrol.parity.settings import (
    CONFIRM_BATCHES,
    CONFIRM_REFERENCE,
    CONFIRM_SEED_OFFSET,
    EPISODE_AMPLITUDE,
    EPISODE_EXACT_RTOL,
    KS_THRESHOLD,
    N_STATES,
    POLICIES,
    RAW_EXACT_DRIFT,
    RESETS_OURS,
    RESETS_REFERENCE,
    RESUMABLE,
    RETURN_EPISODES,
    RETURN_QUARTERS,
    SOAK_CHECKPOINT_EVERY,
    SOAK_ENVS,
    SOAK_SHARDS,
    SOAK_STEPS,
    Z_THRESHOLD,
    parts_error,
    piece_parts,
    return_parts,
    soak_parts,
)
from jaxcontrol.parity.soaks import family_soak, host_fingerprint, soak

__all__ = [
    "CONFIRM_BATCHES",
    "CONFIRM_REFERENCE",
    "CONFIRM_SEED_OFFSET",
    "EPISODE_AMPLITUDE",
    "EPISODE_EXACT_RTOL",
    "FAMILY_PIECES",
    "KS_THRESHOLD",
    "N_STATES",
    "PIECES",
    "POLICIES",
    "RAW_EXACT_DRIFT",
    "RESETS_OURS",
    "RESETS_REFERENCE",
    "RESUMABLE",
    "RETURN_EPISODES",
    "RETURN_QUARTERS",
    "SOAK_CHECKPOINT_EVERY",
    "SOAK_ENVS",
    "SOAK_SHARDS",
    "SOAK_STEPS",
    "Z_THRESHOLD",
    "ParityReport",
    "PartsLeft",
    "Progress",
    "TaskParts",
    "check",
    "check_family",
    "compare_returns",
    "current_piece",
    "episode",
    "expand_parts",
    "family_returns",
    "family_soak",
    "host_fingerprint",
    "jax_versions",
    "ks_columns",
    "load_records",
    "measure_family_piece",
    "measure_piece",
    "missed_targets",
    "mjx_fixes_of",
    "one_step",
    "one_step_misses",
    "open_loop_actions",
    "parts_error",
    "piece_parts",
    "piece_progress",
    "progress_path",
    "provenance",
    "rank_p",
    "read_record",
    "render",
    "reset_pvalues",
    "resets",
    "return_parts",
    "returns",
    "soak",
    "soak_parts",
    "solver_caps",
    "stale_pieces",
    "write_record",
]
