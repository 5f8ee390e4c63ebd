"""A task's full parity record: every figure of PARITY.md, measured against dm_control.

`measure_piece(domain, task, piece)` runs one of the full tier's measurements for
one task, in one process (float64 and float32 alike):
  * one_step_float64 / one_step_float32: one step from 24 dm_control states
    (`equivalence.step_parity`), with stock MJX's own error against C MuJoCo;
  * episode: a float64 1000-step episode under a fixed smooth action sequence,
    with how far stock MJX itself drifts from C MuJoCo over it;
  * resets: two-sample Kolmogorov-Smirnov p-values, per state coordinate and
    per-episode quantity, of our resets against dm_control's;
  * returns: episode returns under three open-loop policies (zero, sinusoid,
    bang-bang), each side from its own resets, compared by a z-score;
  * soak: 1024 environments x 1000 random-action steps in float32, counting
    non-finite states, in 8 shards of 128 (stacker: 32 of 32, `Task.soak_shards`).
The long pieces (returns, per quarter of a policy's episodes; soak, per shard)
keep their finished parts in a `Progress` file beside the records, so that a run
stopped midway (a session on a 2-core machine ends; humanoid's soak takes hours
there) resumes where it was; a soak shard also saves its state every 100 steps
(`soak_checkpoint`), and resumes inside the shard.
Several processes can share one piece's parts (`--parts`, one core each): each
measures its own, and the last to finish writes the record.
`targets(record, task)` lists every target a record misses; `render` writes
PARITY.md from the records. The full test tier (`pytest -m full`) asserts the
targets and writes the records; `jaxcontrol parity` renders them:

    python -m pytest -m full -n 2 --dist loadgroup      # writes parity_records/
    python -m jaxcontrol parity humanoid-walk --missing # one task; resumes a stopped run
    python -m jaxcontrol parity manipulator-bring_ball --pieces soak --parts shard0,shard1
    python -m jaxcontrol parity --render                # writes PARITY.md
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import functools
import hashlib
import json
import math
import os
import pathlib
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxcontrol
from jaxcontrol import equivalence, mjx_fixes, soak_checkpoint
from jaxcontrol.core import Env, StepType
from jaxcontrol.registry import REGISTRY

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


def soak_parts(shards: int) -> tuple[str, ...]:
    """The soak's part names: its shards, then the replay (`_soak_replay`)."""
    return (*(f"shard{shard}" for shard in range(shards)), "replay")


def return_parts(policy: str, quarters: int = RETURN_QUARTERS) -> tuple[str, ...]:
    """A policy's part names: our episodes in quarters, then the policy itself
    (dm_control's episodes, compared with ours)."""
    return (*(f"{policy}.{quarter}" for quarter in range(quarters)), policy)


RESUMABLE = ("returns", "soak")


def piece_parts(piece: str, soak_shards: int = SOAK_SHARDS) -> tuple[str, ...]:
    """A resumable piece's parts, in the order they are measured (`--parts` takes
    these; a policy's name alone stands for its quarters too)."""
    if piece == "returns":
        return tuple(name for policy in POLICIES for name in return_parts(policy))
    return soak_parts(soak_shards)


# ----- resumable parts -----------------------------------------------------------------------


class PartsLeft(Exception):
    """A run limited to some parts (`Progress(only=...)`) measured them; these remain."""

    def __init__(self, parts: Sequence[str]):
        super().__init__(f"parts left to another run: {', '.join(parts)}")
        self.parts = list(parts)


class Progress:
    """Finished parts of one long piece, kept in a JSON file until the piece completes.

    Parts are reused only under the same `config` (sizes, seeds, JAX version), so
    a changed measurement never mixes with an old one. `Progress(None)` keeps
    nothing (every part is measured). With `only`, this run measures only those
    parts: another part that is not saved yet is skipped (`part` returns None)
    and `done` raises `PartsLeft`. Runs that share a file merge their parts into
    it under a lock, so each keeps what the others saved."""

    def __init__(
        self,
        path: str | pathlib.Path | None,
        config: dict[str, Any] | None = None,
        only: Iterable[str] | None = None,
    ):
        self.path = None if path is None else pathlib.Path(path)
        self.config = {**(config or {}), "jax": jax.__version__}
        self.only = None if only is None else set(only)
        self.parts: dict[str, Any] = {}
        self.seconds: dict[str, float] = {}  # what each part took when it was measured
        self.resumed: list[str] = []
        self.measured: list[str] = []
        self.skipped: list[str] = []
        self.seconds_before = 0.0  # what parts measured here took before a stop (checkpoints)
        self._merge_saved()

    def saved(self) -> tuple[dict[str, Any], dict[str, float]]:
        """The parts (and their seconds) in the file under this config, if any."""
        if self.path is None or not self.path.exists():
            return {}, {}
        saved = json.loads(self.path.read_text())
        if saved.get("config") != self.config:
            return {}, {}
        return saved["parts"], saved["seconds"]

    def _merge_saved(self) -> None:
        parts, seconds = self.saved()
        self.parts = {**parts, **self.parts}
        self.seconds = {**seconds, **self.seconds}

    def has(self, name: str) -> bool:
        """Whether part `name` is saved (by this run or another)."""
        self._merge_saved()
        return name in self.parts

    def skip(self, name: str) -> None:
        """Leave part `name` to another run (as `part` does outside `only`)."""
        self.skipped.append(name)

    def part(self, name: str, measure: Callable[..., Any], *args: Any, cheap: bool = False) -> Any:
        """The saved part `name`, or `measure(*args)`, saved before it is returned;
        None for a part outside `only` that no run has saved yet, unless it is
        `cheap` (quick to build from parts already saved: any run measures it)."""
        self._merge_saved()  # another run may have measured it meanwhile
        if name in self.parts:
            self.resumed.append(name)
            return self.parts[name]
        if self.only is not None and name not in self.only and not cheap:
            self.skipped.append(name)
            return None
        start = time.perf_counter()
        result = measure(*args)
        before = result.pop("seconds_before", 0.0) if isinstance(result, dict) else 0.0
        self.seconds_before += before
        self.parts[name] = result
        self.seconds[name] = round(time.perf_counter() - start + before, 1)
        self.measured.append(name)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(self.path.parent):
                self._merge_saved()  # keeps ours, adds what others saved meanwhile
                tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
                saved = {"config": self.config, "parts": self.parts, "seconds": self.seconds}
                tmp.write_text(json.dumps(saved))
                tmp.replace(self.path)
                for checkpoint in self._checkpoints(name):
                    checkpoint.unlink(missing_ok=True)
        return self.parts[name]

    def checkpoint(self, name: str, **meta: Any) -> soak_checkpoint.Checkpoint | None:
        """Where part `name` may keep its state while it runs (a soak shard's carry,
        `soak_checkpoint`), tied to this config and `meta`; the file goes once the part
        is saved. None where nothing is kept."""
        if self.path is None:
            return None
        path = self.path.with_name(f"{self.path.stem}.{name}.npz")
        return soak_checkpoint.Checkpoint(path, {"config": self.config, "part": name, **meta})

    def _checkpoints(self, name: str = "*") -> list[pathlib.Path]:
        """Part `name`'s checkpoint files (its own and its sub-runs': `name.*`)."""
        stem, folder = self.path.stem, self.path.parent
        return sorted({*folder.glob(f"{stem}.{name}.npz"), *folder.glob(f"{stem}.{name}.*.npz")})

    def earlier_seconds(self) -> float:
        """What the saved parts that this run did not measure took, all of them (also
        the quarters behind a resumed policy, which this run never asks for), and what
        the parts it measured took before they resumed from a checkpoint."""
        self._merge_saved()
        earlier = sum(s for name, s in self.seconds.items() if name not in self.measured)
        return earlier + self.seconds_before

    def done(self) -> None:
        """The piece is complete: its record holds the result, so the parts go.

        Raises `PartsLeft` if this run skipped parts (`only`): the piece is not
        complete here, and its parts stay for the run that completes it."""
        if self.skipped:
            raise PartsLeft(self.skipped)
        if self.path is not None:
            with _locked(self.path.parent):
                self.path.unlink(missing_ok=True)
                self.completing.unlink(missing_ok=True)
                for checkpoint in self._checkpoints():
                    checkpoint.unlink(missing_ok=True)

    @property
    def completing(self) -> pathlib.Path | None:
        """A marker file: one run (of several sharing the parts) completes the piece."""
        return None if self.path is None else self.path.with_suffix(".completing")


