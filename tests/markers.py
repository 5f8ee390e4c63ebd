"""Skip markers shared by the test files.

``needs_gl`` skips a test where no OpenGL backend works in this process (the
reason says what to install), so rendering tests are skipped, never failed.
"""

import pytest

from jaxcontrol.render import gl

needs_gl = pytest.mark.skipif(
    gl.unavailable_reason() is not None, reason=f"no OpenGL: {gl.unavailable_reason()}"
)
