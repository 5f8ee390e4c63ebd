"""Each task's declared episode class, keyed on (domain, task), with its measurement.

"exact": a float64 episode follows dm_control's to round-off. "distributional": raw
MJX itself drifts from C MuJoCo over an episode (chaos, solver tolerance), so only
distributions can be compared. Each class is set from measurements of raw MJX (the
smooth 1000-step episode of `jaxcontrol check DOMAIN TASK --episode --amplitude 0.3`,
float64, seed 0, unless said otherwise); the full tier's `episode` piece measures the
class again and holds it to this declaration (PARITY.md).
"""

from __future__ import annotations

EXACT, DISTRIBUTIONAL = "exact", "distributional"

# Stock mjx.step's qpos drifts 1.8e-04 from C MuJoCo's over the episode (2.0e-05
# after 100 steps). The ball rests on the cup's bottom capsule there, and MJX's
# sphere-capsule contact differs from C's: `math.closest_segment_point` divides by
# `|ab|^2 + 1e-6` (a 4e-4 relative bias on the 0.05-long bottom segment), which
# moves the contact point by ~9e-6 and tilts its normal by ~3.5e-4, so qacc differs
# by ~4e-4.
_BALL_IN_CUP = {("ball_in_cup", "catch"): DISTRIBUTIONAL}

# The single pole's swing-up is chaotic under the episode's fixed actions. Over 1000
# float64 steps stock mjx.step drifts 9.2e-7 from C MuJoCo in qpos (4.4e-16 after 100
# steps), so the distributions are the gate (ours still follows dm_control's return
# to 3.9e-7). Balancing stays exact (raw MJX 2.7e-12), and so do two and three poles,
# which those actions never swing up (raw MJX 1.4e-14 and 8.8e-15).
_CARTPOLE = {
    ("cartpole", "balance"): EXACT,
    ("cartpole", "balance_sparse"): EXACT,
    ("cartpole", "swingup"): DISTRIBUTIONAL,
    ("cartpole", "swingup_sparse"): DISTRIBUTIONAL,
    ("cartpole", "two_poles"): EXACT,
    ("cartpole", "three_poles"): EXACT,
}

# Stock mjx.step's qpos drifts 8.2e-16 from C MuJoCo over the episode (contacts
# active on every step), and ours follows dm_control's return to 5.6e-15 relative.
_CHEETAH = {("cheetah", "run"): EXACT}

# The episode is unmeasured (`jaxcontrol check dog stand --episode` not run), but one
# float64 control step from dm_control's states (12, fetch and run) already puts stock
# mjx.step 5.4e-2 from C MuJoCo in qpos and 4.5 in qvel, and us exactly as far: MJX
# has no noslip solver (dog sets `noslip_iterations` 4; dropping it moves C itself by
# 4.9e-3 and 0.61 on those states), and the dog's many foot, leg and tail contacts
# make the dynamics chaotic. Only distributions compare.
_DOG = {("dog", t): DISTRIBUTIONAL for t in ("stand", "walk", "trot", "run", "fetch")}

# Stock mjx.step's qpos drifts from C MuJoCo's by 2.6e-04 (spin) and 3.3e-05
# (turn_easy, turn_hard) over the episode (2.2e-16 and 4.4e-16 after 100 steps). The
# cause is MJX's capsule-capsule contact: its `math.closest_segment_point` divides by
# `|ab|^2 + 1e-6`, a 1e-3 relative bias on the fingertip's short (0.031) segment, so
# the fingertip-spinner contact point moves by ~4e-6 and its normal by ~1e-4 from C's
# (which matches the exact closest points); one step's qvel then differs by up to
# 6e-4 (ours equals stock MJX there).
_FINGER = {("finger", t): DISTRIBUTIONAL for t in ("spin", "turn_easy", "turn_hard")}

# Stock mjx.step drifts 7.2e-15 in qpos from C MuJoCo over the episode; no
# constraints at all.
_FISH = {("fish", "upright"): EXACT, ("fish", "swim"): EXACT}

# Stock mjx.step's qpos drifts 0.56 from C MuJoCo over the episode (6.6e-7 after 100
# steps: the contact solvers agree to their tolerance, which the hopping amplifies).
_HOPPER = {("hopper", "stand"): DISTRIBUTIONAL, ("hopper", "hop"): DISTRIBUTIONAL}

