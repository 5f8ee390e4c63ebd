"""The learners' dependencies are the ``jaxcontrol[agents]`` extra; say so when one is missing.

The core install (``pip install jaxcontrol``) holds the environments and the
wrappers. The learners, their checkpoints, progress bar and plots need
optax, orbax-checkpoint, tqdm and matplotlib: ``pip install 'jaxcontrol[agents]'``.
"""

from __future__ import annotations

import importlib

MODULES = ("optax", "orbax.checkpoint", "tqdm", "matplotlib")
INSTALL = "pip install 'jaxcontrol[agents]'"


def missing() -> list[str]:
    """The modules of the agents extra that cannot be imported."""
    absent = []
    for name in MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            absent.append(name)
    return absent


def message(what: str) -> str | None:
    """``what needs the agents extra ...`` naming the missing modules, or None if none is."""
    absent = missing()
    if not absent:
        return None
    return f"{what} needs the agents extra (missing: {', '.join(absent)}): {INSTALL}"


def require(what: str = "jaxcontrol's learners") -> None:
    """Raises ImportError naming the extra if one of its modules is missing."""
    text = message(what)
    if text is not None:
        raise ImportError(text)
