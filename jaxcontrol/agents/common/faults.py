"""Stopping a run on SIGINT/SIGTERM, and the fault-injection hook the fault tests use.

``StopOnSignal`` turns the first SIGINT or SIGTERM into a request: the loop
finishes its chunk, saves a checkpoint and stops. A second signal acts as usual
(KeyboardInterrupt, or termination), so a stuck run can still be ended.

``point(name)`` marks a named place in the run. It does nothing unless the
environment variable ``JAXCONTROL_FAULT`` is ``NAME:N:SIGNAL``; then the N-th
time the process reaches ``NAME`` it sends itself ``SIGNAL`` (KILL, TERM or INT),
e.g. ``JAXCONTROL_FAULT=checkpoint-commit:1:KILL``. The points are:

* ``chunk-start``: before a chunk runs;
* ``chunk-end``: after its metrics line is written, before its checkpoint;
* ``checkpoint-commit``: after orbax has written a checkpoint, before its
  manifest marks it complete.
"""

from __future__ import annotations

import os
import signal
import threading

POINTS = ("chunk-start", "chunk-end", "checkpoint-commit")
_SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "INT": signal.SIGINT}
_counts: dict[str, int] = {}


def _parse(spec: str) -> tuple[str, int, int]:
    name, count, sig = (spec.split(":") + ["", ""])[:3]
    if name not in POINTS or not count.isdigit() or int(count) < 1 or sig not in _SIGNALS:
        raise ValueError(
            f"JAXCONTROL_FAULT={spec!r}: expected POINT:N:SIGNAL with POINT one of "
            f"{', '.join(POINTS)}, N >= 1 and SIGNAL one of {', '.join(_SIGNALS)}"
        )
    return name, int(count), _SIGNALS[sig]


def point(name: str) -> None:
    """Sends the configured signal to this process at the chosen visit of ``name``."""
    spec = os.environ.get("JAXCONTROL_FAULT")
    if not spec:
        return
    target, count, sig = _parse(spec)
    if name != target:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == count:
        os.kill(os.getpid(), sig)


class StopOnSignal:
    """Context manager: ``.received`` names the first SIGINT/SIGTERM seen, else None.

    Handlers are installed only in the main thread (Python allows no other) and
    the previous ones are restored on exit.
    """

    def __init__(self):
        self.received: signal.Signals | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum, frame):
        del frame
        self.received = signal.Signals(signum)
        # A second signal is not caught again.
        signal.signal(signum, self._previous[signum])

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous = signal.getsignal(sig)
                self._previous[sig] = signal.SIG_DFL if previous is None else previous
                signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
