"""One rollout for a rollout family: tasks whose episodes differ only in the reward
(`parity.families.ROLLOUT_FAMILIES`) have their long parity pieces measured on one rollout
(`parity.families.step_with_rewards`, `parity.family_soak`, `parity.family_returns`,
`jaxcontrol parity --one-rollout`), and each task gets what its own run gives."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import parity
from jaxcontrol.cli import parity as parity_command
from jaxcontrol.parity import families, records
from jaxcontrol.parity.families import step_with_rewards
from jaxcontrol.registry import REGISTRY

SMALL = {"num_envs": 8, "steps": 6, "shards": 2, "checkpoint_every": 2}
FAMILY = (("cartpole", "balance"), ("cartpole", "balance_sparse"))


def _families():
    """Every registered rollout family, as (domain, its tasks in registration order)."""
    seen, out = set(), []
    for domain, task in jaxcontrol.ALL_TASKS:
        siblings = families.rollout_siblings(domain, task)
        if siblings and f"{domain}-{task}" not in seen:
            members = [task] + [s.split("-", 1)[1] for s in siblings]
            seen.update(f"{domain}-{t}" for t in members)
            out.append((domain, tuple(members)))
    return out


@pytest.fixture(scope="module")
def envs():
    """On C MuJoCo, 1 s episodes (100 steps): one rollout's bookkeeping is the
    backend's; the full tier's `test_each_family_shares_its_members_own_rollouts`
    steps MJX."""
    return [_short_on_c(*task) for task in FAMILY]


def _short_on_c(domain, task):
    return jaxcontrol.load(domain, task, backend="mujoco", time_limit=1.0)


def test_the_families_are_the_tasks_that_differ_only_in_the_reward():
    members = dict(_families())
    assert members["dog"] == ("stand", "walk", "trot", "run")  # not fetch: its ball
    assert members["humanoid_CMU"] == ("stand", "walk", "run")
    assert members["humanoid"] == ("stand", "walk", "run")  # not run_pure_state
    assert members["quadruped"] == ("walk", "run")
    assert families.rollout_siblings("cartpole", "two_poles") == ()
    # A task argument that changes the rollout leaves the family.
    short = jaxcontrol.load("cartpole", "balance_sparse", time_limit=5.0)
    balance = jaxcontrol.load("cartpole", "balance")
    assert families.env_rollout_key(short) != families.env_rollout_key(balance)


def test_the_family_table_names_registered_tasks_once():
    """Every member of `ROLLOUT_FAMILIES` is a registered task of the family's one
    domain, in no other family, and each free field is a field of some member (a
    misspelt one would free nothing)."""
    seen = set()
    for family in families.ROLLOUT_FAMILIES:
        assert len({domain for domain, _ in family.tasks}) == 1, family.name
        names = set()
        for task in family.tasks:
            assert task in jaxcontrol.ALL_TASKS and task not in seen, (family.name, task)
            seen.add(task)
            names |= {f.name for f in dataclasses.fields(REGISTRY.prototype(*task))}
        assert set(family.free_fields) <= names, family.name


def test_step_with_rewards_refuses_tasks_of_another_rollout(envs):
    state = envs[0].blank_state()
    action = jnp.zeros(envs[0].action_spec().shape)
    for stranger in [
        jaxcontrol.load("cartpole", "swingup"),  # another reset
        jaxcontrol.load("cartpole", "balance_sparse", time_limit=5.0),  # another time limit
        jaxcontrol.load("acrobot", "swingup_sparse"),  # another domain
    ]:
        with pytest.raises(ValueError, match="registered siblings: cartpole-balance_sparse"):
            jax.eval_shape(
                lambda s, a, x=stranger: step_with_rewards(envs[0], s, a, [x]), state, action
            )
    with pytest.raises(ValueError, match="registered siblings: none"):
        two_poles = jaxcontrol.load("cartpole", "two_poles")
        step_with_rewards(two_poles, two_poles.blank_state(), jnp.zeros(1), [envs[0]])


def test_step_with_rewards_gives_each_sibling_its_own_steps_reward():
    """A sibling's reward is the one its own `step` gives the same transition, and 0
    where the step is not finite (the data then stays the last finite state's)."""
    env, sibling = (jaxcontrol.load(*task, time_limit=1.0) for task in FAMILY)
    state = env.reset(jax.random.key(3))
    state = state.replace(data=state.data.replace(qvel=state.data.qvel + 0.5))
    action = jnp.full(env.action_spec().shape, 0.3)

    @jax.jit
    def both(state):
        stepped, rewards = step_with_rewards(env, state, action, [sibling])
        return stepped, rewards, env.step(state, action), sibling.step(state, action)

    stepped, rewards, own, theirs = both(state)
    np.testing.assert_array_equal(stepped.data.qpos, own.data.qpos)
    assert stepped.reward == own.reward and rewards.shape == (1,)
    assert rewards[0] == theirs.reward and rewards[0] != stepped.reward  # another reward
    broken = state.replace(data=state.data.replace(qvel=state.data.qvel * jnp.nan))
    stepped, rewards, _, theirs = both(broken)
    assert bool(stepped.diverged) and stepped.reward == 0 == theirs.reward
    assert rewards[0] == 0


def test_a_family_soak_gives_each_task_its_own_soak(envs, tmp_path):
    """Bit for bit: the same digests, statistics and replay as each task's own soak;
    and a family soak measured in parts keeps each task's parts in its own file, as
    its own run keeps them, which complete to the same results."""
    own = [parity.soak(env, **SMALL) for env in envs]
    assert (own[0]["reward_min"], own[0]["reward_max"]) != (
        own[1]["reward_min"],
        own[1]["reward_max"],
    )
    assert parity.family_soak(envs, **SMALL) == own

    paths = [tmp_path / f"{i}.json" for i in range(len(envs))]
    with pytest.raises(parity.PartsLeft):  # a run given shard 0 only
        parity.family_soak(
            envs, progresses=[parity.Progress(p, only=["shard0"]) for p in paths], **SMALL
        )
    alone = tmp_path / "alone.json"
    with pytest.raises(parity.PartsLeft):
        parity.soak(envs[1], progress=parity.Progress(alone, only=["shard0"]), **SMALL)
    saved = [json.loads(p.read_text())["parts"] for p in paths]
    assert [list(parts) for parts in saved] == [["shard0"], ["shard0"]]
    assert saved[1] == json.loads(alone.read_text())["parts"]  # as its own run keeps it

    progresses = [parity.Progress(p) for p in paths]
    assert parity.family_soak(envs, progresses=progresses, **SMALL) == own
    assert [p.resumed for p in progresses] == [["shard0"], ["shard0"]]
    assert not any(p.exists() for p in paths)


def test_family_returns_give_each_task_its_own_returns(envs):
    own = [parity.returns(env, episodes=8) for env in envs]
    family = parity.family_returns(envs, episodes=8)
    for ours, theirs in zip(family, own):
        assert ours.keys() == theirs.keys() == set(parity.POLICIES)
        for policy in parity.POLICIES:
            assert ours[policy] == theirs[policy], policy
    # The sparse reward differs from the dense one on the same episodes.
    assert family[0]["sinusoid"]["ours_returns"] != family[1]["sinusoid"]["ours_returns"]


def test_cli_one_rollout_writes_each_tasks_record(envs, tmp_path, monkeypatch, capsys):
    def small(loaded, **kwargs):  # the module's envs in place of the CLI's (MJX, 10 s)
        assert [(e.domain, e.task_name) for e in loaded] == list(FAMILY)
        return parity.family_soak(envs, **SMALL, **kwargs)

    monkeypatch.setitem(records.FAMILY_PIECES, "soak", small)
    names = [f"{d}-{t}" for d, t in FAMILY]
    argv = ["--env", ",".join(names), "--pieces", "soak", "--one-rollout"]
    argv += ["--records", str(tmp_path)]
    assert parity_command.main(argv) == 0, capsys.readouterr()
    for name, env, other in zip(names, envs, reversed(names)):
        piece = json.loads((tmp_path / f"{name}.json").read_text())["soak"]
        assert piece["one_rollout_with"] == [other]
        own = parity.soak(env, **SMALL)
        assert {k: piece[k] for k in own} == own
    # With --missing, nothing is left to measure.
    assert parity_command.main([*argv, "--missing"]) == 0
    assert "all targets met" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["cartpole-balance", "cartpole-swingup"], "its rollout siblings: cartpole-balance_sparse"),
        (["cartpole-balance"], "two or more tasks of one domain"),
        (["cartpole-balance", "acrobot-swingup"], "two or more tasks of one domain"),
        (["cartpole-balance", "cartpole-balance_sparse", "--pieces", "episode"], "only the pieces"),
        (["dog-stand", "dog-fetch"], "its rollout siblings: dog-walk, dog-trot, dog-run"),
        (["dog-fetch", "dog-walk"], "its rollout siblings: none"),
        (["humanoid_CMU-stand", "humanoid-walk"], "two or more tasks of one domain"),
    ],
)
def test_cli_one_rollout_refuses_what_cannot_share_a_rollout(argv, message, tmp_path, capsys):
    ids = [a for a in argv if not a.startswith("--") and a != "episode"]
    rest = [a for a in argv if a not in ids]
    pieces = rest or ["--pieces", "soak"]
    args = ["--env", ",".join(ids), *pieces, "--one-rollout", "--records", str(tmp_path)]
    assert parity_command.main(args) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_family_names_each_task_once():
    with pytest.raises(ValueError, match="cannot share"):
        records.check_family("humanoid_CMU", ["stand", "walk", "stand"])


