"""Registers every task with Gymnasium, lazily, when jaxcontrol is imported.

`install()` (run last by `import jaxcontrol`, from `jaxcontrol.import_setup`)
registers `jaxcontrol/DOMAIN-TASK-v0` at once if Gymnasium is already imported.
Otherwise it leaves a one-shot finder on `sys.meta_path` that registers them just
after Gymnasium's own import finishes, so `import jaxcontrol` never imports
Gymnasium (nor fails without it) and costs microseconds. `gymnasium.make("jaxcontrol:jaxcontrol/
cartpole-swingup-v0")` also works: Gymnasium imports jaxcontrol first.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import warnings

_MODULE = "gymnasium"


def _register() -> None:
    try:
        from jaxcontrol.wrappers import gymnasium_adapter  # pylint: disable=import-outside-toplevel

        gymnasium_adapter.register_all()
    except Exception as error:  # noqa: BLE001 - never break the user's import of gymnasium
        warnings.warn(
            f"jaxcontrol could not register its tasks with Gymnasium: {error}", stacklevel=2
        )


class _RegisteringLoader(importlib.abc.Loader):
    """Gymnasium's own loader, followed by the registration."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _register()


class _GymnasiumFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of the real `gymnasium`, once."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _MODULE:
            return None
        uninstall()
        spec = importlib.util.find_spec(_MODULE)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _RegisteringLoader(spec.loader)
        return spec


_FINDER = _GymnasiumFinder()


def install() -> None:
    """Registers now if Gymnasium is imported, else when it is."""
    if _MODULE in sys.modules:
        _register()
    elif _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
