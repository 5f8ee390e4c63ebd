"""Our models against dm_control's XML models, field by field.

The comparison itself is `jaxcontrol.mjcf.model_diff` (generic over two compiled
models); this module keeps its names where the model proofs import them.
"""

from jaxcontrol.mjcf.model_diff import (
    IGNORED_FIELDS,
    NAMED_OBJECTS,
    REQUIRED_FIELDS,
    STRUCTS,
    TEXTURE_FIELDS,
    compare_models,
    compared_fields,
)

__all__ = [
    "IGNORED_FIELDS",
    "NAMED_OBJECTS",
    "REQUIRED_FIELDS",
    "STRUCTS",
    "TEXTURE_FIELDS",
    "compare_models",
    "compared_fields",
]