@pytest.mark.full
@pytest.mark.parametrize("domain, tasks", _families(), ids=[d for d, _ in _families()])
def test_each_family_shares_its_members_own_rollouts(domain, tasks):
    """Every member's own MJX episode, in float32 from the same keys under the same
    random actions, starts from the family's resets bit for bit, has its step types and
    discounts, and after the first step its states and observations within the
    float32 one-step target (relative to scale), and its rewards (walker-walk's read a
    velocity sensor that walker-stand's step does not sync) too, at every step where
    the states still agree so. Not bit for bit: XLA rounds one
    physics differently in programs that compute other things beside it (walker-stand's
    own program and the family's part in the first step; dog's from the second), and
    chaos then parts the trajectories, as runs on two hosts part: the long pieces are
    distributions, which rounding does not move."""
    envs = [jaxcontrol.load(domain, task) for task in tasks]
    # 8 environments for 20 steps: enough for hopper's rewards (0 until it stands) to vary.
    keys = jax.random.split(jax.random.key(7), 8)
    low, high = (envs[0].action_spec().minimum, envs[0].action_spec().maximum)
    actions = jax.random.uniform(jax.random.key(8), (20, 8, len(low)), minval=low, maxval=high)

    def kept(states):
        return (states.data.qpos, states.data.qvel, states.data.act, states.observation)

    def rollout(env, siblings=()):
        @jax.jit
        def run(keys, actions):
            def body(states, action):
                states, rewards = jax.vmap(lambda s, a: step_with_rewards(env, s, a, siblings))(
                    states, action
                )
                shared = (kept(states), states.step_type, states.discount)
                return states, {"shared": shared, "reward": states.reward, "siblings": rewards}

            first = jax.vmap(env.reset)(keys)
            out = jax.lax.scan(body, first, actions)[1]
            return {**out, "reset": kept(first)}

        return jax.tree.map(np.asarray, run(keys, actions))

    family = rollout(envs[0], tuple(envs[1:]))
    target = parity.tolerance.ONE_STEP_TARGET["float32"]
    varied = []
    for i, env in enumerate(envs):
        name = f"{domain}-{tasks[i]}"
        own = rollout(env)
        for ours, theirs in zip(jax.tree.leaves(family["reset"]), jax.tree.leaves(own["reset"])):
            np.testing.assert_array_equal(ours, theirs, err_msg=f"{name} reset")
        (states, step_types, discounts), (own_states, own_types, own_discounts) = (
            family["shared"],
            own["shared"],
        )
        np.testing.assert_array_equal(step_types, own_types, err_msg=name)
        np.testing.assert_array_equal(discounts, own_discounts, err_msg=name)
        rewards = family["siblings"][..., i - 1] if i else family["reward"]

        def gaps(a, b):  # per step: the largest difference, relative to scale
            a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
            scale = np.maximum(1.0, np.abs(b).max(axis=1, initial=0.0))
            return np.abs(a - b).max(axis=1, initial=0.0) / scale

        state_gap = np.max(
            [gaps(x, y) for x, y in zip(jax.tree.leaves(states), jax.tree.leaves(own_states))],
            axis=0,
        )
        assert state_gap[0] <= target, f"{name}: the first step differs by {state_gap[0]:.2e}"
        # Wherever the states still agree to rounding, the rewards do too.
        close = np.flatnonzero(state_gap <= target)
        reward_gap = gaps(rewards, own["reward"])[close]
        assert reward_gap.max() <= target, f"{name}: rewards differ by {reward_gap.max():.2e}"
        varied.append(np.ptp(own["reward"][close]) > 0)
    # Sparse rewards may stay constant over so short a rollout; a dense one does not.
    assert any(varied), f"no reward of {domain} varies: the rewards' comparison proves nothing"
