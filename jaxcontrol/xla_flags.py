"""The former home of jaxcontrol's CPU XLA flag, kept for the code that imports it.

The flag, why it is set and how to keep it off are in `jaxcontrol.import_setup`
(`set_xla_cpu_flags`, run by `import jaxcontrol`); these names point there.
"""

from jaxcontrol.import_setup import (
    FIRST_JAXLIB_WITHOUT_FLAG,
    FUSION_EMITTERS_FLAG,
    xla_knows_flag,
)
from jaxcontrol.import_setup import jax_backends_started as _backends_started  # noqa: F401
from jaxcontrol.import_setup import set_xla_cpu_flags as apply

__all__ = ["FIRST_JAXLIB_WITHOUT_FLAG", "FUSION_EMITTERS_FLAG", "apply", "xla_knows_flag"]