# (walk) Stock mjx.step itself drifts from C MuJoCo's qpos by 1.7e+0 over the episode
# (1.3e+0 after 100 steps; constraints active on 998 steps). One step from
# dm_control's states already differs by 1.9e-6 in qpos and 1.4e-4 in qvel, for stock
# MJX and for us alike (its solver), and the contact dynamics are chaotic, so only
# distributions can be compared.
_HUMANOID = {("humanoid", t): DISTRIBUTIONAL for t in ("stand", "walk", "run", "run_pure_state")}

# (stand, raw rollout only) Stock mjx.step drifts from C MuJoCo's qpos by 1.3e-2 after
# 100 steps and 4.5e-1 after the episode (constraints active on every step). One step
# from dm_control's states already differs by 1.1e-5 in qpos and 1.1e-3 in qvel (run,
# 12 states), for stock MJX and for us alike (its solver), so only distributions can be
# compared.
_HUMANOID_CMU = {("humanoid_CMU", t): DISTRIBUTIONAL for t in ("stand", "walk", "run")}

# (lqr_2_1) No constraints, no contacts; stock mjx.step stays within 1e-15 of C
# MuJoCo over the episode.
_LQR = {("lqr", "lqr_2_1"): EXACT, ("lqr", "lqr_6_2"): EXACT}

# (bring_ball) Stock mjx.step's qpos drifts 8.4e-4 from C MuJoCo (2.8e-10 after 100
# steps). Constraints are active on every step (the hand's tendon equality, joint
# limits, contacts), and the solvers' differences grow over the episode.
_MANIPULATOR = {
    ("manipulator", t): DISTRIBUTIONAL
    for t in ("bring_ball", "bring_peg", "insert_ball", "insert_peg")
}

_PENDULUM = {("pendulum", "swingup"): EXACT}

_POINT_MASS = {("point_mass", "easy"): EXACT, ("point_mass", "hard"): EXACT}

# walk and run: stock MJX stays within 9.2e-15 of C MuJoCo over a whole float64
# episode on the flat floor, with the toes in contact at every step (PARITY.md).
# escape (terrain) and fetch (the ball) are distributional.
_QUADRUPED = {
    ("quadruped", "walk"): EXACT,
    ("quadruped", "run"): EXACT,
    ("quadruped", "escape"): DISTRIBUTIONAL,
    ("quadruped", "fetch"): DISTRIBUTIONAL,
}

# (easy) Stock mjx.step stays within 7.8e-16 of C MuJoCo's qpos over the episode
# (contacts are disabled: smooth, non-chaotic dynamics).
_REACHER = {("reacher", "easy"): EXACT, ("reacher", "hard"): EXACT}

_STACKER = {("stacker", "stack_2"): DISTRIBUTIONAL, ("stacker", "stack_4"): DISTRIBUTIONAL}

# (full tier) Stock mjx.step drifts 5.0e-8 from C MuJoCo in swimmer6 (joint limits
# bind in 203 of the steps; 7.7e-9 after 100), past the 1e-9 of "exact"; ours still
# follows dm_control's return to 2e-10. swimmer15's longer chain drifts further
# (1.1e-3 over 1000 random-action steps in the solver-cap study).
_SWIMMER = {("swimmer", "swimmer6"): DISTRIBUTIONAL, ("swimmer", "swimmer15"): DISTRIBUTIONAL}

# Stock mjx.step's qpos drifts 2.5 from C MuJoCo over the episode (1.5e-12 after 100
# steps, then chaotic contact dynamics amplify the solvers' differences).
_WALKER = {("walker", t): DISTRIBUTIONAL for t in ("stand", "walk", "run")}

_ACROBOT = {("acrobot", "swingup"): EXACT, ("acrobot", "swingup_sparse"): EXACT}

EPISODE_CLASSES: dict[tuple[str, str], str] = {
    **_ACROBOT,
    **_BALL_IN_CUP,
    **_CARTPOLE,
    **_CHEETAH,
    **_DOG,
    **_FINGER,
    **_FISH,
    **_HOPPER,
    **_HUMANOID,
    **_HUMANOID_CMU,
    **_LQR,
    **_MANIPULATOR,
    **_PENDULUM,
    **_POINT_MASS,
    **_QUADRUPED,
    **_REACHER,
    **_STACKER,
    **_SWIMMER,
    **_WALKER,
}


def episode_class(domain: str, task: str) -> str:
    """The declared episode class of a registered task ("exact" or "distributional")."""
    try:
        return EPISODE_CLASSES[(domain, task)]
    except KeyError:
        raise ValueError(f"no declared episode class for {domain}-{task}") from None
