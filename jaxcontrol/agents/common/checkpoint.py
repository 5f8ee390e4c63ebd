"""Checkpoints with orbax-checkpoint: the full train state, the policy, and JSON metadata.

Each checkpoint step holds three items:

* ``state``: the learner's whole TrainState (params, optimiser, env states,
  replay, PRNG keys), so a resumed run continues bit for bit;
* ``policy``: the frozen policy parameters, enough for evaluation alone;
* ``meta``: JSON (chunk index, env steps, wall-clock seconds so far).

A checkpoint is complete once ``jaxcontrol_manifest.json`` sits in its step
directory, written last and atomically. It lists every file's size and SHA-256,
the run it belongs to (env, agent, seed, config) and the shapes of the train
state. ``verify`` checks all of it, so a truncated or altered file, a
checkpoint cut short by a crash, or one copied from another run is rejected by
name before orbax reads anything; ``newest_intact`` finds the newest one that
passes.

No pickle: orbax writes arrays with tensorstore and metadata as JSON. Orbax
refuses zero-size arrays (MJX data has some), so trees are stored as a flat
dict of their non-empty leaves and rebuilt from the restore target's
structure, with the empty leaves recreated.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

from jaxcontrol.agents.common import faults
from jaxcontrol.agents.common.files import sha256_file, write_atomic

MANIFEST = "jaxcontrol_manifest.json"


class CheckpointError(Exception):
    """A checkpoint that must not be used; the message names the path and why.

    ``kind`` is "incomplete" (no manifest: the writer stopped), "damaged" (a file
    differs from the manifest) or "foreign" (another run's checkpoint).
    """

    def __init__(self, message: str, kind: str = "damaged", step: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.step = step


def structure(abstract_tree: Any) -> list[list]:
    """The shapes and dtypes of a tree's leaves, as recorded in the manifest."""
    return [[list(x.shape), str(x.dtype)] for x in jax.tree.leaves(abstract_tree)]


def _canonical(manifest: dict) -> bytes:
    return (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()


def _files(step_dir: str) -> dict[str, list]:
    """[size, sha256] of every file under ``step_dir`` but the manifest."""
    out = {}
    for root, _, names in os.walk(step_dir):
        for name in names:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, step_dir)
            if rel != MANIFEST:
                out[rel] = [os.path.getsize(path), sha256_file(path)]
    return out


def write_manifest(step_dir: str, step: int, run: dict, struct: list, meta: dict) -> None:
    """Marks checkpoint ``step`` complete: checksums of all its files, and whose it is."""
    manifest = {
        "step": step,
        "run": run,
        "structure": struct,
        "meta": meta,
        "files": _files(step_dir),
    }
    write_atomic(os.path.join(step_dir, MANIFEST), _canonical(manifest))


Differences = Callable[[dict, dict], list[str]]


def run_differences(saved: dict, current: dict) -> list[str]:
    """'key saved != current' for each top-level or config entry that differs."""
    diffs = []
    for key in sorted(set(saved) | set(current)):
        old, new = saved.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            diffs += run_differences(old, new)
        elif old != new:
            diffs.append(f"{key} {old!r} != {new!r}")
    return diffs


def verify(
    step_dir: str, step: int, run: dict, struct: list, differences: Differences = run_differences
) -> dict:
    """Checks checkpoint ``step`` against its manifest, ``run`` and ``struct``.

    Args:
      step_dir: the checkpoint's directory.
      step: its step number (the directory's name).
      run: what the manifest's run must match (env, agent, seed, config).
      struct: the train state's ``structure``.
      differences: ``(manifest's run, run) -> ["what differs", ...]``; empty
        when the checkpoint belongs to the run. Default: any entry that differs.

    Returns:
      The manifest; its ``meta`` is the checkpoint's metadata.

    Raises:
      CheckpointError: naming the first file that fails and why.
    """
    path = os.path.join(step_dir, MANIFEST)
    if not os.path.exists(path):
        raise CheckpointError(
            f"{step_dir}: incomplete (no {MANIFEST}; the run stopped while writing it)",
            "incomplete",
            step,
        )
    with open(path, "rb") as f:
        raw = f.read()
    try:
        manifest = json.loads(raw)
        ok = _canonical(manifest) == raw and manifest["step"] == step
    except (ValueError, TypeError, KeyError):
        ok = False
    if not ok:
        raise CheckpointError(
            f"{path}: damaged (not the manifest this checkpoint wrote)", step=step
        )
    listed, found = manifest["files"], _files(step_dir)
    for rel in sorted(set(listed) | set(found)):
        where = os.path.join(step_dir, rel)
        if rel not in found:
            raise CheckpointError(f"{where}: missing", step=step)
        if rel not in listed:
            raise CheckpointError(f"{where}: not in the manifest (added later?)", step=step)
        if found[rel][0] != listed[rel][0]:
            raise CheckpointError(
                f"{where}: {found[rel][0]} bytes, the manifest says {listed[rel][0]} (truncated?)",
                step=step,
            )
        if found[rel][1] != listed[rel][1]:
            raise CheckpointError(f"{where}: contents differ from the manifest (sha256)", step=step)
    diffs = differences(manifest["run"], run)
    if diffs:
        raise CheckpointError(f"{step_dir}: from another run ({'; '.join(diffs)})", "foreign", step)
    if manifest["structure"] != struct:
        raise CheckpointError(
            f"{step_dir}: holds a different train state (another agent or config)", "foreign", step
        )
    return manifest


def steps_on_disk(directory: str) -> list[int]:
    """Step numbers of the checkpoint directories under ``directory``, newest first."""
    if not os.path.isdir(directory):
        return []
    names = [n for n in os.listdir(directory) if n.isdigit()]
    return sorted(
        (int(n) for n in names if os.path.isdir(os.path.join(directory, n))), reverse=True
    )


def newest_intact(
    directory: str, run: dict, struct: list, differences: Differences = run_differences
) -> tuple[int | None, dict | None, list[CheckpointError]]:
    """The newest checkpoint that passes ``verify``, its manifest, and those rejected before it."""
    rejected = []
    for step in steps_on_disk(directory):
        step_dir = os.path.join(directory, str(step))
        try:
            return step, verify(step_dir, step, run, struct, differences), rejected
        except CheckpointError as e:
            rejected.append(e)
    return None, None, rejected


def abstract_like(tree: Any) -> Any:
    """ShapeDtypeStructs (with shardings, when known) for restoring into ``tree``'s layout."""

    def one(x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=getattr(x, "sharding", None))

    return jax.tree.map(one, tree)


def abstract_single_device(tree: Any) -> Any:
    """ShapeDtypeStructs on this process's first device (for ``jax.eval_shape`` outputs)."""
    device_sharding = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=device_sharding), tree
    )


