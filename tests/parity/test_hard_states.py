"""One step from a spread of dm_control states, held to stock MJX state by state.

Default tier: the per-state errors, summaries and rule on hand-built numbers, and
pendulum's one step from 16 states of the mix in float32 (a few seconds of compile).
Full tier (`-m full`): every task's 200 states in both precisions, written to its record.
"""

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import parity, reference
from jaxcontrol.mjcf import compat
from jaxcontrol.parity import engines, hard_states, per_state
from jaxcontrol.parity.engines import RAW_LAYOUTS


def test_each_state_error_is_relative_to_its_own_scale():
    """Each state is scaled by its own dm_control values, not the batch's largest."""
    dm = np.array([[0.5, -0.2], [10.0, -40.0], [0.0, 0.0]])
    ours = np.array([[0.5, -0.1], [10.0, -38.0], [0.0, np.nan]])
    errors = per_state.state_errors(ours, dm)
    assert errors[0] == pytest.approx(0.1)  # scale 1: absolute
    assert errors[1] == pytest.approx(2.0 / 40.0)
    assert np.isnan(errors[2])
    scalar = per_state.state_errors(np.array([1.5, 3.0]), np.array([1.0, 3.0]))
    assert scalar.tolist() == [0.5, 0.0]


def test_summaries_give_median_p99_max_and_the_shares_above_thresholds():
    errors = np.concatenate([np.full(90, 1e-6), np.full(9, 1e-3), [0.5]])
    summary = per_state.summarize(errors)
    assert summary["median"] == 1e-6 and summary["max"] == 0.5
    assert summary["p99"] == pytest.approx(1e-3 + 0.01 * (0.5 - 1e-3))  # linear, as NumPy's
    assert summary["above_1e-04"] == pytest.approx(0.10)
    assert summary["above_1e-02"] == pytest.approx(0.01)
    with_nan = per_state.summarize([1e-6, np.nan])
    assert np.isnan(with_nan["max"]) and with_nan["above_1e-02"] == 0.5


def test_ours_is_held_to_ten_times_raw_mjx_on_the_same_state():
    """State 0: raw MJX misses by 0.1, so ours may miss by up to 1.0 there. State 1:
    raw MJX is exact, so ours is held to the 1e-4 target, and 0.01 misses it; an
    observation raw MJX measured sets its own tolerance; a NaN always misses."""
    raw = {
        "qpos": np.array([0.1, 0.0, 0.0]),
        "qvel": np.array([0.0, 1e-7, 0.0]),
        "obs/touch": np.array([0.0, 0.0, 0.3]),
    }
    ours = {
        "qpos": np.array([0.9, 0.01, 0.0]),
        "qvel": np.array([0.5, 0.0, np.nan]),
        "obs/touch": np.array([0.0, 0.0, 2.9]),
        "reward": np.array([0.99, 0.0, 0.0]),
    }
    misses = per_state.state_misses("float32", ours, raw)
    assert [(i, key) for i, key, _, _ in misses] == [(1, "qpos"), (2, "qvel")]
    assert misses[0][2:] == (0.01, 1e-4)
    ours["reward"][0] = 1.01
    assert (0, "reward", 1.01, pytest.approx(1.0)) in per_state.state_misses("float32", ours, raw)


def test_the_mix_gives_every_source_its_share():
    assert hard_states.source_counts(200, True) == {
        "reset": 30,
        "random": 70,
        "policy": 40,
        "contacts": 60,
    }
    assert hard_states.source_counts(200, False) == {"reset": 30, "random": 110, "contacts": 60}
    assert sum(hard_states.source_counts(17, False).values()) == 17


@pytest.fixture(scope="module")
def pendulum():
    with reference.precision(False):
        env = jaxcontrol.load("pendulum", "swingup")
        yield env, per_state.hard_step(env, x64=False, n_states=16, seed=3, policy_runs=())


def test_the_mix_is_the_same_for_the_same_seed_and_records_its_sources(pendulum):
    env, piece = pendulum
    first = hard_states.state_mix(env, 16, seed=3)
    again = hard_states.state_mix(env, 16, seed=3)
    other = hard_states.state_mix(env, 16, seed=4)
    for a, b in zip(first.transitions, again.transitions):
        np.testing.assert_array_equal(a.start.qpos, b.start.qpos)
        np.testing.assert_array_equal(a.action, b.action)
    assert not np.array_equal(first.transitions[5].start.qpos, other.transitions[5].start.qpos)
    assert first.sources == piece["states"]["source"]
    assert piece["sources"] == {"reset": 2, "random": 9, "contacts": 5}
    assert [t.start.step for t in first.transitions[:2]] == [0, 0]  # resets
    assert all(t.start.step <= hard_states.RANDOM_DEPTH for t in first.transitions)
    assert first.contacts == piece["states"]["contacts"] and len(first.rows) == 16


def test_pendulum_one_step_from_the_mix_in_float32_is_within_the_rule(pendulum):
    env, piece = pendulum
    keys = {f"obs/{k}" for k in env.observation_spec()} | {"qpos", "qvel", "reward"}
    assert set(piece["ours"]) == keys and set(piece["raw"]) == keys - {"reward"}
    assert piece["dtype"] == "float32" and piece["n_states"] == 16
    assert piece["states_missed"] == 0 and piece["misses"] == [], piece["misses"]
    assert piece["rechecked"] == {}
    assert 0 < piece["worst_ours"]["max"] < 1e-5  # float32 rounding, never exact
    assert piece["worst_ours"]["max"] == max(piece["states"]["ours"])
    assert parity.missed_targets({"hard_states_float32": piece}, ["hard_states_float32"]) == []


