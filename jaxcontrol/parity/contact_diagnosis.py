"""Why one step differs: C MuJoCo's and MJX's contacts and constraint rows at one state.

`compare_constraints(env, transition)` runs C's `mj_forward` and `mjx.forward` (with the
MJX fixes in effect, in the current precision) from a transition's start with its action,
on our model with the start's model fields in place, and pairs what each engine built:

  * each of C's contacts with MJX's contact of the same geoms nearest to it: distances,
    the angle between their first tangents (under pyramidal cones, a turned friction
    pyramid), friction and solver parameters;
  * each of C's constraint rows with MJX's active row of the nearest Jacobian: the
    Jacobian's difference, impedance `D`, reference acceleration and force.

A difference that starts in the rows' make-up (a contact's frame, a Jacobian) is the
narrow phase's or the constraint builder's; equal rows with other forces are the
solver's. `report` prints it; docs/parity.md shows what it found.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from jaxcontrol.core import Env
from jaxcontrol.mjcf import compat
from jaxcontrol.parity.engines import CpuPath, raw_data
from jaxcontrol.reference.samples import Transition


@dataclasses.dataclass
class ContactPair:
    """One of C's contacts and MJX's nearest contact of the same geoms (None: no such)."""

    geoms: tuple[str, str]
    dim: int
    dist: tuple[float, float | None]
    pyramid_turn_deg: float | None  # the angle between the engines' tangents, folded to [0, 45]
    friction: tuple[np.ndarray, np.ndarray | None]


@dataclasses.dataclass
class RowPair:
    """One of C's constraint rows and the MJX row paired with it."""

    kind: str  # mjtConstraint name, e.g. "CONTACT_PYRAMIDAL"
    id: int
    jacobian_difference: float  # sum |J_C - J_MJX| over the row
    impedance: tuple[float, float]
    aref: tuple[float, float]
    force: tuple[float, float]


@dataclasses.dataclass
class ConstraintComparison:
    """C's and MJX's forward pass at one start state, side by side."""

    contacts: list[ContactPair]
    rows: list[RowPair]
    qacc_error: float  # max |qacc_MJX - qacc_C| / max(1, max |qacc_C|)
    qacc_smooth_error: float  # the same without constraints
    mjx_rows: int  # MJX's active rows (C has len(rows))


def compare_constraints(env: Env, transition: Transition) -> ConstraintComparison:
    """C's and MJX's contacts and constraint rows at `transition`'s start (module doc)."""
    c = CpuPath(env)
    c.set_state(transition.start)
    model, data = c.model, c.data
    data.ctrl[:] = transition.action
    mujoco.mj_forward(model, data)
    dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
    blank = compat.put_data(model, mujoco.MjData(model))
    start = raw_data(blank, transition.start, dtype).replace(
        ctrl=jnp.asarray(transition.action, dtype)
    )
    ours = jax.jit(mjx.forward)(mjx.put_model(model), start)
    return ConstraintComparison(
        contacts=_contact_pairs(model, data, ours._impl.contact),
        rows=_row_pairs(model, data, ours._impl),
        qacc_error=_relative(ours.qacc, data.qacc),
        qacc_smooth_error=_relative(ours.qacc_smooth, data.qacc_smooth),
        mjx_rows=int(np.count_nonzero(np.asarray(ours._impl.efc_D))),
    )


def _relative(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b), initial=0) / max(1.0, np.max(np.abs(b), initial=0)))


def _geom_name(m: mujoco.MjModel, g: int) -> str:
    return mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom {g}"


def _contact_pairs(m: mujoco.MjModel, d: mujoco.MjData, contact) -> list[ContactPair]:
    geoms = np.asarray(contact.geom)
    dists = np.asarray(contact.dist)
    points = np.asarray(contact.pos)
    frames = np.asarray(contact.frame).reshape(-1, 3, 3)
    frictions = np.asarray(contact.friction)
    pairs = []
    for i in range(d.ncon):
        con = d.contact[i]
        same = [k for k in range(len(dists)) if set(geoms[k].tolist()) == {con.geom1, con.geom2}]
        names = (_geom_name(m, con.geom1), _geom_name(m, con.geom2))
        if not same:
            pairs.append(
                ContactPair(names, int(con.dim), (con.dist, None), None, (con.friction, None))
            )
            continue
        k = min(same, key=lambda k: np.abs(points[k] - con.pos).sum())
        cosine = abs(float(frames[k][1] @ con.frame.reshape(3, 3)[1]))
        angle = float(np.degrees(np.arccos(min(1.0, cosine))))
        angle = min(angle, 90.0 - angle)  # a pyramid is the same after a quarter turn
        pairs.append(
            ContactPair(
                names, int(con.dim), (float(con.dist), float(dists[k])), angle,
                (con.friction.copy(), frictions[k]),
            )
        )  # fmt: skip
    return pairs


def _row_pairs(m: mujoco.MjModel, d: mujoco.MjData, impl) -> list[RowPair]:
    """C's rows in order, each with the nearest unpaired MJX row by Jacobian and position
    (rows of two contacts can share a Jacobian, not a penetration)."""
    if not d.nefc:
        return []
    jacobian, position, impedance, aref, force = (
        np.asarray(x) for x in (impl.efc_J, impl.efc_pos, impl.efc_D, impl.efc_aref, impl.efc_force)
    )
    unpaired = list(np.nonzero(impedance != 0)[0])
    c_jacobian = d.efc_J.reshape(d.nefc, m.nv)
    rows = []
    for r in range(d.nefc):
        if not unpaired:
            break
        difference = np.abs(jacobian[unpaired] - c_jacobian[r]).sum(axis=1)
        nearest = int(np.argmin(difference + np.abs(position[unpaired] - d.efc_pos[r])))
        k = unpaired.pop(nearest)
        rows.append(
            RowPair(
                kind=mujoco.mjtConstraint(d.efc_type[r]).name.removeprefix("mjCNSTR_"),
                id=int(d.efc_id[r]),
                jacobian_difference=float(difference[nearest]),
                impedance=(float(d.efc_D[r]), float(impedance[k])),
                aref=(float(d.efc_aref[r]), float(aref[k])),
                force=(float(d.efc_force[r]), float(force[k])),
            )
        )
    return rows


def report(comparison: ConstraintComparison) -> str:
    """`comparison` as text: C's value first, MJX's second."""
    head = (
        f"qacc: {comparison.qacc_error:.3g} of scale "
        f"(without constraints {comparison.qacc_smooth_error:.3g}); "
        f"rows: C {len(comparison.rows)}, MJX {comparison.mjx_rows}"
    )
    lines = [head, "contacts (C / MJX):"]
    for p in comparison.contacts:
        angle = "no MJX contact" if p.pyramid_turn_deg is None else f"{p.pyramid_turn_deg:.1f}°"
        mjx_dist = "—" if p.dist[1] is None else f"{p.dist[1]:.4g}"
        lines.append(
            f"  {p.geoms[0]}–{p.geoms[1]} dim {p.dim}: dist {p.dist[0]:.4g} / {mjx_dist}, "
            f"pyramid turned {angle}"
        )
    lines.append("rows (C / MJX):")
    for r in comparison.rows:
        lines.append(
            f"  {r.kind} {r.id}: |dJ| {r.jacobian_difference:.2e}, "
            f"D {r.impedance[0]:.4g} / {r.impedance[1]:.4g}, "
            f"aref {r.aref[0]:.4g} / {r.aref[1]:.4g}, force {r.force[0]:.4g} / {r.force[1]:.4g}"
        )
    return "\n".join(lines)
