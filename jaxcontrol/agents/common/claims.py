"""Claims on run directories, so that several processes can share one sweep.

A claim is a file ``.claim`` in the run directory, created atomically (O_EXCL)
and holding its owner (host, process id and a random token). While its owner
works, a background thread touches the file every ``expiry / 4`` seconds; a
claim untouched for ``expiry`` seconds belongs to a process that died, and may
be taken over. Taking over renames the stale file to a name of the taker's own
first, which only one process can do, so two processes never both take it.
Works on any file system where rename and O_EXCL are atomic (local disks, NFS v3+).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time

CLAIM = ".claim"
DEFAULT_EXPIRY = 600.0  # seconds without a heartbeat before a claim counts as abandoned


class Claim:
    """A held claim on ``directory``; `release` it (or use it as a context manager)."""

    def __init__(self, directory: str, token: str, expiry: float):
        self.path = os.path.join(directory, CLAIM)
        self.token = token
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, args=(expiry / 4,), daemon=True)
        self._beat.start()

    def _heartbeat(self, every: float) -> None:
        while not self._stop.wait(every):
            if self.held():
                os.utime(self.path)

    def held(self) -> bool:
        """Whether the claim file is still this claim's."""
        owner = read_owner(self.path)
        return owner is not None and owner.get("token") == self.token

    def release(self) -> None:
        """Stops the heartbeat and removes the claim file if it is still this claim's."""
        self._stop.set()
        self._beat.join()
        if self.held():
            os.unlink(self.path)

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def read_owner(path: str) -> dict | None:
    """The owner recorded in a claim file, or None if there is none (or it is unreadable)."""
    try:
        with open(path, encoding="utf-8") as f:
            owner = json.load(f)
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def _create(path: str, token: str) -> bool:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "token": token}
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(owner, f)
    return True


def try_claim(
    directory: str, expiry: float = DEFAULT_EXPIRY, now: float | None = None
) -> Claim | None:
    """Claims ``directory`` (created if missing) for this process, or returns None while
    another process holds a live claim on it.

    Args:
      directory: the run directory.
      expiry: seconds since the last heartbeat after which a claim is abandoned.
      now: the current time (tests); default ``time.time()``.
    """
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, CLAIM)
    token = secrets.token_hex(8)
    if _create(path, token):
        return Claim(directory, token, expiry)
    try:
        age = (time.time() if now is None else now) - os.stat(path).st_mtime
    except FileNotFoundError:  # released meanwhile: try once more
        return Claim(directory, token, expiry) if _create(path, token) else None
    if age < expiry:
        return None
    stale = f"{path}.stale.{token}"
    try:
        os.rename(path, stale)  # only one taker succeeds
    except FileNotFoundError:
        return None
    os.unlink(stale)
    return Claim(directory, token, expiry) if _create(path, token) else None