@contextlib.contextmanager
def _locked(directory: pathlib.Path):
    """An exclusive lock on `directory` (flock), between processes sharing its files."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def progress_path(records: str | pathlib.Path | None, task: str, piece: str):
    """Where a piece's parts are kept: `<records>/progress/<task>-<piece>.json`."""
    return None if records is None else pathlib.Path(records) / "progress" / f"{task}-{piece}.json"


# ----- the pieces ----------------------------------------------------------------------------


def one_step(env: Env, x64: bool, n_states: int = N_STATES, seed: int = 0) -> dict[str, Any]:
    """One-step parity from `n_states` dm_control states (call inside the right x64 mode)."""
    transitions = equivalence.reference_transitions(env, n_states, seed)
    ours, cpu, raw = equivalence.step_parity(env, transitions, relative=not x64)
    dtype = "float64" if x64 else "float32"
    return {
        "dtype": dtype,
        "n_states": n_states,
        "ours": ours,
        "cpu": cpu,
        "raw": raw,
        "tolerance": equivalence.one_step_tolerance(dtype, raw),
        "worst_ours": max(ours.values()),
        "worst_cpu": max(cpu.values()),
        "worst_raw": max((raw[k] for k in equivalence.RAW_STATE_KEYS if k in raw), default=None),
    }


def episode(env: Env) -> dict[str, Any]:
    """Float64 whole-episode parity, classed by what raw MJX achieves."""
    report = equivalence.episode_parity(env, seed=0, amplitude=EPISODE_AMPLITUDE)
    report["measured_class"] = (
        "exact" if report["raw_drift"] <= RAW_EXACT_DRIFT else "distributional"
    )
    report["declared_class"] = env.task.episode_parity
    return report


def resets(env: Env, seed: int = 3) -> dict[str, Any]:
    """KS p-values of our reset distribution against dm_control's, per coordinate.

    Per quantity: the smallest p over its non-constant columns and how many there
    were. Per-episode model fields are tested family-wise (`reset_pvalues`).

    A quantity that misses the threshold gets a second, independent test: fresh
    keys on our side, a fresh dm_control seed, each side about five times larger
    (`confirmation`). One quantity of many columns (humanoid_CMU's qpos has 63)
    held to p > 0.001 column by column misses by chance about 6% of the time; a
    real difference that reached p <= 0.001 in the first samples shows again, far
    more strongly, in the larger second ones. Both stages stay in the record.
    """
    keys = jax.random.split(jax.random.key(11), RESETS_OURS)
    ours = equivalence.chunked_reset_samples(env, keys)
    ref = equivalence.reference_resets(env, RESETS_REFERENCE, seed)
    piece = _ks_piece(ours, ref)
    piece["names_match"] = sorted(ours) == sorted(ref)
    piece["family_wise"] = sorted(set(ref) & set(env.default_model_fields()))
    low = sorted(name for name, p in reset_pvalues(piece).items() if p <= KS_THRESHOLD)
    if low:
        piece["confirmation"] = _confirm_resets(env, low, seed + CONFIRM_SEED_OFFSET)
    return piece


def _ks_piece(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, Any]:
    """Sample sizes, each quantity's smallest KS p and column count, mismatched constants."""
    n_ours, n_ref = (len(next(iter(side.values()))) for side in (ours, ref))
    pvalues, columns, constant_mismatch = {}, {}, []
    for name, reference in ref.items():
        column_p, mismatched = ks_columns(
            ours[name].reshape(n_ours, -1), reference.reshape(n_ref, -1)
        )
        constant_mismatch += [f"{name}[{column}]" for column in mismatched]
        pvalues[name] = min(column_p, default=1.0)
        columns[name] = len(column_p)
    return {
        "samples": [n_ours, n_ref],
        "min_pvalue": pvalues,
        "columns": columns,
        "constant_mismatch": constant_mismatch,
    }


def _confirm_resets(env: Env, names: list[str], seed: int) -> dict[str, Any]:
    """The second stage of `resets`: the named quantities on fresh, larger samples."""
    keys = jax.random.split(jax.random.key(12), CONFIRM_BATCHES * RESETS_OURS)
    ours = equivalence.chunked_reset_samples(env, keys)
    ours = {name: ours[name] for name in names}
    ref = equivalence.reference_resets(env, CONFIRM_REFERENCE, seed)
    return {**_ks_piece(ours, {name: ref[name] for name in names}), "seed": seed}


def ks_columns(ours: np.ndarray, ref: np.ndarray) -> tuple[list[float], list[int]]:
    """Two-sample KS p-values of each column of `ours` (samples x columns) against
    `ref`'s, at our precision, and the columns constant in both but at values that
    differ. dm_control's float64 values are rounded to our dtype first: a discrete
    draw (stacker's target height, 0.022 or 0.066 m) would otherwise be two sets of
    values 1e-9 apart, which KS tells apart at once."""
    from scipy import stats

    ref = ref.astype(ours.dtype)
    pvalues, mismatched = [], []
    for column in range(ref.shape[1]):
        x, y = ours[:, column], ref[:, column]
        if np.ptp(x) == 0 and np.ptp(y) == 0:
            if not np.isclose(x[0], y[0], rtol=0, atol=1e-6):
                mismatched.append(column)
            continue
        pvalues.append(float(stats.ks_2samp(x, y).pvalue))
    return pvalues, mismatched


