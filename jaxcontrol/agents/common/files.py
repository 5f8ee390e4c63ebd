"""Whole-file writes and checksums for run directories."""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile


def write_atomic(path: str, text: str | bytes) -> None:
    """Writes ``text`` to ``path`` via a synced temporary file and a rename.

    A reader sees the old file or the new one, never a part; on failure (a full
    disk, say) the old file is left as it was.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def sha256_file(path: str) -> str:
    """The hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def os_error(error: BaseException) -> OSError | None:
    """The OSError behind ``error`` (itself or along its causes), if any.

    Libraries that wrap I/O failures (orbax, tensorstore) keep the OSError as a
    cause, or only its text; a text naming ENOSPC is turned back into one.
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError):
            return error
        if os.strerror(errno.ENOSPC) in str(error):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        error = error.__cause__ or error.__context__
    return None
