"""The C backend's control step as an XLA FFI call: C MuJoCo with no Python per step.

`ffi_step.cc` is a small C++ handler over MuJoCo's batched simulation (`mjbatch.h`,
the C API under `mujoco.batch`). It is compiled on first use, against the installed
mujoco wheel's headers and library and jaxlib's FFI headers, into a cache directory
(`JAXCONTROL_FFI_CACHE`, else `~/.cache/jaxcontrol/ffi`, under `XDG_CACHE_HOME` where
set), keyed by the source and both versions; later processes load it from there.
Building needs a C++17 compiler (`CXX`, else `c++`). Where none can build it, the C
backend steps through `jax.pure_callback` as before, after one warning saying so;
`JAXCONTROL_MUJOCO_FFI=0` chooses that path outright. docs/design/ffi-step.md says why
the handler is built on first use rather than at install time.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import warnings
import weakref

import jax
import mujoco
import numpy as np

TARGET = "jaxcontrol_mujoco_step"
SOURCE = pathlib.Path(__file__).with_name("ffi_step.cc")
# numpy's kind of a model field, as the handler's type code.
_TYPE_CODES = {np.dtype(np.float64): "d", np.dtype(np.float32): "f", np.dtype(np.int32): "i"}
_TYPE_CODES[np.dtype(np.uint8)] = "B"


class BuildError(RuntimeError):
    """The handler could not be compiled here."""


def cache_dir() -> pathlib.Path:
    """Where built handlers are kept."""
    explicit = os.environ.get("JAXCONTROL_FFI_CACHE")
    if explicit:
        return pathlib.Path(explicit)
    root = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return pathlib.Path(root, "jaxcontrol", "ffi")


def _libmujoco() -> pathlib.Path:
    package = pathlib.Path(mujoco.__file__).parent
    found = sorted(package.glob("libmujoco*.so*")) + sorted(package.glob("libmujoco*.dylib"))
    if not found:
        raise BuildError(f"no libmujoco in {package}")
    return found[0]


def _command(source: pathlib.Path, output: pathlib.Path) -> list[str]:
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        raise BuildError(f"no C++ compiler {compiler!r} on PATH (set CXX, or install g++)")
    library = _libmujoco()
    return [
        compiler,
        "-O2",
        "-std=c++17",
        "-shared",
        "-fPIC",
        f"-I{jax.ffi.include_dir()}",
        f"-I{library.parent / 'include'}",
        str(source),
        "-o",
        str(output),
        str(library),
        f"-Wl,-rpath,{library.parent}",
    ]


def build() -> pathlib.Path:
    """The handler's shared library, compiled now unless a matching build is cached.

    Raises BuildError (with the compiler's message) where it cannot be built."""
    source = SOURCE.read_bytes()
    key = hashlib.sha256(
        b"\0".join(
            [source, mujoco.__version__.encode(), jax.__version__.encode(), sys.platform.encode()]
        )
    ).hexdigest()[:16]
    directory = cache_dir() / key
    library = directory / "libjaxcontrol_ffi_step.so"
    if library.exists():
        return library
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:  # concurrent processes build once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if library.exists():
            return library
        with tempfile.TemporaryDirectory(dir=directory) as scratch:
            built = pathlib.Path(scratch, library.name)
            done = subprocess.run(
                _command(SOURCE, built), capture_output=True, text=True, check=False
            )
            if done.returncode:
                raise BuildError(done.stderr.strip()[-2000:] or "the compiler failed")
            os.replace(built, library)
    return library


@functools.cache
def library() -> ctypes.CDLL | None:
    """The loaded handler, registered with XLA; None where it is switched off or
    cannot be built (after one warning)."""
    if os.environ.get("JAXCONTROL_MUJOCO_FFI", "1") == "0":
        return None
    try:
        path = build()
    except (BuildError, OSError) as error:
        warnings.warn(
            "jaxcontrol could not build the C backend's XLA FFI step, so it steps C MuJoCo "
            f"through jax.pure_callback, which is slower: {error}",
            stacklevel=3,
        )
        return None
    return _load(str(path))


@functools.cache
def _load(path: str) -> ctypes.CDLL:
    """The library at `path`, its handler registered with XLA (once per process)."""
    lib = ctypes.CDLL(path)
    lib.jaxcontrol_engine_new.restype = ctypes.c_void_p
    lib.jaxcontrol_engine_new.argtypes = [
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
    ]
    lib.jaxcontrol_engine_free.argtypes = [ctypes.c_void_p]
    lib.jaxcontrol_engine_lean.argtypes = [ctypes.c_void_p]
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.jaxcontrol_mujoco_step), "cpu")
    return lib


class Stepper:
    """A handler engine: an mjBatch of `model` stepping `n_sub_steps` per control step,
    with `fields` (model field names) per environment and `outputs` (mjData fields)
    copied out. `model` must outlive it (the C engine reads it to grow its batch).

    `lean`: end the step with the lean stage where the model and outputs allow it
    (`self.lean` says whether they do): mj_step1's functions that compute the outputs,
    without the collision, constraints, inertia and bias forces that only the next
    step's dynamics read, and the next call recomputes (ffi_step.cc). The outputs are
    mj_step1's bits either way.
    """

    def __init__(
        self, lib, model, n_sub_steps, substep_sensors, threads, fields, outputs, lean=True
    ):
        self.fields, self.outputs = tuple(fields), tuple(outputs)
        types = ",".join(f"{name}:{_TYPE_CODES[getattr(model, name).dtype]}" for name in fields)
        error = ctypes.create_string_buffer(1000)
        handle = lib.jaxcontrol_engine_new(
            model._address,
            n_sub_steps,
            int(substep_sensors),
            threads,
            types.encode(),
            ",".join(outputs).encode(),
            int(lean),
            error,
            len(error),
        )
        if not handle:
            raise ValueError(f"the C backend's FFI step cannot run this model: {error.value}")
        self.handle = handle
        self.lean = bool(lib.jaxcontrol_engine_lean(handle))
        self._model = model
        weakref.finalize(self, lib.jaxcontrol_engine_free, handle)

    def __call__(self, state: list[jax.Array], fields: list[jax.Array], results):
        """One control step: `state` (time, qpos, qvel, act, qacc_warmstart, ctrl,
        qfrc_applied, xfrc_applied), `fields` in `self.fields`' order; returns
        `results` (ShapeDtypeStructs: the first five of `state`, then `self.outputs`).
        Vmappable: a batch is one call."""
        call = jax.ffi.ffi_call(TARGET, results, vmap_method="broadcast_all")
        return call(*state, *fields, engine=np.int64(self.handle))


def supports(fields) -> bool:
    """Whether per-environment `fields` can be the batch's expanded fields (all but
    those `mujoco.batch` cannot expand, such as quadruped-escape's `hfield_data`)."""
    from mujoco import batch as mujoco_batch

    return set(fields) <= set(mujoco_batch.MODEL_FIELDS)
