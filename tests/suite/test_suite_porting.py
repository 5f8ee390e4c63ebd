"""The worked example of docs/porting.md runs unchanged on dm_control and on jaxcontrol."""

import contextlib
import io
import pathlib
import re

import pytest

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "porting.md"


def _example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    return next(block for block in blocks if "def train(" in block)


@pytest.mark.parametrize("source", ["jaxcontrol", "dm_control"])
def test_the_porting_example_trains_on_both_suites(source):
    code = _example()
    assert "from jaxcontrol import suite" in code
    code = code.replace("from jaxcontrol import suite", f"from {source} import suite")
    code = code.replace("weights, best = train(env)", "weights, best = train(env, iterations=2)")
    scope = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(code, str(PAGE), "exec"), scope)  # noqa: S102
    assert printed.getvalue().count("best return") == 2
    assert scope["weights"].shape == (1, 5)
    assert 0 < scope["best"] <= 200
