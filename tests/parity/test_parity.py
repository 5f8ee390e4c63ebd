"""Parity with dm_control itself, on dm_control's own states.

Every number compared here comes from dm_control at test time: its resets,
its rollouts, its observations and rewards. States are injected with
`reference.inject` (what `mirror` does). Float64 runs in this process
(`jax.enable_x64`). The one-step target is 1e-9 in float64 and 1e-4 of scale in
float32, or 10x stock `mjx.step`'s own error against C MuJoCo on the same
states, whichever is larger.

Default tier: one float64 step from a few states, and the FIRST observation of
dm_control's resets, on C MuJoCo behind our Env (our model, injection and task
code; C's float64 steps are dm_control's). MJX meets dm_control in the default
tier in float32: test_battery.py steps each domain's MJX physics from
dm_control's states with its rollout's compiled step (no program of its own; the
float64 MJX step cost about 500 worker-seconds of CI). Full tier (`-m full`):
the figures of PARITY.md, on MJX (one step in float32 and float64 from more
states, whole episodes, reset and return distributions).
"""

import json
import pathlib

import jax
import numpy as np
import pytest
from pertask import task_cache
from scipy import stats

import jaxcontrol
from jaxcontrol import parity, reference

N_STATES = 12


@task_cache
def _one_step_float64(task, backend):
    with reference.precision(True):
        env = jaxcontrol.load(*task, backend=backend)
        transitions = reference.reference_transitions(env, n=N_STATES, seed=0)
        assert any(t.start.step == 0 for t in transitions)
        ours, cpu, _ = parity.step.step_parity(env, transitions, raw=False)
        raw = {}
        if max(ours.values()) > parity.tolerance.ONE_STEP_TARGET["float64"]:
            # Only where ours misses the target: is the difference MJX's own?
            raw = parity.step.raw_step_parity(env, transitions, ours=ours)
    return ours, cpu, raw


def _assert_within(differences, raw, who):
    misses = parity.tolerance.one_step_misses("float64", differences, raw)
    assert not misses, f"{who} differs from dm_control (difference, tolerance): {misses}"


def _expected_keys(task, backend):
    env = jaxcontrol.load(*task, backend=backend)
    keys = list(env.observation_spec())
    return (
        {f"obs/{k}" for k in keys} | {f"reset_obs/{k}" for k in keys} | {"reward", "qpos", "qvel"}
    )


@pytest.mark.float64
def test_one_step_float64(task, request):
    """Ours on C MuJoCo behind our Env (`--backend` chooses; "auto" is C): our model,
    state injection and task code in float64. MJX's float64 one step is the full
    tier's (PARITY.md); the default tier holds each domain's MJX physics to
    dm_control in float32 (test_battery.py's one step)."""
    chosen = request.config.getoption("--backend")
    backend = "mujoco" if chosen == "auto" else chosen
    ours, cpu, raw = _one_step_float64(task, backend)
    assert set(ours) == _expected_keys(task, backend)
    _assert_within(ours, raw, "MJX")
    _assert_within(cpu, {}, "CPU path")  # C MuJoCo on our model: 1e-9, whatever MJX does


def test_raw_mjx_observes_reset_states_only_where_ours_misses_them():
    """Raw MJX's observation of dm_control's reset states (stock `mjx.forward`, actuation
    off), measured where ours misses the target there: it equals dm_control's."""
    env = jaxcontrol.load("pendulum", "swingup")
    transitions = reference.reference_transitions(env, 9, steps_between=4)
    keys = {f"reset_obs/{k}" for k in env.observation_spec()}
    plain = parity.step.raw_step_parity(env, transitions, relative=True)
    assert not keys & set(plain)
    ours = {"reset_obs/velocity": 1.0, "qpos": 0.0}
    raw = parity.step.raw_step_parity(env, transitions, relative=True, ours=ours)
    assert keys <= set(raw) and max(raw[k] for k in keys) < 1e-6, raw
    assert {k: raw[k] for k in plain} == plain