def reset_pvalues(piece: dict[str, Any]) -> dict[str, float]:
    """Each reset quantity's p-value, to be held to `KS_THRESHOLD`.

    A state coordinate or task variable is held to the threshold one column at a
    time, as the issue states it. A per-episode model field is one quantity of many
    correlated columns (escape's terrain has 40,401): it is held to the threshold
    family-wise, its smallest p times its column count (Bonferroni), since the
    smallest of 40,401 p-values under equal distributions is about 2.5e-5. A
    quantity that missed and was tested again on larger samples (`resets`) is held
    to that second test.
    """
    family = set(piece.get("family_wise", ()))  # records before session 14 lack it
    second = piece.get("confirmation", {"min_pvalue": {}, "columns": {}})
    out = {}
    for name in piece["min_pvalue"]:
        # A first-stage miss was tested again (`resets`); older records lack "columns".
        source = second if name in second["min_pvalue"] else piece
        p = source["min_pvalue"][name]
        # A field constant on both sides (finger's damping) has no column to test: p 1.
        columns = max(1, source["columns"][name]) if name in family else 1
        out[name] = min(1.0, p * columns)
    return out


def _resets_cell(piece: dict[str, Any]) -> str:
    """The smallest p held to the target; a second stage's also shows the first's."""
    cell = f"{min(reset_pvalues(piece).values(), default=1.0):.3f}"
    if "confirmation" in piece:
        first = {**piece, "confirmation": {"min_pvalue": {}, "columns": {}}}
        samples = "/".join(str(n) for n in piece["confirmation"]["samples"])
        cell += f" (2nd test, {samples}; 1st {min(reset_pvalues(first).values()):.1e})"
    return cell


def open_loop_actions(spec, policy: str, steps: int) -> np.ndarray:
    """An action sequence that depends only on time, within `equivalence.action_bounds`."""
    if policy == "zero":
        return np.zeros((steps,) + spec.shape)
    if policy == "sinusoid":
        return equivalence.smooth_actions(spec, steps, amplitude=1.0)
    if policy == "bang_bang":
        t = np.arange(steps)[:, None]
        phase = np.arange(spec.shape[0])[None, :]
        low, high = equivalence.action_bounds(spec)
        return np.where(np.sin(0.1 * t + phase) >= 0, high, low)
    raise ValueError(f"unknown policy {policy!r}; valid policies: {', '.join(POLICIES)}")


def returns(
    env: Env, episodes: int = RETURN_EPISODES, seed: int = 5, progress: Progress | None = None
) -> dict[str, Any]:
    """Returns under each open-loop policy, ours and dm_control's, and their z-scores.

    Each policy draws its own resets on both sides (seeded by the policy's index),
    so that a resumed run measures exactly what an uninterrupted one would.
    Our episodes run in quarters (parts `policy.0` ...), the same episodes (keys)
    as one batch would run, so that a long policy (stacker-stack_4's, hours of
    one core) fits a session; dm_control's side and the comparison are the
    policy's own part. A policy saved whole (before quarters) is kept as it is.
    An episode's return sums its rewards up to its LAST step (the time limit,
    or a terminal state), over at most `equivalence.episode_steps` steps."""
    progress = progress or Progress(None)
    run = _open_loop_returns(env)
    out = {}
    for index, policy in enumerate(POLICIES):
        dm_env = equivalence.reference_for(env, seed + index)
        actions = open_loop_actions(dm_env.action_spec(), policy, equivalence.episode_steps(env))
        keys = jax.random.split(jax.random.key(seed + index), episodes)
        quarters = [] if progress.has(policy) else _quarters(progress, run, policy, actions, keys)
        if any(quarter is None for quarter in quarters):  # left to another run
            progress.skip(policy)
            continue
        # dm_control's side is short (C MuJoCo: about a minute for stacker-stack_4), so
        # whichever run has all our quarters measures it.
        out[policy] = progress.part(policy, _policy_returns, dm_env, quarters, actions, cheap=True)
    progress.done()
    return out


