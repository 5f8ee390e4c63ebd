"""Suite domains. Each module registers its tasks; domains are listed explicitly."""

from jaxcontrol.tasks import (  # noqa: F401
    acrobot,
    ball_in_cup,
    cartpole,
    cheetah,
    dog,
    finger,
    fish,
    hopper,
    humanoid,
    humanoid_cmu,
    lqr,
    manipulator,
    pendulum,
    point_mass,
    quadruped,
    reacher,
    stacker,
    swimmer,
    walker,
)