def test_raw_mjx_own_error_sets_an_observation_tolerance():
    """Only an observation that raw MJX measured gets 10x raw's error in it."""
    raw = {"qpos": 1e-12, "qvel": 2e-10, "obs/force": 0.3}
    assert parity.tolerance.one_step_tolerance("float64", raw) == 2e-9
    assert parity.tolerance.one_step_tolerance("float64", raw, "obs/force") == 3.0
    assert parity.tolerance.one_step_tolerance("float64", raw, "obs/speed") == 2e-9
    assert parity.tolerance.one_step_tolerance("float64", {}, "obs/force") == 1e-9
    differences = {"obs/force": 2.9, "obs/speed": 3e-9, "qpos": float("nan")}
    misses = parity.tolerance.one_step_misses("float64", differences, raw)
    assert set(misses) == {"obs/speed", "qpos"} and misses["obs/speed"] == (3e-9, 2e-9)
    piece = {"dtype": "float64", "raw": raw}
    piece |= {"ours": {"obs/force": 2.9, "qvel": 1e-9}, "cpu": {"obs/force": 1e-12}}
    assert parity.one_step_misses(piece) == []
    piece["raw"] = {"qpos": 1e-12, "qvel": 2e-10}  # a record from before raw observations
    assert parity.one_step_misses(piece) == [("ours", "obs/force", 2.9, 2e-9)]


def test_ks_compares_at_our_precision():
    """A discrete draw (stacker's target height) rounded to float32 is still dm_control's
    distribution; a real shift is still seen, and so is a constant that differs."""
    rng = np.random.default_rng(0)
    ref = rng.choice([0.022, 0.066], size=(600, 1))
    ours = rng.choice([0.022, 0.066], size=(1024, 1)).astype(np.float32)
    assert stats.ks_2samp(ours[:, 0], ref[:, 0]).pvalue < 1e-50  # unrounded: "different"
    (p,), mismatched = parity.ks_columns(ours, ref)
    assert p > 0.001 and mismatched == []
    shifted = rng.choice([0.022, 0.066], size=(1024, 1), p=[0.7, 0.3]).astype(np.float32)
    assert parity.ks_columns(shifted, ref)[0][0] < 1e-6
    constants = np.full((600, 1), 0.5), np.full((1024, 1), 0.25, np.float32)
    assert parity.ks_columns(constants[1], constants[0]) == ([], [0])


def test_returns_keep_both_samples_and_a_rank_test_beside_z():
    """A heavy tail (bring_peg's in-hand starts) moves z more than the ranks; a real
    shift moves both; equal constant returns (an untouched sparse reward) give z 0, p 1."""
    rng = np.random.default_rng(0)
    ref = rng.exponential(1.0, 64)
    tail = rng.exponential(1.0, 64)
    tail[:6] += 100.0  # a few episodes far out: the mean moves, most ranks do not
    heavy = parity.compare_returns(tail, ref)
    assert abs(heavy["z"]) > 2.0 and heavy["rank_p"] > 0.01
    shifted = parity.compare_returns(ref + 3.0, ref)
    assert shifted["z"] > 4.0 and shifted["rank_p"] < 1e-6
    zeros = parity.compare_returns(np.zeros(64, np.float32), np.zeros(64))
    assert zeros["z"] == 0.0 and zeros["rank_p"] == 1.0
    assert heavy["ours_returns"] == tail.tolist() and heavy["dm_control_returns"] == ref.tolist()
    json.dumps(heavy)  # plain floats: the record is JSON


def test_the_rank_test_reads_dm_control_returns_at_our_precision():
    """An episode whose every reward is far below float32's smallest normal returns
    exactly 0 on our side (XLA flushes subnormals) and, say, 1e-118 on dm_control's:
    at our precision those are ties, not a difference of distributions."""
    rng = np.random.default_rng(1)
    ref = np.concatenate([10.0 ** -rng.uniform(40, 200, 40), rng.exponential(1.0, 24)])
    ours = np.concatenate([np.zeros(40), rng.exponential(1.0, 24)]).astype(np.float32)
    assert parity.rank_p(ours, ref) > 0.05
    from scipy import stats

    assert stats.mannwhitneyu(ours, ref).pvalue < 1e-3  # what float64 ranks would say
    # Above float32's smallest normal, dm_control's values keep their ranks.
    assert parity.rank_p(np.full(64, 1e-30), np.full(64, 1e-20)) < 1e-6


