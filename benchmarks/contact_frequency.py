"""How often is an ellipsoid-box geom pair in contact in dm_control's fish and swimmer?

jaxcontrol.collision adds MJX's missing ELLIPSOID-BOX narrow phase because `mjx.put_model`
refuses fish and swimmer without it. This measures whether that pair matters to their
dynamics. For each task it rolls out dm_control's own environment (`dm_control.suite.load`)
with uniform random actions and, at every control step, records

  (a) C contacts: `d.ncon`, and the contacts whose geoms are an ellipsoid and a box, exactly
      as dm_control's physics produced them (fish disables constraints, swimmer disables
      contacts: the flags decide whether C's `mj_collision` runs at all);
  (b) would-be overlaps: the signed distance of every ellipsoid-box geom pair that MJX's
      `geom_pairs` lists (the pairs C would test if contacts were on), computed with our
      `jaxcontrol.collision.ellipsoid_box.collide` (float64), and cross-checked against C's
      `mj_collision` on a copy of the model with the constraint and contact flags cleared
      (margin 0, so a C contact there means the geoms overlap).

Prints one line per task: states, pairs per state, (a), the share of states with (b) an
overlap, the smallest signed distance seen, and the C cross-check count.

Example (about a minute):
  python benchmarks/contact_frequency.py --episodes 20 --steps 1000
"""

from __future__ import annotations

import argparse
import copy
import os
import time

os.environ.setdefault("MUJOCO_GL", "disable")  # before dm_control is imported

import jax
import mujoco
import numpy as np
from dm_control import suite
from mujoco.mjx._src import collision_driver

TASKS = (("fish", "swim"), ("fish", "upright"), ("swimmer", "swimmer6"), ("swimmer", "swimmer15"))
ELLIPSOID, BOX = int(mujoco.mjtGeom.mjGEOM_ELLIPSOID), int(mujoco.mjtGeom.mjGEOM_BOX)


def ellipsoid_box_pairs(m: mujoco.MjModel) -> np.ndarray:
    """(npair, 2) [ellipsoid geom, box geom] that collision filtering lets through."""
    pairs = [
        (g1, g2)
        for g1, g2, _ in collision_driver.geom_pairs(m)
        if (int(m.geom_type[g1]), int(m.geom_type[g2])) == (ELLIPSOID, BOX)
    ]
    return np.array(pairs, dtype=int).reshape(-1, 2)


def rollout(domain: str, task: str, episodes: int, steps: int, seed: int) -> dict:
    env = suite.load(domain, task, task_kwargs={"random": seed})
    physics = env.physics
    m = physics.model.ptr
    pairs = ellipsoid_box_pairs(m)
    spec = env.action_spec()
    rng = np.random.default_rng(seed)
    qpos, xpos, xmat = [], [], []
    ncon_total = 0
    ncon_pair = 0
    for _ in range(episodes):
        env.reset()
        for _ in range(steps):
            env.step(rng.uniform(spec.minimum, spec.maximum, spec.shape))
            d = physics.data.ptr
            ncon_total += d.ncon
            for c in d.contact[: d.ncon]:
                types = {int(m.geom_type[c.geom1]), int(m.geom_type[c.geom2])}
                ncon_pair += types == {ELLIPSOID, BOX}
            qpos.append(d.qpos.copy())
            xpos.append(d.geom_xpos.copy())
            xmat.append(d.geom_xmat.copy())
    return {
        "model": m,
        "pairs": pairs,
        "qpos": np.array(qpos),
        "xpos": np.array(xpos),
        "xmat": np.array(xmat).reshape(len(xmat), -1, 3, 3),
        "ncon_total": ncon_total,
        "ncon_pair": ncon_pair,
        "flags": int(m.opt.disableflags),
    }


def signed_distances(r: dict) -> np.ndarray:
    """(nstate, npair) float64 signed distances with our narrow phase."""
    from jaxcontrol.collision.ellipsoid_box import collide

    m, pairs = r["model"], r["pairs"]
    e, b = pairs[:, 0], pairs[:, 1]
    args = (
        r["xpos"][:, e],
        r["xmat"][:, e],
        np.broadcast_to(m.geom_size[e], r["xpos"][:, e].shape),
        r["xpos"][:, b],
        r["xmat"][:, b],
        np.broadcast_to(m.geom_size[b], r["xpos"][:, b].shape),
    )
    with jax.enable_x64(True):
        f = jax.jit(jax.vmap(jax.vmap(collide)))
        dist, _, _ = f(*args)
        return np.asarray(dist)


def c_overlaps(r: dict) -> int:
    """States in which C, with contacts enabled, reports an ellipsoid-box contact."""
    m = copy.copy(r["model"])
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    d = mujoco.MjData(m)
    count = 0
    for q in r["qpos"]:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        count += any(
            {int(m.geom_type[c.geom1]), int(m.geom_type[c.geom2])} == {ELLIPSOID, BOX}
            for c in d.contact[: d.ncon]
        )
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--steps", type=int, default=1000, help="control steps per episode")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"{args.episodes} episodes x {args.steps} control steps, uniform random actions; "
        "states sampled at control steps"
    )
    for domain, task in TASKS:
        t0 = time.time()
        r = rollout(domain, task, args.episodes, args.steps, args.seed)
        dist = signed_distances(r)
        n = len(r["qpos"])
        overlap_states = int((dist < 0).any(axis=1).sum())
        names = [
            mujoco.mj_id2name(r["model"], mujoco.mjtObj.mjOBJ_GEOM, g) for g in r["pairs"].ravel()
        ]
        flag_names = [
            name
            for name in dir(mujoco.mjtDisableBit)
            if name.startswith("mjDSBL_") and r["flags"] & int(getattr(mujoco.mjtDisableBit, name))
        ]
        print(
            f"{domain}-{task}: {n} states; disableflags {'|'.join(flag_names)}; "
            f"ellipsoid-box pairs {list(zip(names[::2], names[1::2]))}\n"
            f"  (a) C contacts: d.ncon total {r['ncon_total']}, ellipsoid-box {r['ncon_pair']}\n"
            f"  (b) overlapping (signed distance < 0): {overlap_states} states "
            f"({100 * overlap_states / n:.3f}%), min signed distance {dist.min():.4f} m, "
            f"median {np.median(dist):.4f} m; C with contacts enabled: "
            f"{c_overlaps(r)} states  [{time.time() - t0:.0f} s]"
        )


if __name__ == "__main__":
    main()
