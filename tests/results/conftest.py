"""Fixtures of the results tests: a fake sweep, and its collected records."""

from __future__ import annotations

import pytest
from fake_sweep import make_sweep

from jaxcontrol.results import collect, records


@pytest.fixture
def sweep(tmp_path):
    return make_sweep(tmp_path)


@pytest.fixture
def records_dir(sweep, tmp_path):
    collect.collect_sweep(sweep, tmp_path / "results")
    return tmp_path / "results"


@pytest.fixture
def runs(records_dir):
    return records.load(records_dir)