def _pack(tree: Any) -> dict[str, Any]:
    """Flat dict of the non-empty leaves, keyed by leaf index."""
    leaves = jax.tree.leaves(tree)
    return {f"{i:05d}": leaf for i, leaf in enumerate(leaves) if leaf.size > 0}


def _unpack(packed: dict[str, Any], abstract: Any) -> Any:
    """Inverse of ``_pack`` given the target's abstract tree."""
    leaves, treedef = jax.tree.flatten(abstract)
    out = []
    for i, leaf in enumerate(leaves):
        if leaf.size == 0:
            value = jnp.zeros(leaf.shape, leaf.dtype)
            if leaf.sharding is not None:
                value = jax.device_put(value, leaf.sharding)
            out.append(value)
        else:
            out.append(packed[f"{i:05d}"])
    return jax.tree.unflatten(treedef, out)


class Checkpointer:
    """Saves and restores numbered checkpoints under one directory.

    Args:
      directory: where the step directories go.
      max_to_keep: older checkpoints are deleted beyond this many.
      run: the run's identity, recorded in each manifest (see ``verify``).
      struct: the train state's ``structure``, recorded likewise.
    """

    def __init__(
        self,
        directory: str,
        max_to_keep: int | None = 2,
        run: dict | None = None,
        struct: list | None = None,
    ):
        self.directory = os.path.abspath(directory)
        self._run, self._struct = run or {}, struct or []
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep,
            create=True,
            enable_async_checkpointing=False,
            cleanup_tmp_directories=True,
        )
        self._manager = ocp.CheckpointManager(
            self.directory, options=options, item_names=("state", "policy", "meta")
        )

    def save(self, step: int, state: Any, policy: Any, meta: dict) -> None:
        """Writes checkpoint ``step``, complete on disk (manifest last) when this returns.

        On any failure (a full disk, say) the partial step is removed and the
        error re-raised; earlier checkpoints are untouched.
        """
        step_dir = os.path.join(self.directory, str(step))
        try:
            self._manager.save(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardSave(_pack(state)),
                    policy=ocp.args.StandardSave(_pack(policy)),
                    meta=ocp.args.JsonSave(meta),
                ),
                force=True,
            )
            self._manager.wait_until_finished()
            faults.point("checkpoint-commit")
            if jax.process_index() == 0:
                write_manifest(step_dir, step, self._run, self._struct, meta)
        except BaseException:
            for partial in [step_dir, *glob.glob(f"{step_dir}.orbax-checkpoint-tmp*")]:
                if not os.path.exists(os.path.join(partial, MANIFEST)):
                    shutil.rmtree(partial, ignore_errors=True)
            raise

    def latest_step(self) -> int | None:
        """The newest step orbax sees (not verified: see ``newest_intact``)."""
        return self._manager.latest_step()

    def restore_meta(self, step: int) -> dict:
        return self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))[
            "meta"
        ]

    def restore_state(self, step: int, abstract_state: Any) -> tuple[Any, dict]:
        """Restores the train state into the layout of ``abstract_state`` and the metadata."""
        out = self._manager.restore(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(_pack(abstract_state)), meta=ocp.args.JsonRestore()
            ),
        )
        return _unpack(out["state"], abstract_state), out["meta"]

    def restore_policy(self, step: int, abstract_policy: Any) -> tuple[Any, dict]:
        """Restores only the policy parameters and the metadata."""
        out = self._manager.restore(
            step,
            args=ocp.args.Composite(
                policy=ocp.args.StandardRestore(_pack(abstract_policy)), meta=ocp.args.JsonRestore()
            ),
        )
        return _unpack(out["policy"], abstract_policy), out["meta"]

    def close(self) -> None:
        self._manager.close()