def test_a_wide_model_field_is_held_to_the_ks_threshold_family_wise():
    """A state coordinate: p > 0.001 each; escape's terrain: its smallest p x columns."""
    piece = {"samples": [1024, 600], "names_match": True, "constant_mismatch": []}
    piece |= {"min_pvalue": {"qpos": 0.02, "hfield_data": 8.7e-5}}
    piece |= {"columns": {"qpos": 23, "hfield_data": 40401}, "family_wise": ["hfield_data"]}
    assert parity.reset_pvalues(piece) == {"qpos": 0.02, "hfield_data": 1.0}
    assert parity.missed_targets({"resets": piece}, ["resets"]) == []
    piece["min_pvalue"] = {"qpos": 5e-4, "hfield_data": 1e-9}
    low = parity.reset_pvalues(piece)
    assert low == {"qpos": 5e-4, "hfield_data": pytest.approx(40401e-9)}
    assert parity.missed_targets({"resets": piece}, ["resets"]) == [f"reset KS p <= 0.001: {low}"]
    del piece["family_wise"]  # a record from before the rule: every column on its own
    assert parity.reset_pvalues(piece)["hfield_data"] == 1e-9
    assert parity.reset_pvalues({"min_pvalue": {"qpos": 0.5}}) == {"qpos": 0.5}  # older still


def test_a_model_field_constant_on_both_sides_passes_the_family_wise_test():
    """finger-spin writes the same damping and target colour every episode: no column
    varies, no KS test runs, and p stays 1 (not 1 x 0 columns)."""
    piece = {"samples": [1024, 600], "names_match": True, "constant_mismatch": []}
    piece |= {
        "min_pvalue": {"qpos": 0.5, "dof_damping": 1.0},
        "columns": {"qpos": 3, "dof_damping": 0},
    }
    piece["family_wise"] = ["dof_damping"]
    assert parity.reset_pvalues(piece) == {"qpos": 0.5, "dof_damping": 1.0}
    assert parity.missed_targets({"resets": piece}, ["resets"]) == []


def _fake_resets(monkeypatch, shift_first: float, shift_all: float):
    """`parity.resets` on synthetic samples: our qpos uniform on [0, 1), dm_control's
    shifted by `shift_first` in the first reference sample and by `shift_all` in all."""
    calls = []

    def ours(env, keys):
        rng = np.random.default_rng(np.asarray(jax.random.key_data(keys)).sum() % 2**32)
        return {
            "qpos": rng.random((len(keys), 3)).astype(np.float32),
            "qvel": np.zeros((len(keys), 2)),
        }

    def theirs(env, n, seed):
        calls.append((n, seed))
        shift = shift_all + (shift_first if len(calls) == 1 else 0.0)
        rng = np.random.default_rng(seed)
        return {"qpos": rng.random((n, 3)) + shift, "qvel": np.zeros((n, 2))}

    monkeypatch.setattr(parity.sampling, "chunked_reset_samples", ours)
    monkeypatch.setattr(reference, "reference_resets", theirs)
    env = type("FakeEnv", (), {"default_model_fields": lambda self: {}})()
    return parity.resets(env), calls


def test_a_reset_miss_is_tested_again_on_larger_fresh_samples(monkeypatch):
    """A first-stage miss draws fresh samples on both sides (a new dm_control seed)
    and is held to the second test, which a chance miss passes and a real shift fails."""
    piece, calls = _fake_resets(monkeypatch, shift_first=0.0, shift_all=0.0)
    assert "confirmation" not in piece and calls == [(parity.RESETS_REFERENCE, 3)]

    piece, calls = _fake_resets(monkeypatch, shift_first=0.2, shift_all=0.0)  # a fluke
    assert piece["min_pvalue"]["qpos"] < 1e-6
    second = piece["confirmation"]
    assert calls[1] == (parity.CONFIRM_REFERENCE, 3 + parity.CONFIRM_SEED_OFFSET)
    assert second["samples"] == [
        parity.CONFIRM_BATCHES * parity.RESETS_OURS,
        parity.CONFIRM_REFERENCE,
    ]
    assert set(second["min_pvalue"]) == {"qpos"}  # only the quantity that missed
    assert parity.reset_pvalues(piece)["qpos"] == second["min_pvalue"]["qpos"] > 1e-3
    assert parity.missed_targets({"resets": piece}, ["resets"]) == []
    assert "2nd test, 3072/3000; 1st" in parity.markdown._resets_cell(piece)

    piece, _ = _fake_resets(monkeypatch, shift_first=0.0, shift_all=0.05)  # a real shift
    assert piece["min_pvalue"]["qpos"] <= 1e-3 and "confirmation" in piece
    assert parity.reset_pvalues(piece)["qpos"] == piece["confirmation"]["min_pvalue"]["qpos"]
    assert parity.reset_pvalues(piece)["qpos"] < 1e-6
    assert parity.missed_targets({"resets": piece}, ["resets"])


