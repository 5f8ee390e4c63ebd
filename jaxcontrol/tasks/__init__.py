"""Suite domains. Each module registers its tasks; domains are listed explicitly."""

from jaxcontrol.tasks import acrobot, cartpole, pendulum, point_mass  # noqa: F401
