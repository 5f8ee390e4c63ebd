"""Values as users type them, on a command line or in a config override."""

from __future__ import annotations

import math


def parse_whole_number(text: str) -> int | None:
    """``text`` as an int ('1000', '1e6', '2.0'), or None if it is not a whole number."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value.is_integer() else None