def _quarters(progress: Progress, run, policy: str, actions: np.ndarray, keys: jax.Array):
    """Our returns in parts `policy.0` ... (None where a part is left to another run)."""
    size = -(-len(keys) // RETURN_QUARTERS)
    names = return_parts(policy)
    return [
        progress.part(names[quarter], _our_returns, run, keys[start : start + size], actions)
        for quarter, start in enumerate(range(0, len(keys), size))
    ]


def _our_returns(run, keys: jax.Array, actions: np.ndarray) -> list[float]:
    return np.asarray(run(keys, jnp.asarray(actions, jnp.float32))).tolist()


def _policy_returns(dm_env, quarters: list[list[float]], actions: np.ndarray) -> dict[str, Any]:
    """dm_control's returns (as many episodes as ours), compared with ours."""
    ours = np.concatenate(quarters)
    ref = [_dm_control_return(dm_env, actions) for _ in ours]
    return compare_returns(ours, np.asarray(ref))


def _dm_control_return(dm_env, actions: np.ndarray) -> float:
    """One dm_control episode's return under `actions`, up to its LAST step."""
    dm_env.reset()
    total = 0.0
    for action in actions:
        timestep = dm_env.step(action)
        total += timestep.reward
        if timestep.last():
            break
    return total


@functools.cache
def _open_loop_returns(env: Env) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """A jitted `(keys, actions) -> returns` of episodes under one action sequence
    (rewards up to each episode's LAST step: none after it is counted); one per env."""

    @jax.jit
    def run(keys, actions):
        states = jax.vmap(env.reset)(keys)

        def body(states, action):
            running = ~states.last()
            states = jax.vmap(env.step, in_axes=(0, None))(states, action)
            return states, jnp.where(running, states.reward, 0)

        return jax.lax.scan(body, states, actions)[1].sum(axis=0)

    return run


def compare_returns(ours: np.ndarray, ref: np.ndarray) -> dict[str, Any]:
    """Two samples of episode returns: means, standard errors, the z of their gap
    (the target), a rank test's p (Mann-Whitney U, two-sided), and the samples.

    The rank test is reported beside z, not held to a threshold: a few episodes in
    a heavy tail (manipulator's in-hand starts) move a mean, not the ranks.
    Older records lack `rank_p` and the samples."""
    from scipy import stats

    se = math.sqrt(ours.var(ddof=1) / len(ours) + ref.var(ddof=1) / len(ref))
    gap = float(ours.mean() - ref.mean())
    z = gap / se if se > 0 else (0.0 if abs(gap) < 1e-9 else math.inf)
    rank_p = float(stats.mannwhitneyu(ours, ref, alternative="two-sided").pvalue)
    return {
        "ours_mean": float(ours.mean()),
        "ours_stderr": float(ours.std(ddof=1) / math.sqrt(len(ours))),
        "dm_control_mean": float(ref.mean()),
        "dm_control_stderr": float(ref.std(ddof=1) / math.sqrt(len(ref))),
        "z": z,
        "rank_p": rank_p,
        "ours_returns": [float(x) for x in ours],
        "dm_control_returns": [float(x) for x in ref],
    }


def soak(
    env: Env,
    num_envs: int = SOAK_ENVS,
    steps: int = SOAK_STEPS,
    shards: int | None = None,
    progress: Progress | None = None,
    checkpoint_every: int = SOAK_CHECKPOINT_EVERY,
) -> dict[str, Any]:
    """Random actions for `num_envs` x `steps` in float32, summarised inside the scan.

    Counts non-finite observations/rewards and diverged environments, keeps the
    largest |qvel| (a state can stay finite and still be flung: BENCHMARKS.md,
    "MJX's elliptic line search"), checks
    rewards lie in the task's `reward_range`, the step types and discounts
    follow dm_env (LAST with discount 1 exactly at the time limit when it fits in
    `steps`; before it, LAST only at a terminal state, with a discount below 1,
    and LAST from then on), no observation entry stays
    constant, and that a replay of a shard ends in bit-identical states
    (run-to-run determinism: same keys, same actions, same batch layout).
    The environments run in `shards` equal batches (one compile), each from its
    own key, each a resumable part; by default the task's `soak_shards`. A shard
    that stops midway resumes from its last checkpoint, taken every
    `checkpoint_every` steps (`soak_checkpoint`).

    Environments at different positions of one batch are not compared: XLA's CPU
    code (jax 0.9.2, fusion emitters off) rounds some operations differently by
    position in the batch, so two copies of one environment in one batch part
    after a few steps of a chaotic task (BENCHMARKS.md, "JAX version").
    """
    shards = shards or env.task.soak_shards
    if num_envs % shards:
        raise ValueError(f"num_envs={num_envs} must be a multiple of shards={shards}")
    progress = progress or Progress(None)
    run = _soak(env, num_envs // shards, steps, checkpoint_every)
    names = soak_parts(shards)
    parts = [
        progress.part(name, _soak_shard, run, shard, _shard_checkpoint(progress, name, shard, run))
        for shard, name in enumerate(names[:-1])
    ]
    replay = progress.part(names[-1], _soak_replay, run, parts, progress, names[-1])
    progress.done()
    low, high = env.task.reward_range
    lo = {k: np.min([p["lo"][k] for p in parts], axis=0) for k in parts[0]["lo"]}
    hi = {k: np.max([p["hi"][k] for p in parts], axis=0) for k in parts[0]["hi"]}
    return {
        "envs": num_envs,
        "shards": shards,
        "steps": num_envs * steps,
        "nonfinite": sum(p["nonfinite"] for p in parts),
        "diverged": sum(p["diverged"] for p in parts),
        "reward_min": min(p["reward_min"] for p in parts),
        "reward_max": max(p["reward_max"] for p in parts),
        "rewards_in_range": bool(
            low <= min(p["reward_min"] for p in parts)
            and max(p["reward_max"] for p in parts) <= high
        ),
        "ends_by_truncation": all(p["truncation_ok"] for p in parts),
        "constant_observations": [key for key in lo if bool(np.any(lo[key] == hi[key]))],
        # The largest |qvel| of any environment at any step (parts from before it: None).
        "qvel_max": max(p["qvel_max"] for p in parts)
        if all("qvel_max" in p for p in parts)
        else None,
        # Replay parts saved before host fingerprints compared with shard 0 itself.
        "replay_identical": replay["final_digest"]
        == replay.get("reference_digest", parts[0]["final_digest"]),
        "replayed": f"shard{replay.get('shard', 0)}",
        "replay_reference": replay.get("reference", "shard0"),
    }


def _soak_replay(
    run: _Soaker, parts: Sequence[dict[str, Any] | None], progress: Progress, name: str
) -> dict[str, Any]:
    """A shard again, and the digest it must equal. Parts resume across machines, and
    float results repeat only on one host (`host_fingerprint`), so the replay takes
    the first shard that this host measured, all of it, in chunks of the same length,
    and compares with its saved digest; where none was (all measured elsewhere, or not
    saved yet by a run sharing the parts), it runs shard 0 twice here and compares the
    two. Its runs keep checkpoints too, but resume only from this host's."""
    here = host_fingerprint()
    mine = [
        i
        for i, part in enumerate(parts)
        if part is not None
        and part.get("host") == here
        and part.get("checkpoint_every") == run.every
    ]
    shard = mine[0] if mine else 0
    out = _soak_shard(run, shard, _shard_checkpoint(progress, name, shard, run), same_host=True)
    seconds_before = [out.pop("seconds_before", 0.0)]
    if mine:
        reference, how = parts[shard]["final_digest"], f"shard{shard}"
    else:
        second = _shard_checkpoint(progress, f"{name}.second", shard, run)
        again = _soak_shard(run, shard, second, same_host=True)
        reference, how = again["final_digest"], "a second replay on this host"
        seconds_before.append(again.pop("seconds_before", 0.0))
    return {
        "shard": shard,
        "final_digest": out["final_digest"],
        "reference_digest": reference,
        "reference": how,
        "host": out["host"],
        "seconds_before": sum(seconds_before),  # `Progress.part` takes it out
    }


@functools.cache
def host_fingerprint() -> str:
    """What compiled code depends on: the CPU's model and feature flags, the cores this
    process may run on, jaxlib, and the device kind. XLA:CPU vectorises for the host's
    features and splits work over a thread pool sized by the cores it may use, so the
    order of float reductions, and so the last bits of a chaotic rollout, may differ
    between CPUs and between core counts (`taskset`)."""
    import jaxlib

    try:
        with open("/proc/cpuinfo") as f:
            cpu = "".join(sorted({line for line in f if line.startswith(("model name", "flags"))}))
    except OSError:  # not Linux
        cpu = f"{platform.machine()} {platform.processor()}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    text = f"{cpu}|{cores}|{jaxlib.__version__}|{jax.devices()[0].device_kind}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _soak_shard(
    run: _Soaker,
    shard: int,
    checkpoint: soak_checkpoint.Checkpoint | None = None,
    same_host: bool = False,
) -> dict[str, Any]:
    """One shard's statistics, as JSON-ready Python values.

    With `checkpoint`, the shard saves its carry there after every `run.every` steps,
    and resumes from what is saved (only what this host saved, if `same_host`: a
    replay). A shard resumed from another host's carry names both hosts (`host`), so
    no replay takes it for this host's own."""
    carry, action_keys = run.start(jax.random.fold_in(jax.random.key(1), shard))
    here = host_fingerprint()
    done, hosts, before = 0, {here}, 0.0
    saved = None if checkpoint is None else checkpoint.load(carry)
    if saved is not None and not (same_host and saved[1]["hosts"] != [here]):
        carry, info = saved
        done, hosts, before = info["done"], {here, *info["hosts"]}, info["seconds"]
    resumed_at = done
    start = time.perf_counter()
    while done < run.steps:
        carry = run.advance(carry, action_keys[done : done + run.every])
        done += run.every
        if checkpoint is not None and done < run.steps:
            spent = round(before + time.perf_counter() - start, 1)
            checkpoint.save(carry, {"done": done, "hosts": sorted(hosts), "seconds": spent})
    states, stats = carry
    stats = jax.tree.map(np.asarray, stats)
    out = {k: v.item() for k, v in stats.items() if k not in ("lo", "hi")}
    digest = hashlib.sha256()
    final = (states.data.qpos, states.data.qvel, states.observation, states.reward)
    for leaf in jax.tree.leaves(jax.tree.map(np.asarray, final)):
        digest.update(np.ascontiguousarray(leaf).tobytes())
    out["final_digest"] = digest.hexdigest()
    out["host"] = "+".join(sorted(hosts))
    out["checkpoint_every"] = run.every
    if resumed_at:
        out["seconds_before"] = before  # `Progress.part` adds it to the part's seconds
    out.update({k: {name: x.tolist() for name, x in stats[k].items()} for k in ("lo", "hi")})
    return out


def _shard_checkpoint(progress: Progress, name: str, shard: int, run: _Soaker):
    """Where part `name` (shard `shard`) keeps its carry, tied to its sizes."""
    sizes = {"shard": shard, "envs": run.num_envs, "steps": run.steps, "every": run.every}
    return progress.checkpoint(name, **sizes)


class _Soaker(NamedTuple):
    """One batch's soak as two jitted pieces: `start(key) -> (carry, action_keys)` and
    `advance(carry, action_keys[i : i + every]) -> carry`; the carry is the batched
    states and the running statistics."""

    start: Callable[[jax.Array], tuple[Any, jax.Array]]
    advance: Callable[[Any, jax.Array], Any]
    num_envs: int
    steps: int
    every: int


@functools.cache
def _soak(env: Env, num_envs: int, steps: int, every: int = SOAK_CHECKPOINT_EVERY) -> _Soaker:
    """The soak of one batch of `num_envs` for `steps`, advanced `every` steps at a
    time (all at once where `every` does not divide `steps`); one per env and size,
    so that soaks of the same shape share one compile."""
    spec = env.action_spec()
    low, high = equivalence.action_bounds(spec)
    limit = env.episode_length

    @jax.jit
    def start(key):
        reset_key, action_key = jax.random.split(key)
        states = jax.vmap(env.reset)(jax.random.split(reset_key, num_envs))
        obs = states.observation
        stats = {
            "nonfinite": jnp.int32(0),
            "diverged": jnp.int32(0),
            "reward_min": jnp.float32(jnp.inf),
            "reward_max": jnp.float32(-jnp.inf),
            "truncation_ok": jnp.bool_(True),
            "qvel_max": jnp.max(jnp.abs(states.data.qvel)),
            "lo": jax.tree.map(lambda x: x.min(0), obs),
            "hi": jax.tree.map(lambda x: x.max(0), obs),
        }
        return (states, stats), jax.random.split(action_key, steps)

    def body(carry, action_key):
        states, stats = carry
        action = jax.random.uniform(action_key, (num_envs,) + spec.shape, minval=low, maxval=high)
        ended = states.last()
        states = jax.vmap(env.step)(states, action)
        finite = jnp.isfinite(states.reward)
        for value in states.observation.values():
            finite &= jnp.all(jnp.isfinite(value.reshape(value.shape[0], -1)), axis=1)
        obs = states.observation
        stats = {
            "nonfinite": stats["nonfinite"] + jnp.sum(~finite),
            "diverged": stats["diverged"] + jnp.sum(states.diverged),
            "reward_min": jnp.minimum(stats["reward_min"], states.reward.min()),
            "reward_max": jnp.maximum(stats["reward_max"], states.reward.max()),
            "truncation_ok": stats["truncation_ok"] & _step_types_ok(states, ended, limit),
            "qvel_max": jnp.maximum(stats["qvel_max"], jnp.max(jnp.abs(states.data.qvel))),
            "lo": jax.tree.map(lambda lo, x: jnp.minimum(lo, x.min(0)), stats["lo"], obs),
            "hi": jax.tree.map(lambda hi, x: jnp.maximum(hi, x.max(0)), stats["hi"], obs),
        }
        return (states, stats), None

    @jax.jit
    def advance(carry, action_keys):
        return jax.lax.scan(body, carry, action_keys)[0]

    return _Soaker(start, advance, num_envs, steps, every if steps % every == 0 else steps)


def _step_types_ok(states, ended: jax.Array, limit: int | None) -> jax.Array:
    """dm_env's step types and discounts for a batch just stepped (`ended`: LAST before).

    At the time limit: LAST with discount 1. Before it: MID with discount 1, or
    LAST at a terminal state (discount below 1), and LAST ever after with the
    same discount (`Env.step`); a task without a time limit has no truncation.
    """
    last = states.step_type == StepType.LAST
    truncated = jnp.zeros_like(last) if limit is None else (states.step >= limit) & ~ended
    terminal = states.discount < 1
    ok = jnp.where(truncated, last & (states.discount == 1), last == (ended | terminal))
    return jnp.all(ok)


# ----- the record --------------------------------------------------------------------------


Piece = Callable[[str, str, Progress], dict]


def _in_mode(x64: bool, piece: Callable[..., dict], resumable: bool = False) -> Piece:
    def run(domain: str, task: str, progress: Progress) -> dict:
        with equivalence.precision(x64):
            env = jaxcontrol.load(domain, task)
            return piece(env, progress=progress) if resumable else piece(env)

    return run


PIECES: dict[str, Piece] = {
    "one_step_float64": _in_mode(True, lambda env: one_step(env, x64=True)),
    "one_step_float32": _in_mode(False, lambda env: one_step(env, x64=False)),
    "episode": _in_mode(True, episode),
    "resets": _in_mode(False, resets),
    "returns": _in_mode(False, returns, resumable=True),
    "soak": _in_mode(False, soak, resumable=True),
}


def measure_piece(
    domain: str,
    task: str,
    piece: str,
    records: str | pathlib.Path | None = None,
    parts: Sequence[str] | None = None,
) -> dict[str, Any]:
    """One piece of the record, with the seconds it took.

    With `records`, a resumable piece keeps its finished parts under
    `<records>/progress/` and picks them up again if it was stopped midway.
    With `parts` (of `piece_parts`), only those are measured; `PartsLeft` is
    raised unless the other runs sharing the file have saved the rest."""
    if piece not in PIECES:
        raise ValueError(f"unknown piece {piece!r}; valid pieces: {', '.join(PIECES)}")
    error = None if parts is None else _parts_error([piece], list(parts), [(domain, task)])
    if error:
        raise ValueError(error)
    progress = piece_progress(domain, task, piece, records, parts)
    caps = progress.config.get("solver_caps")  # None: dm_control's settings
    start = time.perf_counter()
    result = PIECES[piece](domain, task, progress)
    result["seconds"] = round(time.perf_counter() - start + progress.earlier_seconds(), 1)
    result["solver_caps"] = caps
    if progress.config.get("mjx_fixes"):
        result["mjx_fixes"] = progress.config["mjx_fixes"]
    result["jax"] = jax.__version__
    if progress.resumed:
        result["resumed_parts"] = progress.resumed
    return result


def piece_progress(
    domain: str,
    task: str,
    piece: str,
    records: str | pathlib.Path | None,
    only: Sequence[str] | None = None,
) -> Progress:
    """The piece's `Progress` under `records` (None: nothing kept), for its config."""
    name = f"{domain}-{task}"
    caps = solver_caps(domain, task)
    fixes = mjx_fixes_of(domain, task)
    shards = REGISTRY.prototype(domain, task).soak_shards
    config = {
        "task": name,
        "piece": piece,
        "sizes": [RETURN_EPISODES, SOAK_ENVS, SOAK_STEPS, SOAK_SHARDS],
        **({"solver_caps": caps} if caps else {}),
        # Parts measured under stock MJX's line search never mix with fixed ones.
        **({"mjx_fixes": fixes} if fixes else {}),
        # Only where it differs, so that parts saved before `Task.soak_shards` stay valid.
        **({"soak_shards": shards} if piece == "soak" and shards != SOAK_SHARDS else {}),
    }
    return Progress(progress_path(records, name, piece), config, expand_parts(piece, only))


def expand_parts(piece: str, parts: Sequence[str] | None) -> list[str] | None:
    """`--parts` names as the parts they stand for: a policy's name (returns) is
    its quarters and itself; every other name is one part."""
    if parts is None:
        return None
    policies = POLICIES if piece == "returns" else ()
    return [
        name for part in parts for name in (return_parts(part) if part in policies else (part,))
    ]


def solver_caps(domain: str, task: str) -> list[int] | None:
    """The task's MJX solver caps (`Task.solver_caps`) as a list; None: dm_control's own."""
    caps = REGISTRY.prototype(domain, task).solver_caps
    return list(caps) if caps else None


@functools.cache
def mjx_fixes_of(domain: str, task: str) -> list[str]:
    """The fixes to stock MJX in effect that can change the task's physics
    (`mjx_fixes.touching`); pieces measured under others are stale."""
    return list(mjx_fixes.touching(jaxcontrol.load(domain, task).mj_model))


def stale_pieces(
    record: dict[str, Any], caps: list[int] | None, fixes: Sequence[str] = ()
) -> list[str]:
    """Pieces of `record` measured under other physics than the task's now: other
    solver settings than its `caps`, or other MJX fixes than `fixes`.

    Records from before solver caps existed carry none: dm_control's settings; from
    before `mjx_fixes`, none: stock MJX."""
    return [
        piece
        for piece in PIECES
        if isinstance(record.get(piece), dict)
        and (
            record[piece].get("solver_caps") != caps
            or record[piece].get("mjx_fixes", []) != list(fixes)
        )
    ]


def jax_versions(record: dict[str, Any]) -> list[str]:
    """The JAX versions the record's pieces were measured with, oldest record's first.

    A piece names its own version; older pieces (before pieces did) were measured
    with the version their record names."""
    versions = {
        record[piece].get("jax", record.get("jax"))
        for piece in PIECES
        if isinstance(record.get(piece), dict)
    }
    return sorted(v for v in versions if v)


def provenance() -> dict[str, str]:
    return {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, "
        f"{jax.devices()[0].platform}",
        "jax": jax.__version__,
    }


def missed_targets(
    record: dict[str, Any],
    required: Iterable[str] = tuple(PIECES),
    caps: list[int] | None = None,
    fixes: Sequence[str] = (),
) -> list[str]:
    """Every target of the contact-domains issue that `record` misses (empty: all met).

    A `required` piece that was never measured counts as missed, and so does one
    measured under other physics than the task's now (`stale_pieces`: its solver
    `caps`, its MJX `fixes`)."""
    unmeasured = [piece for piece in required if not record.get(piece)]
    missed = [f"not measured: {', '.join(unmeasured)}"] if unmeasured else []
    measured = [p for p in required if isinstance(record.get(p), dict)]
    stale_caps = [p for p in measured if record[p].get("solver_caps") != caps]
    if stale_caps:
        missed.append(f"measured under other solver settings: {', '.join(stale_caps)}")
    stale_fixes = [
        p for p in measured if p not in stale_caps and record[p].get("mjx_fixes", []) != list(fixes)
    ]
    if stale_fixes:
        now = ", ".join(fixes) or "none"
        missed.append(f"measured under other MJX fixes (now {now}): {', '.join(stale_fixes)}")
    for dtype in ("float64", "float32"):
        piece = record.get(f"one_step_{dtype}")
        if piece:
            for who, key, worst, tolerance in one_step_misses(piece):
                missed.append(f"one step {dtype} {who} {key}: {worst:.2e} > {tolerance:.2e}")
    ep = record.get("episode")
    if ep:
        if ep["measured_class"] != ep["declared_class"]:
            missed.append(
                f"episode class declared {ep['declared_class']}, measured {ep['measured_class']} "
                f"(raw MJX drift {ep['raw_drift']:.2e})"
            )
        if ep["measured_class"] == "exact" and ep["ours_rel"] > EPISODE_EXACT_RTOL:
            missed.append(f"episode return rel {ep['ours_rel']:.2e} > {EPISODE_EXACT_RTOL}")
        if ep["cpu_rel"] > 1e-12:
            missed.append(f"CPU path episode return rel {ep['cpu_rel']:.2e} > 1e-12")
        if not ep.get("ends_alike", True):  # records before issue 9 lack it
            missed.append("episode: ours did not end (LAST) where dm_control's did")
    rs = record.get("resets")
    if rs:
        if not rs["names_match"]:
            missed.append("reset quantities differ from dm_control's")
        low = {k: p for k, p in reset_pvalues(rs).items() if p <= KS_THRESHOLD}
        if low:
            missed.append(f"reset KS p <= {KS_THRESHOLD}: {low}")
        mismatch = rs["constant_mismatch"] + rs.get("confirmation", {}).get("constant_mismatch", [])
        if mismatch:
            missed.append(f"constant reset entries differ: {mismatch}")
    for policy, z in (record.get("returns") or {}).items():
        if isinstance(z, dict) and not abs(z["z"]) <= Z_THRESHOLD:
            missed.append(f"returns under {policy}: |z| = {abs(z['z']):.2f} > {Z_THRESHOLD}")
    sk = record.get("soak")
    if sk:
        for key in ("nonfinite", "diverged"):
            if sk[key]:
                missed.append(f"soak: {sk[key]} {key}")
        # Records before LQR (issue 9) held every task to [0, 1].
        if not sk.get("rewards_in_range", 0 <= sk["reward_min"] and sk["reward_max"] <= 1):
            missed.append(f"soak: rewards in [{sk['reward_min']}, {sk['reward_max']}]")
        if not sk["ends_by_truncation"]:
            missed.append("soak: step types or discounts wrong")
        if sk["constant_observations"]:
            missed.append(f"soak: constant observations {sk['constant_observations']}")
        # Records before session 9 compared twin environments within one batch.
        if not sk.get("replay_identical", sk.get("twins_identical")):
            missed.append("soak: a replay of the same keys and actions differed (nondeterminism)")
    return missed


# ----- PARITY.md ---------------------------------------------------------------------------


def load_records(directory: str | pathlib.Path) -> list[dict[str, Any]]:
    """Every registered task's record in `directory`, in registry order.

    A task without a record file gets an empty record, so that it shows as
    unmeasured rather than vanishing from PARITY.md."""
    order = {f"{d}-{t}": i for i, (d, t) in enumerate(jaxcontrol.ALL_TASKS)}
    records = {
        r["task"]: r
        for r in (json.loads(p.read_text()) for p in pathlib.Path(directory).glob("*.json"))
    }
    for name in order:
        records.setdefault(name, {"task": name})
    return sorted(records.values(), key=lambda r: order.get(r["task"], len(order)))


def read_record(directory: str | pathlib.Path, task: str) -> dict[str, Any]:
    """The task's record file as a dict (empty if there is none)."""
    path = pathlib.Path(directory) / f"{task}.json"
    return json.loads(path.read_text()) if path.exists() else {}


def write_record(directory: str | pathlib.Path, record: dict[str, Any]) -> pathlib.Path:
    """Writes (or merges into) the task's record file."""
    path = pathlib.Path(directory) / f"{record['task']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    merged = {**read_record(directory, record["task"]), **record}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def one_step_misses(piece: dict) -> list[tuple[str, str, float, float]]:
    """(who, quantity, difference, tolerance) over a one-step piece's tolerances, as
    `equivalence.one_step_misses` sets them from the piece's raw MJX figures."""
    return [
        (who, key, worst, tolerance)
        for who in ("ours", "cpu")
        for key, (worst, tolerance) in equivalence.one_step_misses(
            piece["dtype"], piece[who], piece["raw"]
        ).items()
    ]


def _own_tolerances(piece: dict) -> str:
    """The observations held to raw MJX's own (larger) error, e.g. "; obs/force_torque 2.0e+00"."""
    dtype, raw = piece["dtype"], piece["raw"]
    floor = equivalence.one_step_tolerance(dtype, raw)
    own = {k: equivalence.one_step_tolerance(dtype, raw, k) for k in raw}
    return "".join(f"; {key} {_e(t)}" for key, t in sorted(own.items()) if t > floor)


def _one_step_cell(piece: dict) -> str:
    if not piece:
        return "—"
    return (
        f"{_e(piece.get('worst_ours'))} / {_e(piece.get('worst_cpu'))} / "
        f"{_e(piece.get('worst_raw'))} ({_e(piece.get('tolerance'))}{_own_tolerances(piece)})"
    )


def _e(value) -> str:
    return "—" if value is None else f"{value:.1e}"


def render(records: list[dict[str, Any]]) -> str:
    """PARITY.md: one row per task with every figure, and the targets it misses."""
    lines = [
        "# Parity with dm_control",
        "",
        (
            "Generated by `python -m jaxcontrol parity --render` from the records that the full "
            "test tier (`python -m pytest -m full`) writes to `parity_records/`. Do not edit by "
            "hand. Targets are those of the contact-domains issue; the notes under the table "
            "explain each column."
        ),
        "",
        (
            "| task | one step f64: ours / CPU / raw MJX (tol) "
            "| one step f32 rel: ours / CPU / raw MJX (tol) "
            "| episode f64: class, return rel ours / CPU, raw MJX drift (100 steps) "
            "| resets: min KS p | returns \\|z\\|: zero / sine / bang "
            "| soak: non-finite in steps | misses | measured |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        f64, f32 = r.get("one_step_float64", {}), r.get("one_step_float32", {})
        ep, rs, rt, sk = r.get("episode"), r.get("resets"), r.get("returns"), r.get("soak")
        one64, one32 = (_one_step_cell(piece) for piece in (f64, f32))
        episode = (
            f"{ep['declared_class']}, {_e(ep['ours_rel'])} / {_e(ep['cpu_rel'])}, "
            f"{_e(ep['raw_drift'])} ({_e(ep['raw_drift_100'])})"
            if ep
            else "—"
        )
        ks = _resets_cell(rs) if rs else "—"
        zs = " / ".join(f"{abs(rt[p]['z']):.2f}" for p in POLICIES) if rt else "—"
        soak_cell = f"{sk['nonfinite']} in {sk['steps']:.0e}" if sk else "—"
        if sk and sk.get("qvel_max") is not None:
            soak_cell += f", max \\|qvel\\| {sk['qvel_max']:.0f}"
        registered = r["task"] in {f"{d}-{t}" for d, t in jaxcontrol.ALL_TASKS}
        caps = solver_caps(*r["task"].split("-", 1)) if registered else None
        fixes = mjx_fixes_of(*r["task"].split("-", 1)) if registered else []
        missed = missed_targets(r, caps=caps, fixes=fixes)
        solver = f", solver caps {caps[0]}/{caps[1]}" if caps else ""
        versions = jax_versions(r)
        solver += f", jax {' + '.join(versions)}" if versions else ""
        lines.append(
            f"| {r['task']} | {one64} | {one32} | {episode} | {ks} | {zs} | {soak_cell} "
            f"| {'; '.join(missed) if missed else 'none'} | {r.get('date', '?')}{solver} |"
        )
    lines += [
        "",
        (
            "- **Solver caps**: where a task lowers MJX's solver iteration caps "
            "(`Task.solver_caps`, iterations/ls_iterations; BENCHMARKS.md has the study), "
            "ours runs with them and every figure here holds ours to dm_control all the same; "
            "raw MJX always runs dm_control's settings."
        ),
        (
            "- **One step**: worst absolute difference from dm_control after one control step, over "
            f"{N_STATES} states from dm_control's own resets and random rollouts (observation, "
            "reward, next qpos and qvel), for our MJX env, our model under C MuJoCo (CPU), and "
            "stock `mjx.step` (raw MJX, qpos/qvel). Float64 target: 1e-9, or 10x raw MJX's own "
            "error if larger. Float32: relative to each quantity's scale, target 1e-4, or 10x raw "
            "MJX's own (relative) error if larger. An observation that raw MJX itself misses by "
            "more (contact forces where MJX's contacts differ from C's) is held to 10x raw MJX's "
            "error in it, named after the tolerance. So is the observation of a reset state "
            "(`reset_obs/`), where ours misses the target there: raw MJX's is stock `mjx.forward` "
            "of the same state with actuation off, as dm_control's reset ends (quadruped-fetch's "
            "toes rest on the floor to 1e-16 m; rounded to float32 they are 1.5e-8 m in, and "
            "stock MJX's contact forces there carry the body's weight just as ours do)."
        ),
        (
            f"- **Episode**: a 1000-step float64 episode under a smooth action sequence (amplitude "
            f"{EPISODE_AMPLITUDE}) from a dm_control reset; relative difference of the return. "
            f"'exact' tasks (raw MJX stays within {RAW_EXACT_DRIFT:g} of C MuJoCo) must agree "
            f"within {EPISODE_EXACT_RTOL:g}; for 'distributional' ones raw MJX itself drifts and "
            "the distribution tests are the gate. The class is declared on the task and checked "
            "against the measurement."
        ),
        (
            "- **Resets**: two-sample KS tests per state coordinate (qpos, qvel, and the actuator "
            "states where a model has them: dog's 38 random activations, quadruped's 12, which "
            "stay at zero in both) and per-episode "
            f"quantity, {RESETS_OURS} of our resets against {RESETS_REFERENCE} of dm_control's; target p > "
            f"{KS_THRESHOLD:g} for every coordinate of the state and of the task's variables; a "
            f"per-episode model field (escape's terrain: 40,401 columns) is held to it "
            f"family-wise (its smallest p times its column count). A quantity that misses is "
            f"tested again on fresh samples, {CONFIRM_BATCHES * RESETS_OURS} of ours against "
            f"{CONFIRM_REFERENCE} of dm_control's from another seed, and held to that second "
            f"test: with 63 columns (humanoid_CMU's qpos) the first test alone misses by chance "
            f"about 6% of the time, and a real difference shows again more strongly."
        ),
        (
            f"- **Returns**: {RETURN_EPISODES} episodes per side, each from its own resets, under "
            f"three open-loop policies; target |z| <= {Z_THRESHOLD:g}. Newer records also "
            "keep both samples and a rank test's p (Mann-Whitney U), which a few "
            "heavy-tailed episodes move less than they move z."
        ),
        (
            f"- **Soak**: {SOAK_ENVS} environments x {SOAK_STEPS} random-action steps in float32; "
            "target 0 non-finite states, and a replay of a shard that ends bit-identical on "
            "the host that measured it (shard 0 twice where every shard was measured on "
            "another machine or core count). Newer soaks also keep the largest \\|qvel\\| "
            "of any environment at any step: a state can stay finite and still be flung."
        ),
        (
            "- **MJX fixes**: jaxcontrol repairs stock MJX's elliptic-cone line search "
            '(`jaxcontrol.mjx_fixes`; BENCHMARKS.md, "MJX\'s elliptic line search"): in '
            "float32 a contact's `tsqr` can round below zero, stock MJX's line search then "
            "meets a NaN cost and leaves that physics step's constraints unsolved. The fix "
            "touches only tasks with elliptic cones (finger, manipulator, stacker); their "
            "pieces measured before it name no fix and count as stale until measured again. "
            "The raw MJX columns run the same fixed MJX."
        ),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """`jaxcontrol parity`: measure tasks into records, or render PARITY.md."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="jaxcontrol parity",
        description="Measure tasks' full parity records, or render PARITY.md from them.",
    )
    parser.add_argument("tasks", nargs="*", help="DOMAIN-TASK ids to measure (default: none)")
    parser.add_argument("--records", default="parity_records", help="records directory")
    parser.add_argument("--pieces", default=",".join(PIECES), help="comma-separated pieces")
    parser.add_argument(
        "--missing",
        action="store_true",
        help="measure only the pieces that a task's record lacks (to finish a stopped run)",
    )
    listed = "; ".join(f"{piece}: {','.join(piece_parts(piece))}" for piece in RESUMABLE)
    parser.add_argument(
        "--parts",
        help="comma-separated parts of one resumable piece to measure in this process (run "
        "several at once, one core each, with the same records; the last one to finish "
        f"writes the record): {listed} (shard0 to shard31 where a task has 32 soak shards)",
    )
    parser.add_argument("--render", action="store_true", help="write PARITY.md from the records")
    parser.add_argument("--out", default="PARITY.md", help="where --render writes")
    args = parser.parse_args(argv)
    valid = {f"{d}-{t}": (d, t) for d, t in jaxcontrol.ALL_TASKS}
    unknown = [t for t in args.tasks if t not in valid]
    pieces = [p for p in args.pieces.split(",") if p]
    bad = [p for p in pieces if p not in PIECES]
    if unknown or bad:
        what = f"unknown tasks {unknown}" if unknown else f"unknown pieces {bad}"
        print(f"jaxcontrol parity: {what}; valid: {', '.join(valid if unknown else PIECES)}")
        return 2
    parts = None if args.parts is None else [p for p in args.parts.split(",") if p]
    if parts is not None:
        error = _parts_error(pieces, parts, [valid[name] for name in args.tasks])
        if error:
            print(f"jaxcontrol parity: {error}")
            return 2
    status = 0
    for name in args.tasks:
        # Each piece is written as soon as it is measured, so a stopped run loses at
        # most the piece in progress (and the long pieces keep their finished parts).
        caps, fixes = solver_caps(*valid[name]), mjx_fixes_of(*valid[name])
        done = read_record(args.records, name) if args.missing else {}
        stale = stale_pieces(done, caps, fixes)
        for piece in pieces:
            if not done.get(piece) or piece in stale:
                result = _measure_shared(*valid[name], piece, args.records, parts)
                if result is None:
                    break
                write_record(args.records, {"task": name, **provenance(), piece: result})
        else:
            record = read_record(args.records, name)
            missed = missed_targets(record, pieces, caps, fixes)
            print(f"{name}: {'; '.join(missed) if missed else 'all targets met'}", flush=True)
            status |= bool(missed)
    if args.render:
        pathlib.Path(args.out).write_text(render(load_records(args.records)))
        print(f"wrote {args.out}")
    return status


def _parts_error(
    pieces: list[str], parts: list[str], tasks: Sequence[tuple[str, str]]
) -> str | None:
    """What is wrong with `--parts` for `--pieces` of `tasks`, if anything (naming
    the valid parts)."""
    if len(pieces) != 1 or pieces[0] not in RESUMABLE:
        return f"--parts needs exactly one of the pieces {', '.join(RESUMABLE)} (got {pieces})"
    shards = {REGISTRY.prototype(*task).soak_shards for task in tasks} or {SOAK_SHARDS}
    for count in sorted(shards):
        valid = piece_parts(pieces[0], count)
        unknown = [p for p in parts if p not in valid]
        if unknown or not parts:
            return f"unknown parts {unknown} of {pieces[0]}; valid parts: {', '.join(valid)}"
    return None


def _measure_shared(domain, task, piece, records, parts) -> dict[str, Any] | None:
    """`measure_piece`; with `parts`, None while other runs' parts are still missing.

    The run that finds every part saved completes the piece from them, once: it
    claims the completion with a marker file first, so two runs that finish
    together do not both complete it."""
    try:
        return measure_piece(domain, task, piece, records, parts)
    except PartsLeft as left:
        progress = piece_progress(domain, task, piece, records)
        missing = [p for p in left.parts if p not in progress.saved()[0]]
        if missing:
            print(
                f"{domain}-{task}: {piece} parts {', '.join(parts)} measured; "
                f"left to other runs: {', '.join(missing)}",
                flush=True,
            )
            return None
        try:
            os.close(os.open(progress.completing, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            print(f"{domain}-{task}: {piece} is being completed by another run", flush=True)
            return None
        return measure_piece(domain, task, piece, records)  # every part is saved
