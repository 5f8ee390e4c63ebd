"""Measuring a record's pieces, reading and writing records, and the targets they miss."""

from __future__ import annotations

import datetime
import functools
import json
import pathlib
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax

import jaxcontrol
from jaxcontrol import mjx_fixes
from jaxcontrol.parity.families import rollout_siblings
from jaxcontrol.parity.measures import (
    episode,
    family_returns,
    one_step,
    reset_pvalues,
    resets,
    returns,
)
from jaxcontrol.parity.per_state import hard_step
from jaxcontrol.parity.progress import Progress, progress_path
from jaxcontrol.parity.settings import (
    EPISODE_EXACT_RTOL,
    KS_THRESHOLD,
    POLICIES,
    RETURN_EPISODES,
    RETURNS_PIECES,
    SOAK_ENVS,
    SOAK_SHARDS,
    SOAK_STEPS,
    Z_THRESHOLD,
    parts_error,
    return_parts,
    soak_shards,
)
from jaxcontrol.parity.soaks import family_soak, soak
from jaxcontrol.parity.tolerance import one_step_misses as _step_misses
from jaxcontrol.reference.precision import precision
from jaxcontrol.registry import REGISTRY

Piece = Callable[[str, str, Progress], dict]


def _in_mode(
    x64: bool, piece: Callable[..., dict], resumable: bool = False, backend: str = "mjx"
) -> Piece:
    def run(domain: str, task: str, progress: Progress) -> dict:
        with precision(x64):
            env = jaxcontrol.load(domain, task, backend=backend)
            return piece(env, progress=progress) if resumable else piece(env)

    return run


PIECES: dict[str, Piece] = {
    "one_step_float64": _in_mode(True, lambda env: one_step(env, x64=True)),
    "one_step_float32": _in_mode(False, lambda env: one_step(env, x64=False)),
    "episode": _in_mode(True, episode),
    "resets": _in_mode(False, resets),
    "returns": _in_mode(False, returns, resumable=True),
    "soak": _in_mode(False, soak, resumable=True),
    "hard_states_float64": _in_mode(True, lambda env: hard_step(env, x64=True)),
    "hard_states_float32": _in_mode(False, lambda env: hard_step(env, x64=False)),
    # The resets and returns with ours in float64: the remedy where float32 MJX misses
    # (docs/parity.md), measured for those tasks only.
    "resets_float64": _in_mode(True, resets),
    "returns_float64": _in_mode(True, returns, resumable=True),
    # The hard states stepped by the C backend (`backend="mujoco"`): the remedy where
    # no MJX setting helps; stock MJX is not stepped again for them.
    "hard_states_mujoco_float64": _in_mode(
        True, lambda env: hard_step(env, x64=True, with_raw=False), backend="mujoco"
    ),
    "hard_states_mujoco_float32": _in_mode(
        False, lambda env: hard_step(env, x64=False, with_raw=False), backend="mujoco"
    ),
}
FLOAT64_REMEDY_PIECES = ("resets_float64", "returns_float64")
C_BACKEND_REMEDY_PIECES = ("hard_states_mujoco_float64", "hard_states_mujoco_float32")
REMEDY_PIECES = (*FLOAT64_REMEDY_PIECES, *C_BACKEND_REMEDY_PIECES)


def default_pieces() -> tuple[str, ...]:
    """What `jaxcontrol parity` measures unless told: all but the remedies'."""
    return tuple(p for p in PIECES if p not in REMEDY_PIECES)


# The pieces every task's record is held to have; the hard states are measured task by
# task (`jaxcontrol parity --pieces hard_states_float32`), and a record without them
# shows them as not yet measured.
REQUIRED_PIECES = tuple(p for p in default_pieces() if not p.startswith("hard_states_"))


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
    error = None if parts is None else parts_error([piece], list(parts), [(domain, task)])
    if error:
        raise ValueError(error)
    progress = piece_progress(domain, task, piece, records, parts)
    start = time.perf_counter()
    result = PIECES[piece](domain, task, progress)
    return _stamped(result, progress, time.perf_counter() - start)


def _stamped(result: dict[str, Any], progress: Progress, seconds: float) -> dict[str, Any]:
    """A piece's result with what it took (`seconds` here, and its parts' earlier
    runs) and the physics it was measured under."""
    result["seconds"] = round(seconds + progress.earlier_seconds(), 1)
    result["solver_caps"] = progress.config.get("solver_caps")  # None: dm_control's settings
    if progress.config.get("mjx_fixes"):
        result["mjx_fixes"] = progress.config["mjx_fixes"]
    result["jax"] = jax.__version__
    if progress.resumed:
        result["resumed_parts"] = progress.resumed
    return result


# The pieces that one rollout can measure for a whole rollout family, in float32.
FAMILY_PIECES: dict[str, Callable[..., list[dict]]] = {
    "returns": family_returns,
    "soak": family_soak,
}


