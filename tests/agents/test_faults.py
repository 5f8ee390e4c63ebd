"""Damaged, foreign and cut-short checkpoints and a full disk, through ``train_loop``.

In-process on the toy env: a resume uses the newest checkpoint whose every file
matches its manifest, or stops naming the damaged path; a failed write stops
the run with the previous checkpoint intact. The command line's side is in
test_cli_faults.py.
"""

import dataclasses
import errno
import glob
import os
import shutil

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest
from agent_configs import TINY

from jaxcontrol.agents.common import checkpoint as ckpt_lib
from jaxcontrol.agents.common import faults
from jaxcontrol.agents.common import run as run_lib
from jaxcontrol.agents.common.run import WALL_FIELDS
from jaxcontrol.agents.ppo import make_learner
from jaxcontrol.agents.sac import make_learner as make_sac_learner

pytestmark = pytest.mark.xdist_group("agents_faults")  # shares toy_xla_cache

CONFIG = dataclasses.replace(
    TINY["ppo"], total_env_steps=4 * 16 * 16 * 2, updates_per_chunk=2, hidden_sizes=(8, 8)
)  # 4 chunks; checkpoints 2 and 4
RUN = {"env": "toy", "agent": "ppo", "seed": 3, "config": {"name": "tiny"}}
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture(scope="module")
def learner(toy_env):
    return make_learner(CONFIG, toy_env)


def _train(learner, run_dir, resume=False, run=RUN):
    os.makedirs(run_dir, exist_ok=True)
    return run_lib.train_loop(
        learner,
        run_dir,
        seed=3,
        checkpoint_every_chunks=2,
        resume=resume,
        progress=False,
        run_info=run,
    )


def _metrics(run_dir):
    return [
        {k: v for k, v in line.items() if k not in WALL_FIELDS}
        for line in run_lib.read_metrics(run_dir)
    ]


@pytest.fixture(scope="module")
def template(learner, tmp_path_factory, toy_xla_cache):
    """A finished run (checkpoints 2 and 4), its final state and its state's structure."""
    del toy_xla_cache
    out = str(tmp_path_factory.mktemp("faults") / "template")
    final, _ = _train(learner, out)
    return out, jax.device_get(final), ckpt_lib.structure(final)


def _copy(template, tmp_path):
    out = str(tmp_path / "run")
    shutil.copytree(template[0], out)
    return out


