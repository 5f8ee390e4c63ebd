"""The core install holds the environments; the learners need the agents extra and say so.

Each check runs in a fresh interpreter in which the extras' modules cannot be
imported (``sys.modules[name] = None``), as after ``pip install jaxcontrol``.
"""

import json
import os
import subprocess
import sys
import textwrap

import nbformat
import pytest

pytestmark = pytest.mark.xdist_group("agents_packaging")

ROOT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)
EXTRAS = ("optax", "orbax", "tqdm", "matplotlib", "gymnasium", "brax", "imageio_ffmpeg")


def _without_extras(code: str) -> subprocess.CompletedProcess:
    prelude = f"import sys\nfor name in {EXTRAS!r}:\n    sys.modules[name] = None\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        timeout=300,
        check=False,
    )


def test_core_install_loads_and_steps_and_train_names_the_extra(tmp_path):
    result = _without_extras(
        f"""
        import json
        import jax
        import jaxcontrol
        from jaxcontrol.__main__ import main
        from jaxcontrol.wrappers import ActionRepeat, DmEnv

        env = ActionRepeat(jaxcontrol.load("pendulum", "swingup"), 2)
        state = env.step(env.reset(jax.random.key(0)), jax.numpy.zeros(1))
        DmEnv(jaxcontrol.load("pendulum", "swingup")).reset()
        status = main(["train", "--env", "cartpole-balance", "--agent", "ppo", "--steps", "10",
                       "--out", {str(tmp_path / "run")!r}])
        try:
            import jaxcontrol.agents.ppo
        except ImportError as error:
            imported = str(error)
        print(json.dumps({{"status": status, "import": imported, "step": int(state.step)}}))
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["step"] == 2 and out["status"] == 2
    err = result.stderr.strip().splitlines()
    assert err[-1].startswith("error: jaxcontrol train needs the agents extra (missing: optax, ")
    assert err[-1].endswith("pip install 'jaxcontrol[agents]'"), err
    assert "pip install 'jaxcontrol[agents]'" in out["import"]
    assert not (tmp_path / "run").exists()


def test_notebook_is_committed_without_outputs():
    notebook = nbformat.read(os.path.join(ROOT, "notebooks", "quickstart.ipynb"), as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