def test_a_miss_is_rechecked_with_the_state_stepped_alone(pendulum):
    """Where ours misses the batch's tolerance, raw MJX steps that state alone in the
    other layouts (pendulum's step is the same in each, to float32's rounding); the
    rule then holds ours to raw's worst error over the layouts, and the piece records
    each layout's error there. An unknown layout is an error naming the valid ones."""
    env, _ = pendulum
    with reference.precision(False):
        mix = hard_states.state_mix(env, 4, seed=3)
        with pytest.raises(ValueError, match="valid layouts: batch, alone, alone_vmapped"):
            per_state.raw_values(env, mix.transitions, "sharded")
        reference_values = per_state.dm_control_values(mix.transitions)
        raw = per_state.errors_against(per_state.raw_values(env, mix.transitions), reference_values)
        ours = {k: v.copy() for k, v in raw.items()}
        ours["qvel"][2] = 0.5  # far beyond 10x raw there: a miss in every layout
        raw_rule, layouts = per_state.recheck(
            env, mix.transitions, reference_values, "float32", ours, raw
        )
    assert list(layouts) == [2] and list(layouts[2]) == list(RAW_LAYOUTS)
    for errors in layouts[2].values():
        assert set(errors) == {"qpos", "qvel"} and all(0 <= e < 1e-4 for e in errors.values())
    assert raw_rule["qvel"][2] == max(e["qvel"] for e in layouts[2].values())
    for key in raw:
        np.testing.assert_array_equal(np.delete(raw_rule[key], 2), np.delete(raw[key], 2))
        assert raw_rule[key][2] >= raw[key][2]
    piece = per_state.piece_of(mix, "float32", ours, raw, 3, raw_rule, layouts)
    assert piece["states_missed"] == 1 and piece["rechecked"] == {"2": layouts[2]}
    assert piece["misses"][0]["raw_qvel"] == raw_rule["qvel"][2]
    same, none = per_state.recheck(env, mix.transitions, reference_values, "float32", raw, raw)
    assert same is raw and none == {}


def test_raw_mjx_steps_a_large_batch_in_chunks(pendulum, monkeypatch):
    """Past `RAW_BATCH_BYTES` of data, raw MJX steps the states in padded chunks (dog's
    200 float64 states at once were killed for memory): the same values as one batch."""
    env, _ = pendulum
    with reference.precision(True):
        mix = hard_states.state_mix(env, 5, seed=3)
        whole = engines.raw_mjx_step_from(env, mix.transitions)
        blank = compat.put_data(env.mj_model, mujoco.MjData(env.mj_model))
        assert engines.raw_batch_size(blank, jnp.float64, 5) == 5
        per_state_bytes = engines.RAW_BATCH_BYTES // engines.raw_batch_size(
            blank, jnp.float64, 10**9
        )
        monkeypatch.setattr(engines, "RAW_BATCH_BYTES", 2 * per_state_bytes)
        assert engines.raw_batch_size(blank, jnp.float64, 5) == 2
        chunked = engines.raw_mjx_step_from(env, mix.transitions)
    for a, b in zip(whole[:2], chunked[:2]):
        assert a.shape == b.shape == (5, env.mj_model.nq)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14)
    for key, value in whole[2].items():
        np.testing.assert_allclose(value, chunked[2][key], rtol=0, atol=1e-14)


def test_the_c_backend_steps_the_hard_states_as_dm_control_does():
    """The C backend's remedy piece: pendulum's states stepped by C MuJoCo in float64
    agree with dm_control to float64's rounding, held to the target alone (stock MJX
    is not stepped, so the piece has no raw figures); it is no default piece."""
    with reference.precision(True):
        env = jaxcontrol.load("pendulum", "swingup", backend="mujoco")
        piece = per_state.hard_step(env, x64=True, n_states=8, seed=3, with_raw=False)
    assert piece["dtype"] == "float64" and piece["n_states"] == 8
    assert piece["raw"] == {} and piece["worst_raw"] is None and "raw" not in piece["states"]
    assert piece["states_missed"] == 0 and piece["worst_ours"]["max"] < 1e-12
    remedy = set(parity.records.C_BACKEND_REMEDY_PIECES)
    assert remedy <= set(parity.PIECES) and not remedy & set(parity.records.default_pieces())
    assert not remedy & set(parity.records.REQUIRED_PIECES)
    # A planted error beyond float64's target is a miss, with no raw figures to name.
    ours = {"qvel": np.array([0.0, 0.5])}
    mix = hard_states.StateMix(
        transitions=[None, None],
        sources=["reset"] * 2,
        contacts=[0, 0],
        rows=[0, 0],
        policy_runs=[],
    )
    planted = per_state.piece_of(mix, "float64", ours, {}, 0)
    assert planted["states_missed"] == 1 and planted["misses"][0]["raw_qvel"] is None


def test_a_record_with_a_state_beyond_the_rule_misses_a_target():
    piece = {"states_missed": 2, "n_states": 200}
    assert parity.missed_targets({"hard_states_float64": piece}, []) == [
        "hard states float64: ours beyond max(target, 10x raw MJX) on 2 of 200 states"
    ]


# ----- full tier -------------------------------------------------------------------------


@pytest.mark.full
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_full_hard_states(task, full_record, dtype):
    """Every task's 200 states: ours within max(target, 10x raw MJX) on each."""
    piece = full_record(f"hard_states_{dtype}")
    assert piece["n_states"] >= per_state.HARD_STATES
    assert piece["states_missed"] == 0, piece["misses"]