def measure_family_piece(
    domain: str,
    tasks: Sequence[str],
    piece: str,
    records: str | pathlib.Path | None = None,
    parts: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """`measure_piece` of each of `tasks`, siblings of one rollout family
    (`families.rollout_key`), on the first one's rollout: each task's parts are kept in
    its own progress file, as its own run keeps them, and its result names the
    tasks it shared the rollout with (`one_rollout_with`)."""
    if piece not in FAMILY_PIECES:
        raise ValueError(
            f"one rollout measures only the pieces {', '.join(FAMILY_PIECES)} (got {piece!r})"
        )
    check_family(domain, tasks)
    error = None if parts is None else parts_error([piece], list(parts), [(domain, tasks[0])])
    if error:
        raise ValueError(error)
    progresses = [piece_progress(domain, task, piece, records, parts) for task in tasks]
    start = time.perf_counter()
    with precision(False):
        envs = [jaxcontrol.load(domain, task) for task in tasks]
        results = FAMILY_PIECES[piece](envs, progresses=progresses)
    seconds = time.perf_counter() - start
    names = [f"{domain}-{task}" for task in tasks]
    for name, result, progress in zip(names, results, progresses):
        _stamped(result, progress, seconds)
        if len(names) > 1:
            result["one_rollout_with"] = [other for other in names if other != name]
    return results


def check_family(domain: str, tasks: Sequence[str]) -> None:
    """Raises unless `tasks` are distinct registered tasks of `domain` that share one
    rollout (`families.rollout_key`) under the same solver settings."""
    siblings = rollout_siblings(domain, tasks[0])
    strangers = [t for t in tasks[1:] if f"{domain}-{t}" not in siblings]
    if strangers or len(set(tasks)) != len(tasks):
        raise ValueError(
            f"{', '.join(f'{domain}-{t}' for t in strangers) or 'a repeated task'} cannot "
            f"share {domain}-{tasks[0]}'s rollout; its rollout siblings: "
            f"{', '.join(siblings) or 'none'}"
        )
    settings = {(str(solver_caps(domain, t)), str(mjx_fixes_of(domain, t))) for t in tasks}
    if len(settings) > 1:
        raise ValueError(f"{domain} {list(tasks)} differ in solver caps or MJX fixes: {settings}")


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
    shards = soak_shards(domain, task)
    config = {
        "task": name,
        "piece": piece,
        "sizes": [RETURN_EPISODES, SOAK_ENVS, SOAK_STEPS, SOAK_SHARDS],
        **({"solver_caps": caps} if caps else {}),
        # Parts measured under stock MJX's line search never mix with fixed ones.
        **({"mjx_fixes": fixes} if fixes else {}),
        # Only where it differs from SOAK_SHARDS, so that the default's parts keep their config.
        **({"soak_shards": shards} if piece == "soak" and shards != SOAK_SHARDS else {}),
    }
    return Progress(progress_path(records, name, piece), config, expand_parts(piece, only))


def expand_parts(piece: str, parts: Sequence[str] | None) -> list[str] | None:
    """`--parts` names as the parts they stand for: a policy's name (returns) is
    its quarters and itself; every other name is one part."""
    if parts is None:
        return None
    policies = POLICIES if piece in RETURNS_PIECES else ()
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


def current_piece(
    record: dict[str, Any], piece: str, caps: list[int] | None, fixes: Sequence[str] = ()
) -> dict[str, Any] | None:
    """`record`'s `piece` where it was measured under the task's physics now (its
    solver `caps` and MJX `fixes`: `stale_pieces`) and with the running JAX; else None.

    The full tier's `--reuse-records` takes such a piece as measured (`jaxcontrol
    parity` and the tier measure it alike, with `measure_piece`) and measures the rest.
    A piece that does not name its JAX (from before pieces did) is measured again."""
    value = record.get(piece)
    if not isinstance(value, dict) or piece in stale_pieces(record, caps, fixes):
        return None
    return value if value.get("jax") == jax.__version__ else None


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
    required: Iterable[str] = REQUIRED_PIECES,
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
        hard = record.get(f"hard_states_{dtype}")
        if hard and hard["states_missed"]:
            missed.append(
                f"hard states {dtype}: ours beyond max(target, 10x raw MJX) on "
                f"{hard['states_missed']} of {hard['n_states']} states"
            )
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
        if not ep.get("ends_alike", True):  # older records lack it
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
        # Older records, from before LQR, held every task to [0, 1].
        if not sk.get("rewards_in_range", 0 <= sk["reward_min"] and sk["reward_max"] <= 1):
            missed.append(f"soak: rewards in [{sk['reward_min']}, {sk['reward_max']}]")
        if not sk["ends_by_truncation"]:
            missed.append("soak: step types or discounts wrong")
        if sk["constant_observations"]:
            missed.append(f"soak: constant observations {sk['constant_observations']}")
        # Older records compared twin environments within one batch.
        if not sk.get("replay_identical", sk.get("twins_identical")):
            missed.append("soak: a replay of the same keys and actions differed (nondeterminism)")
    return missed


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
    """Writes (or merges into) the task's record file.

    A piece kept from before pieces named their JAX was measured with the JAX its
    record names; it is stamped with it before `record` (a newer piece, with this
    run's provenance) overwrites the record's."""
    path = pathlib.Path(directory) / f"{record['task']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = read_record(directory, record["task"])
    for piece in PIECES:
        if isinstance(kept.get(piece), dict) and "jax" not in kept[piece] and "jax" in kept:
            kept[piece] = {**kept[piece], "jax": kept["jax"]}
    merged = {**kept, **record}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def one_step_misses(piece: dict) -> list[tuple[str, str, float, float]]:
    """(who, quantity, difference, tolerance) over a one-step piece's tolerances, as
    `tolerance.one_step_misses` sets them from the piece's raw MJX figures."""
    return [
        (who, key, worst, tolerance)
        for who in ("ours", "cpu")
        for key, (worst, tolerance) in _step_misses(
            piece["dtype"], piece[who], piece["raw"]
        ).items()
    ]
