"""Batches of our states: resets, steps and injected dm_control states, jitted per Env.

The C-backend variants (`batched_reset_on_c`, `batched_inject_on_c`) compute the
same states with C MuJoCo, so that tests compile no MJX reset or forward pass.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from mujoco import mjx

from jaxcontrol import cpu_physics
from jaxcontrol.core import Env, State
from jaxcontrol.reference.state import DmState, inject


def stack(items: Sequence[Any]):
    """Pytrees (e.g. `DmState`s or observations) stacked leaf by leaf, in NumPy."""
    return jax.tree.map(lambda *xs: np.stack(xs), *items)


@functools.partial(jax.jit, static_argnums=0)
def batched_inject(env: Env, starts: DmState) -> State:
    """`inject` over a batch of stacked dm_control states, jitted per Env."""
    return jax.vmap(lambda start: inject(env, start))(starts)


@functools.partial(jax.jit, static_argnums=0)
def batched_step(env: Env, states: State, actions: jax.Array) -> State:
    """`jax.vmap(env.step)`, jitted per Env (shared by the parity tools and tests)."""
    return jax.vmap(env.step)(states, actions)


@functools.partial(jax.jit, static_argnums=0)
def batched_reset(env: Env, keys: jax.Array) -> State:
    """`jax.vmap(env.reset)`, jitted per Env."""
    return jax.vmap(env.reset)(keys)


def batched_inject_on_c(env: Env, starts: DmState) -> State:
    """`batched_inject(env, starts)` computed by C MuJoCo, in `env`'s state structure.

    The C backend's `set_state` computes the state with C's forward pass. For an MJX
    `env`, the constraint and contact rows that C's states leave out are its blank
    state's, and the kinematics are MJX's own: MJX's step starts from the kinematics
    it is given (`physics.step`) and recomputes the rest, so it steps these states
    exactly as it steps `batched_inject`'s (tests/parity/test_mirror.py). Only MJX's
    kinematics is compiled, not its forward pass (stacker-stack_2's injection
    on MJX: 29 s on one core). The starts' observations are C's.
    """
    return _from_c(env, batched_inject(_on_c(env), starts))


def batched_reset_on_c(env: Env, keys: jax.Array) -> State:
    """`batched_reset(env, keys)` computed by C MuJoCo, in `env`'s state structure.

    The task's own reset code runs on the C backend (C counts the contacts of its
    rejection and settling loops and computes the closing forward pass); for an
    MJX `env`, the states get MJX's kinematics and constraint rows as in
    `batched_inject_on_c`, whose compiled program they share. No MJX reset is
    traced or compiled (the tests' MJX rollouts: quadruped-walk's 115 -> 70 s,
    finger-spin's 47 -> 25 s on one core; docs/benchmarks.md).
    """
    return _from_c(env, batched_reset(_on_c(env), keys))


def _on_c(env: Env) -> Env:
    """`env`'s task behind the C backend (`env` itself if it is)."""
    if env.backend == "mujoco":
        return env
    return Env(env.domain, env.task_name, env.task, backend="mujoco")


def _from_c(env: Env, on_c: State) -> State:
    """States computed by `_on_c(env)` in `env`'s structure."""
    return on_c if env.backend == "mujoco" else _with_mjx_rows_and_kinematics(env, on_c)


@functools.partial(jax.jit, static_argnums=0)
def _with_mjx_rows_and_kinematics(env: Env, states: State) -> State:
    blank = env.blank_state().data

    def mjx_data(data, fields):
        data = cpu_physics.with_constraint_rows(data, blank)
        return mjx.kinematics(env._physics(data, fields).model, data)

    return states.replace(data=jax.vmap(mjx_data)(states.data, states.model_fields))
