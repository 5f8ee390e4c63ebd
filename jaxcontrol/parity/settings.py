"""The parity record's sizes and targets, per-task sizes, and the names of its resumable parts.

Each task's declared episode class is `classes.EPISODE_CLASSES`; its rollout family,
`families.ROLLOUT_FAMILIES`.
"""

from __future__ import annotations

from collections.abc import Sequence

N_STATES = 24
EPISODE_AMPLITUDE = 0.3
RESETS_OURS, RESETS_REFERENCE = 1024, 600
CONFIRM_BATCHES, CONFIRM_REFERENCE, CONFIRM_SEED_OFFSET = 3, 3000, 100
RETURN_EPISODES, RETURN_QUARTERS = 64, 4
SOAK_ENVS, SOAK_STEPS, SOAK_SHARDS = 1024, 1000, 8
SOAK_CHECKPOINT_EVERY = 100  # steps between a soak shard's checkpoints
KS_THRESHOLD = 1e-3
Z_THRESHOLD = 4.0
EPISODE_EXACT_RTOL = 1e-6
RAW_EXACT_DRIFT = 1e-9
POLICIES = ("zero", "sinusoid", "bang_bang")


# Tasks whose soak runs in more, smaller shards than `SOAK_SHARDS`, keyed on (domain,
# task): a stacker shard of 128 environments takes 2 (stack_2) to 4 (stack_4) hours of
# one core of the 2-core CPU box; shards of 32 take under an hour each.
TASK_SOAK_SHARDS: dict[tuple[str, str], int] = {
    ("stacker", "stack_2"): 32,
    ("stacker", "stack_4"): 32,
}


def soak_shards(domain: str, task: str) -> int:
    """How many resumable parts the soak of (domain, task) runs in."""
    return TASK_SOAK_SHARDS.get((domain, task), SOAK_SHARDS)


def soak_parts(shards: int) -> tuple[str, ...]:
    """The soak's part names: its shards, then the replay (`_soak_replay`)."""
    return (*(f"shard{shard}" for shard in range(shards)), "replay")


def return_parts(policy: str, quarters: int = RETURN_QUARTERS) -> tuple[str, ...]:
    """A policy's part names: our episodes in quarters, then the policy itself
    (dm_control's episodes, compared with ours)."""
    return (*(f"{policy}.{quarter}" for quarter in range(quarters)), policy)


RETURNS_PIECES = ("returns", "returns_float64")
RESUMABLE = (*RETURNS_PIECES, "soak")


def piece_parts(piece: str, soak_shards: int = SOAK_SHARDS) -> tuple[str, ...]:
    """A resumable piece's parts, in the order they are measured (`--parts` takes
    these; a policy's name alone stands for its quarters too)."""
    if piece in RETURNS_PIECES:
        return tuple(name for policy in POLICIES for name in return_parts(policy))
    return soak_parts(soak_shards)


def parts_error(
    pieces: list[str], parts: list[str], tasks: Sequence[tuple[str, str]]
) -> str | None:
    """What is wrong with `--parts` for `--pieces` of `tasks`, if anything (naming
    the valid parts)."""
    if len(pieces) != 1 or pieces[0] not in RESUMABLE:
        return f"--parts needs exactly one of the pieces {', '.join(RESUMABLE)} (got {pieces})"
    shards = {soak_shards(*task) for task in tasks} or {SOAK_SHARDS}
    for count in sorted(shards):
        valid = piece_parts(pieces[0], count)
        unknown = [p for p in parts if p not in valid]
        if unknown or not parts:
            return f"unknown parts {unknown} of {pieces[0]}; valid parts: {', '.join(valid)}"
    return None