def _same_as_template(run_dir, final, template):
    assert _metrics(run_dir) == _metrics(template[0])
    jax.tree.map(np.testing.assert_array_equal, template[1], jax.device_get(final))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def _damage(path, how, rng):
    data = bytearray(_read(path))
    if how == "truncated":
        data = data[: len(data) // 2]
    elif how == "random bytes" and data:
        for offset in rng.integers(0, len(data), size=3):
            data[offset] ^= int(rng.integers(1, 256))
    else:
        data += bytes(rng.integers(0, 256, size=8, dtype=np.uint8))
    _write(path, data)


@pytest.mark.parametrize("how", ["truncated", "random bytes", "missing"])
def test_every_file_of_the_latest_checkpoint_is_verified(template, tmp_path, how):
    directory = os.path.join(_copy(template, tmp_path), "checkpoints")
    latest = os.path.join(directory, "4")
    files = sorted(p for p in glob.glob(f"{latest}/**", recursive=True) if os.path.isfile(p))
    assert os.path.join(latest, ckpt_lib.MANIFEST) in files and len(files) > 20
    rng = np.random.default_rng(0)
    for path in files:
        original = _read(path)
        if how == "missing":
            os.unlink(path)
        else:
            _damage(path, how, rng)
        step, _, rejected = ckpt_lib.newest_intact(directory, RUN, template[2])
        assert step == 2 and [e.step for e in rejected] == [4], path
        assert path in str(rejected[0]) or os.path.basename(path) == ckpt_lib.MANIFEST
        _write(path, original)
    _write(os.path.join(latest, "state", "extra"), b"{}")
    _, _, rejected = ckpt_lib.newest_intact(directory, RUN, template[2])
    assert "state/extra: not in the manifest" in str(rejected[0])


def test_resume_falls_back_to_the_newest_intact_checkpoint(template, learner, tmp_path, capsys):
    out = _copy(template, tmp_path)
    latest = os.path.join(out, "checkpoints", "4")
    files = glob.glob(f"{latest}/**", recursive=True)
    biggest = max((p for p in files if os.path.isfile(p)), key=os.path.getsize)
    _damage(biggest, "truncated", None)
    final, meta = _train(learner, out, resume=True)
    err = capsys.readouterr().err
    assert f"{biggest}: " in err and "(truncated?)" in err and "resume: from checkpoint 2" in err
    assert os.path.isdir(os.path.join(out, "checkpoints-rejected", "4"))
    assert meta["chunks"] == 4
    _same_as_template(out, final, template)


def test_a_checkpoint_cut_short_is_set_aside(template, learner, tmp_path, capsys):
    out = _copy(template, tmp_path)
    os.unlink(os.path.join(out, "checkpoints", "4", ckpt_lib.MANIFEST))
    final, _ = _train(learner, out, resume=True)
    assert "checkpoints/4: incomplete" in capsys.readouterr().err
    _same_as_template(out, final, template)


def test_another_runs_checkpoint_is_refused(template, learner, toy_env, tmp_path):
    out = _copy(template, tmp_path)
    metrics = _read(os.path.join(out, "metrics.jsonl"))
    other = {**RUN, "config": {"name": "other"}}
    with pytest.raises(ckpt_lib.CheckpointError) as error:
        _train(learner, out, resume=True, run=other)
    assert os.path.join(out, "checkpoints", "4") in str(error.value)
    assert "from another run (name 'tiny' != 'other')" in str(error.value)
    assert _read(os.path.join(out, "metrics.jsonl")) == metrics
    assert ckpt_lib.steps_on_disk(os.path.join(out, "checkpoints")) == [4, 2]
    # Another agent's train state, under the same run identity.
    sac = make_sac_learner(TINY["sac"], toy_env)
    struct = ckpt_lib.structure(jax.eval_shape(sac.init, jax.random.PRNGKey(0)))
    step, _, rejected = ckpt_lib.newest_intact(os.path.join(out, "checkpoints"), RUN, struct)
    assert step is None and {e.kind for e in rejected} == {"foreign"}
    assert "holds a different train state" in str(rejected[0])


def test_no_intact_checkpoint_stops_naming_each(template, learner, tmp_path):
    out = _copy(template, tmp_path)
    for step in ("2", "4"):
        _damage(
            os.path.join(out, "checkpoints", step, "meta", "metadata"),
            "random bytes",
            np.random.default_rng(1),
        )
    with pytest.raises(ckpt_lib.CheckpointError) as error:
        _train(learner, out, resume=True)
    for step in ("2", "4"):
        assert os.path.join(out, "checkpoints", step, "meta", "metadata") in str(error.value)
    assert ckpt_lib.steps_on_disk(os.path.join(out, "checkpoints")) == [4, 2]


def test_damaged_metrics_stop_the_resume(template, learner, tmp_path):
    out = _copy(template, tmp_path)
    _damage(os.path.join(out, "metrics.jsonl"), "random bytes", np.random.default_rng(2))
    with pytest.raises(ckpt_lib.CheckpointError, match="metrics.jsonl: its first"):
        _train(learner, out, resume=True)


def _fail_checkpoint_4(monkeypatch, error):
    real = ocp.CheckpointManager.save

    def save(self, step, *args, **kwargs):
        if step == 4:  # a partial write, then the failure
            partial = os.path.join(str(self.directory), "4.orbax-checkpoint-tmp-1", "state")
            os.makedirs(partial)
            _write(os.path.join(partial, "d"), b"\0" * 64)
            raise error
        return real(self, step, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "save", save)


def _fail_manifest_4(monkeypatch):
    real = ckpt_lib.write_manifest

    def write_manifest(step_dir, step, *args):
        if step == 4:
            raise ENOSPC
        return real(step_dir, step, *args)

    monkeypatch.setattr(ckpt_lib, "write_manifest", write_manifest)


def _fail_metrics_line_3(monkeypatch):
    class Full:
        def __init__(self, f):
            self.f, self.lines = f, 0

        def write(self, data):
            self.lines += 1
            if self.lines == 3:
                self.f.write(data[:10])  # part of the line reaches the disk
                self.f.flush()
                raise ENOSPC
            return self.f.write(data)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def fake_open(path, *args, **kwargs):
        f = open(path, *args, **kwargs)  # noqa: SIM115 (closed by the caller)
        return Full(f) if str(path).endswith("metrics.jsonl") else f

    monkeypatch.setattr(run_lib, "open", fake_open, raising=False)


@pytest.mark.parametrize("where", ["checkpoint", "wrapped", "manifest", "metrics"])
def test_a_full_disk_stops_the_run_and_keeps_the_last_checkpoint(
    where, template, learner, tmp_path, monkeypatch
):
    out = str(tmp_path / "run")
    with monkeypatch.context() as patch:
        if where == "checkpoint":
            _fail_checkpoint_4(patch, ENOSPC)
        elif where == "wrapped":  # tensorstore reports the OS error in its text
            _fail_checkpoint_4(
                patch, ValueError(f"Error writing 'd': [OS error: {ENOSPC.strerror}]")
            )
        elif where == "manifest":
            _fail_manifest_4(patch)
        else:
            _fail_metrics_line_3(patch)
        with pytest.raises(run_lib.RunError) as error:
            _train(learner, out)
    message = str(error.value)
    assert "No space left on device" in message and "checkpoint 2 is intact" in message
    assert ("metrics.jsonl" if where == "metrics" else "checkpoint 4") in message
    directory = os.path.join(out, "checkpoints")
    assert sorted(os.listdir(directory)) == ["2"]
    ckpt_lib.verify(os.path.join(directory, "2"), 2, RUN, template[2])
    final, _ = _train(learner, out, resume=True)
    _same_as_template(out, final, template)


def test_the_fault_hook_names_its_points(monkeypatch):
    monkeypatch.setenv("JAXCONTROL_FAULT", "mid-write:1:KILL")
    with pytest.raises(ValueError, match="chunk-start, chunk-end, checkpoint-commit"):
        faults.point("chunk-end")
