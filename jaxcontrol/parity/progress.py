"""Resumable parts: the finished parts of a long piece, kept in a file until it completes."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax

from jaxcontrol import soak_checkpoint


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
        results = TaskParts([self]).part(name, lambda *a: [measure(*a)], *args, cheap=cheap)
        return None if results is None else results[0]

    def save(self, name: str, result: Any, seconds: float) -> Any:
        """Keeps `result` as part `name`, measured here in `seconds` (plus, for a part
        resumed from a checkpoint, the result's "seconds_before", taken out of it)."""
        before = result.pop("seconds_before", 0.0) if isinstance(result, dict) else 0.0
        self.seconds_before += before
        self.parts[name] = result
        self.seconds[name] = round(seconds + before, 1)
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


class TaskParts:
    """One piece's parts for tasks measured on one rollout (siblings of one rollout
    family, `families.rollout_key`), each task's kept in its own `Progress` as its own
    run would keep them: a part's measure returns one result per task (in the order
    of `progresses`), and `part` returns them so. Given one task's `Progress`, it
    is that `Progress`, with its results in lists of one."""

    def __init__(self, progresses: Sequence[Progress]):
        self.progresses = list(progresses)
        self.lead = self.progresses[0]

    def has(self, name: str) -> bool:
        return all(p.has(name) for p in self.progresses)

    def skip(self, name: str) -> None:
        for p in self.progresses:
            p.skip(name)

    def part(
        self, name: str, measure: Callable[..., list], *args: Any, cheap: bool = False
    ) -> list | None:
        """Every task's saved part `name`, or `measure(*args)`, saved for each task;
        None where the part is outside the lead's `only` and not `cheap` (`Progress.part`)."""
        if self.has(name):  # measured earlier, or meanwhile by another run
            for p in self.progresses:
                p.resumed.append(name)
            return [p.parts[name] for p in self.progresses]
        if self.lead.only is not None and name not in self.lead.only and not cheap:
            self.skip(name)
            return None
        start = time.perf_counter()
        results = measure(*args)
        seconds = time.perf_counter() - start
        if len(results) != len(self.progresses):
            raise ValueError(f"{len(results)} results of part {name} for {len(self)} tasks")
        return [p.save(name, r, seconds) for p, r in zip(self.progresses, results)]

    def __len__(self) -> int:
        return len(self.progresses)

    def checkpoint(self, name: str, **meta: Any) -> soak_checkpoint.Checkpoint | None:
        """The lead's `Progress.checkpoint`: the carry holds every task's statistics."""
        return self.lead.checkpoint(name, **meta)

    def done(self) -> None:
        """`Progress.done` of every task (`PartsLeft` if this run skipped parts)."""
        for p in self.progresses:
            p.done()


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
