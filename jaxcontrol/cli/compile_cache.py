"""`--compile-cache DIR`: JAX's persistent compilation cache for train, evaluate and sweep."""

from __future__ import annotations

import argparse
import os
import sys

COMPILE_CACHE_HELP = (
    "JAX's persistent compilation cache: a later run (or --resume, or evaluate) of the same "
    "task and config loads its compiled programs instead of compiling them again (minutes "
    "for the large contact models on a GPU). Default: JAX_COMPILATION_CACHE_DIR where set, "
    "else JAXCONTROL_COMPILE_CACHE, else ~/.cache/jaxcontrol/xla (under XDG_CACHE_HOME where "
    "set); 'none' turns it off"
)


def add_flag(parser: argparse.ArgumentParser) -> None:
    """Adds `--compile-cache DIR`, which `use` applies."""
    parser.add_argument("--compile-cache", default=None, metavar="DIR", help=COMPILE_CACHE_HELP)


def use(directory: str | None) -> str | None:
    """Points JAX's persistent compilation cache at `directory` (see `--compile-cache`);
    returns the directory in use, or None when the cache is off."""
    import jax  # pylint: disable=import-outside-toplevel
    from jax.experimental.compilation_cache import compilation_cache  # pylint: disable=import-outside-toplevel

    if directory is None:
        if jax.config.jax_compilation_cache_dir:  # the user's own setting
            return jax.config.jax_compilation_cache_dir
        directory = os.environ.get("JAXCONTROL_COMPILE_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "jaxcontrol", "xla"
        )
    if directory.lower() == "none":
        return None
    try:
        os.makedirs(directory, exist_ok=True)
        if not os.access(directory, os.W_OK):
            raise PermissionError("not writable")
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        print(f"warning: no compilation cache: {directory!r}: {e}", file=sys.stderr)
        return None
    if directory != jax.config.jax_compilation_cache_dir:
        jax.config.update("jax_compilation_cache_dir", directory)
        compilation_cache.reset_cache()  # a cache JAX already looked for is found again
    return directory
