"""Keeps MJX's optional-backend import chatter out of our users' output.

`import mujoco.mjx` (3.17) tries its Warp backend and, when the optional
`warp` package is absent, prints "Failed to import warp: No module named
'warp'" and the same for `mujoco_warp` to stdout. Those two lines say only that
an optional extra is not installed; jaxcontrol never uses Warp. `import_mjx`
imports MJX with stdout captured, drops exactly those lines (logged at debug
level instead) and writes every other line back to stdout, so a real failure
(warp installed but broken, say) still shows.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys

log = logging.getLogger(__name__)

# "Failed to import warp: No module named 'warp'" (and mujoco_warp's twin), when warp is absent.
_MISSING_OPTIONAL = re.compile(
    r"^Failed to import (warp|mujoco_warp): No module named '(warp|mujoco_warp)(\.[\w.]+)?'$"
)


def import_mjx() -> None:
    """Imports `mujoco.mjx` once, without its lines about the missing optional Warp backend."""
    if "mujoco.mjx" in sys.modules:
        return  # already imported (and already printed) before jaxcontrol
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            import mujoco.mjx  # noqa: F401
    finally:
        passed = filter_output(captured.getvalue())
        if passed:
            sys.stdout.write(passed)


def filter_output(text: str) -> str:
    """`text` without the missing-Warp lines, which go to the debug log."""
    kept = []
    for line in text.splitlines(keepends=True):
        if _MISSING_OPTIONAL.match(line.rstrip("\n")):
            log.debug("mujoco.mjx: %s", line.rstrip("\n"))
        else:
            kept.append(line)
    return "".join(kept)
