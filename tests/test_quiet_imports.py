"""`import jaxcontrol` prints nothing; MJX's real import errors still show."""

import subprocess
import sys

from jaxcontrol import quiet_imports


def test_import_prints_nothing():
    done = subprocess.run(
        [sys.executable, "-c", "import jaxcontrol"], capture_output=True, text=True, check=True
    )
    assert done.stdout == "" and done.stderr == ""


def test_only_the_missing_warp_lines_are_dropped():
    text = (
        "Failed to import warp: No module named 'warp'\n"
        "Failed to import mujoco_warp: No module named 'warp'\n"
        "Failed to import warp: CUDA driver version is insufficient\n"
        "something else\n"
    )
    assert quiet_imports.filter_output(text) == (
        "Failed to import warp: CUDA driver version is insufficient\nsomething else\n"
    )