def test_every_task_declares_the_episode_class_its_record_measured():
    """`parity.classes` declares a class for exactly the registered tasks, and each is
    the class the task's record (parity_records/) declared and measured."""
    classes = parity.classes.EPISODE_CLASSES
    assert sorted(classes) == sorted(jaxcontrol.ALL_TASKS)
    assert set(classes.values()) == {"exact", "distributional"}
    records = pathlib.Path(__file__).resolve().parents[2] / "parity_records"
    for record in parity.load_records(records):
        episode = record.get("episode")
        if episode:
            domain, task = record["task"].split("-", 1)
            declared = parity.classes.episode_class(domain, task)
            assert declared == episode["declared_class"] == episode["measured_class"], record[
                "task"
            ]


def test_resets_are_sampled_in_chunks_that_fit_the_memory_bound(monkeypatch):
    """dog's 1024 reset states would take 12 GB at once: `parity.resets` draws them
    a bounded chunk at a time, padded to whole chunks, equal to one batch of all."""
    # Per-episode model fields too; the chunking is backend-independent, so C (no MJX compile).
    env = jaxcontrol.load("reacher", "easy", backend="mujoco")
    keys = jax.random.split(jax.random.key(4), 7)
    states = reference.batched_reset(env, keys)
    whole = parity.sampling.reset_samples(states)
    assert "act" not in whole  # no actuator states; dog's and quadruped's are compared
    stateful = states.replace(data=states.data.replace(act=np.ones((7, 2), np.float32)))
    np.testing.assert_array_equal(parity.sampling.reset_samples(stateful)["act"], 1.0)
    sizes = []
    batched_reset = reference.batched_reset

    def counted(env, chunk):
        sizes.append(len(chunk))
        return batched_reset(env, chunk)

    monkeypatch.setattr(parity.sampling, "batched_reset", counted)
    bound = 3 * parity.sampling.state_bytes(env) + 1
    chunked = parity.sampling.chunked_reset_samples(env, keys, max_bytes=bound)
    assert sizes == [3, 3, 3]  # 7 keys padded to 9: one compiled shape
    assert sorted(chunked) == sorted(whole) and {"geom_pos", "qpos"} <= set(whole)
    for name, value in whole.items():
        np.testing.assert_array_equal(chunked[name], value, err_msg=name)
    assert len(parity.sampling.chunked_reset_samples(env, keys[:2], max_bytes=bound)["qpos"]) == 2


# ----- full tier -------------------------------------------------------------------------


@pytest.mark.full
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_full_one_step(task, full_record, dtype):
    piece = full_record(f"one_step_{dtype}")
    assert piece["n_states"] >= 20
    assert not parity.one_step_misses(piece), piece


@pytest.mark.full
def test_full_episode(task, full_record):
    """Exact tasks agree to 1e-6 over 1000 float64 steps; the class is measured."""
    piece = full_record("episode")
    # The whole episode, or up to where dm_control's ended at a terminal state (LQR).
    steps = reference.episode_steps(jaxcontrol.load(*task))
    assert piece["steps"] == steps or piece.get("dm_control_last"), piece
    assert piece.get("ends_alike", True), piece
    assert piece["measured_class"] == piece["declared_class"], piece
    if piece["measured_class"] == "exact":
        assert piece["ours_rel"] <= parity.EPISODE_EXACT_RTOL, piece
    # Our model under C MuJoCo, observed by our task code: dm_control to rounding.
    assert piece["cpu_rel"] <= 1e-12, piece
    assert piece["cpu_obs"] <= 1e-12, piece


@pytest.mark.full
def test_full_reset_distribution(task, full_record):
    piece = full_record("resets")
    assert min(piece["samples"]) >= 500
    assert piece["names_match"], "per-episode quantities differ from dm_control's"
    assert piece["constant_mismatch"] == [], piece
    low = {k: p for k, p in parity.reset_pvalues(piece).items() if p <= parity.KS_THRESHOLD}
    assert not low, f"KS p-values: {low}"


@pytest.mark.full
def test_full_return_distributions(task, full_record):
    piece = full_record("returns")
    assert set(piece) >= set(parity.POLICIES)
    for policy in parity.POLICIES:
        assert abs(piece[policy]["z"]) <= parity.Z_THRESHOLD, (policy, piece[policy])
