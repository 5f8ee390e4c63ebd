"""A single-pair narrow phase run over all of MJX's pairs of its geom types."""

from __future__ import annotations

import jax


def over_pairs(collide, m, d, geom, margin: bool = True):
    """MJX's collision-function result for `geom` [npair, 2]: `collide(pos1, mat1, size1,
    pos2, mat2, size2[, margin])` vmapped over the pairs (margin: `geom_margin` summed
    over the pair, as MJX's own contact margin), its contacts flattened pair by pair."""
    g1, g2 = geom.T
    args = [d.geom_xpos[g1], d.geom_xmat[g1], m.geom_size[g1]]
    args += [d.geom_xpos[g2], d.geom_xmat[g2], m.geom_size[g2]]
    if margin:
        args.append(m.geom_margin[g1] + m.geom_margin[g2])
    dist, pos, frame = jax.vmap(collide)(*args)
    return dist.reshape(-1), pos.reshape(-1, 3), frame.reshape(-1, 3, 3)
