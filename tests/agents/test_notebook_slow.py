"""notebooks/quickstart.ipynb runs headless from top to bottom (slow tier: ``pytest -m slow``)."""

import os
import re

import pytest

pytestmark = pytest.mark.slow

nbformat = pytest.importorskip("nbformat", reason="needs nbformat (the test extra)")
nbclient = pytest.importorskip("nbclient", reason="needs nbclient and ipykernel (the test extra)")

NOTEBOOK = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "notebooks")


def test_quickstart_notebook_runs(tmp_path):
    notebook = nbformat.read(os.path.join(NOTEBOOK, "quickstart.ipynb"), as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=1800,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},  # the video is written there
    )
    client.execute()
    text = "\n".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    print(text)
    assert "env steps/s" in text and "largest observation difference" in text
    score = float(re.search(r"evaluation: ([0-9.]+)", text).group(1))
    assert score >= 500.0, text
    assert "frames" in text or "no video here" in text
