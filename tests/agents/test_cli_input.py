"""Bad command lines: each ends in exit status 2 and one line that names what is valid.

Hypothesis throws random flags and values at ``jaxcontrol train``'s argument
handling; validation that passes is stopped before anything is written.
"""

import contextlib
import dataclasses
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxcontrol.agents.registry import AGENTS, get_agent
from jaxcontrol.cli import evaluate, train
from jaxcontrol.user_input import parse_whole_number

pytestmark = pytest.mark.xdist_group("agents_cli_input")

BASE = ["--env", "cartpole-balance", "--agent", "ppo", "--steps", "1000"]
DIST = ["--distributed", "--num-processes", "2"]


class Valid(Exception):
    """Raised where validation has passed and the run directory would be written."""


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("cli_input") / "never"


def _train(argv):
    """(exit status or Valid, stderr lines, stdout) of ``jaxcontrol train argv``."""
    err, std = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stderr(err),
        contextlib.redirect_stdout(std),
    ):
        patch.setattr(train, "check_writable", lambda out: (_ for _ in ()).throw(Valid()))
        try:
            rc = train.main(argv)
        except Valid:
            rc = Valid
    return rc, err.getvalue().splitlines(), std.getvalue()


def _rejected(argv, out):
    rc, err, std = _train([*argv, "--out", str(out)])
    assert rc == 2, (argv, rc, err)
    assert len(err) == 1 and err[0].startswith("error: ") and not std, (argv, err)
    assert not out.exists()
    return err[0]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--steps", "inf"], "--steps: expected an integer in [1, 1000000000000000], got 'inf'"),
        (["--steps", "nan"], "got 'nan'"),
        (["--steps", "1.5"], "got '1.5'"),
        (["--steps", "1e400"], "got '1e400'"),
        (["--steps", "ten"], "got 'ten'"),
        (["--seed", "-1"], "--seed: expected an integer in [0, 4294967295], got '-1'"),
        (["--seed", "4294967296"], "[0, 4294967295]"),
        (["--eval-episodes", "0"], "--eval-episodes: expected an integer in [1, 2147483647]"),
        (["--checkpoint-every", "x"], "--checkpoint-every: expected an integer in [1, "),
        (["--devices", "0"], "--devices: expected an integer in [1, "),
        (["--action-repeat", "0"], "--action-repeat: expected an integer in [1, 1000], got '0'"),
        (["--action-repeat", "1001"], "--action-repeat: expected an integer in [1, 1000]"),
        (["--action-repeat", "2.5"], "got '2.5'"),
        ([*DIST[:1], "--num-processes", "0"], "--num-processes: expected an integer in [1, "),
        ([*DIST, "--process-id", "2"], "--process-id must be in [0, 1] for --num-processes 2"),
        (["--distributed", "--coordinator", "host"], "HOST:PORT with PORT in [1, 65535]"),
        (["--distributed", "--coordinator", "h:70000"], "got 'h:70000'"),
        (["--set", "gamma=1.5"], "PPOConfig.gamma must be in [0.0, 1.0], got 1.5"),
        (["--set", "learning_rate=nan"], "learning_rate: expected a finite number"),
        (["--set", "learning_rate=-1"], "PPOConfig.learning_rate must be > 0, got -1.0"),
        (["--set", "clip_eps=0"], "PPOConfig.clip_eps must be > 0"),
        (["--set", "entropy_coef=-0.1"], "PPOConfig.entropy_coef must be in [0.0, inf]"),
        (["--set", "num_envs=1.5"], "'1.5' for num_envs: expected an integer"),
        (["--set", "num_envs=3e9"], "PPOConfig.num_envs must be at most 2147483647"),
        (["--set", "hidden_sizes=8,-1"], "expected comma-separated positive integers"),
        (["--set", "normalize_observations=maybe"], "expected true or false"),
        (["--set", "total_env_steps=5"], "give the budget with --steps"),
        (["--set", "learning_rate"], "--set expects name=value"),
        (["--set", "lerning_rate=1"], "did you mean 'learning_rate'"),
        (["--stepz", "3"], "unknown flag '--stepz'; did you mean '--steps'"),
        (["--see", "3"], "unknown flag '--see'; did you mean '--seed'"),
        (["--ste", "3"], "unknown flag '--ste'"),  # no abbreviations
        (["stray"], "unexpected argument 'stray'"),
        (["--agent", "ppp"], "unknown agent 'ppp'; did you mean 'ppo'?"),
        (["--env", "cartpole-balanse"], "did you mean 'cartpole-balance'"),
        (["--backend", "c"], "unknown backend 'c'; valid backends: mjx, mujoco"),
    ],
)
def test_each_bad_value_names_what_is_valid(argv, expected, out):
    assert expected in _rejected([*BASE, *argv], out)


@pytest.mark.parametrize(
    "agent, setting, expected",
    [
        ("sac", "tau=2", "SACConfig.tau must be in [0.0, 1.0]"),
        ("sac", "alpha_learning_rate=0", "SACConfig.alpha_learning_rate must be > 0"),
        ("sac", "learning_starts=-1", "SACConfig.learning_starts must be in [0, inf]"),
        ("d4pg", "priority_beta=2", "D4PGConfig.priority_beta must be in [0.0, 1.0]"),
        ("d4pg", "v_min=200", "v_min < v_max, got num_atoms=101, v_min=200.0"),
        ("d4pg", "sigma_min=inf", "sigma_min: expected a finite number"),
    ],
)
def test_off_policy_config_ranges(agent, setting, expected, out):
    argv = ["--env", "cartpole-balance", "--agent", agent, "--steps", "1000", "--set", setting]
    assert expected in _rejected(argv, out)


def test_evaluate_flags(tmp_path, capsys):
    assert evaluate.main([str(tmp_path), "--episodes", "0"]) == 2
    assert "--episodes: expected an integer in [1, " in capsys.readouterr().err
    assert evaluate.main([str(tmp_path), "--episodse", "3"]) == 2
    assert "did you mean '--episodes'" in capsys.readouterr().err


def _fields(agent):
    return dataclasses.fields(get_agent(agent).config_cls)


def _bad_setting(agent):
    """A ``--set`` value that is wrong for the field's type, or an unknown field."""
    names = {f.name for f in _fields(agent)}
    unknown = st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(lambda n: n not in names)
    words = st.text(max_size=6).filter(lambda t: t.strip().lower() not in ("true", "false"))
    words = words.filter(lambda t: not _number(t))
    bad = {
        bool: words.filter(lambda t: t not in ("0", "1")),
        int: st.one_of(words, st.sampled_from(["1.5", "-1", "nan", "1e400", "-3"])),
        float: st.one_of(words, st.sampled_from(["nan", "inf", "-inf", "1e400"])),
        tuple: st.one_of(words.filter(bool), st.sampled_from(["0", "8,-1", "8,,8", "1.5"])),
    }
    fields = [f for f in _fields(agent) if f.name != "total_env_steps"]
    by_type = st.sampled_from(fields).flatmap(
        lambda f: bad[type(f.default) if type(f.default) in bad else int].map(
            lambda v: f"{f.name}={v}"
        )
    )
    return st.one_of(by_type, unknown.map(lambda n: f"{n}=1"))


def _number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _bad_flag():
    """(flag, value) pairs that no valid command line has."""
    nasty = st.sampled_from(["inf", "-inf", "nan", "1e400", "1.5", "1e-3", "", " ", "0x10"])
    not_int = st.one_of(nasty, st.text(max_size=8)).filter(lambda t: parse_whole_number(t) is None)
    out_of_range = {
        "--steps": st.one_of(st.integers(max_value=0), st.integers(min_value=10**15 + 1)),
        "--seed": st.one_of(st.integers(max_value=-1), st.integers(min_value=2**32)),
        "--checkpoint-every": st.integers(max_value=0),
        "--eval-episodes": st.integers(max_value=0),
        "--devices": st.integers(max_value=0),
        "--action-repeat": st.one_of(st.integers(max_value=0), st.integers(min_value=1001)),
    }
    return st.sampled_from(sorted(out_of_range)).flatmap(
        lambda flag: st.tuples(st.just(flag), st.one_of(not_int, out_of_range[flag].map(str)))
    )


@st.composite
def bad_command_lines(draw):
    agent = draw(st.sampled_from(AGENTS))
    argv = ["--env", "cartpole-balance", "--agent", agent, "--steps", "2000"]
    kind = draw(st.sampled_from(["flag", "set", "env", "agent", "unknown", "missing"]))
    if kind == "flag":
        flag, value = draw(_bad_flag())
        argv += [flag, value] if not value.startswith("-") else [f"{flag}={value}"]
    elif kind == "set":
        argv += ["--set", draw(_bad_setting(agent))]
    elif kind == "env":
        argv[1] = draw(st.text(max_size=20).filter(lambda t: t != "cartpole-balance"))
    elif kind == "agent":
        argv[3] = draw(st.text(max_size=8).filter(lambda t: t not in AGENTS))
    elif kind == "unknown":
        known = {f for a in train.parser()._actions for f in a.option_strings}
        flag = draw(
            st.from_regex(r"--[a-z][a-z-]{0,12}", fullmatch=True).filter(lambda f: f not in known)
        )
        argv.insert(draw(st.integers(0, len(argv) // 2)) * 2, flag)
    else:
        drop = draw(st.sampled_from([0, 2, 4]))
        del argv[drop : drop + 2]
    # Unrelated valid flags around it change nothing.
    return argv + draw(
        st.sampled_from([[], ["--seed", "7"], ["--no-progress"], ["--action-repeat", "2"]])
    )


@settings(max_examples=300, deadline=None)
@given(argv=bad_command_lines())
def test_random_bad_command_lines_end_in_one_error_line(argv, out):
    _rejected(argv, out)


TOKENS = [
    *(f for a in train.parser()._actions for f in a.option_strings if f not in ("-h", "--help")),
    *("cartpole-balance", "cheetah-run", *AGENTS, "1000", "0", "-1", "1e6", "nan", "x=1"),
    *("num_envs=8", "gamma=2", "learning_rate=3e-4", "hidden_sizes=8,8"),
]


@settings(max_examples=300, deadline=None)
@given(
    argv=st.lists(
        st.one_of(st.sampled_from(TOKENS), st.text(max_size=10)).filter(
            lambda t: not t.startswith("-h") and t not in ("--distributed", "--help")
        ),
        max_size=14,
    )
)
def test_random_command_lines_never_end_in_a_traceback(argv, out):
    rc, err, std = _train(argv)
    if rc is not Valid:  # validation passing stops before any write
        assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and not std, err


def test_a_run_from_before_a_new_field_resumes_with_what_it_did():
    """PPO runs from before `stagger_episodes` ran in lock-step: resuming one needs
    `--set stagger_episodes=False`, and the refusal says so; other agents lack the field.
    Off-policy runs from before `random_shift` resume as they ran, unshifted."""
    from jaxcontrol.agents.common.run_dir import differences as _differences  # pylint: disable=import-outside-toplevel

    run = {"env": "cartpole-swingup", "agent": "ppo", "seed": 0, "action_repeat": 1}
    saved = {**run, "config": {"num_envs": 128}}
    now = {**run, "config": {"num_envs": 128, "stagger_episodes": True}}
    assert _differences(saved, now) == ["stagger_episodes False != True"]
    now["config"]["stagger_episodes"] = False
    assert _differences(saved, now) == []
    sac = {**run, "agent": "sac", "config": {"batch_size": 256}}
    assert _differences(sac, sac) == []
    # Off-policy runs from before `random_shift` shifted nothing: they resume as they were.
    d4pg = {**run, "agent": "d4pg", "config": {"batch_size": 256}}
    assert _differences(d4pg, {**d4pg, "config": {"batch_size": 256, "random_shift": 0}}) == []
    shifted = {**d4pg, "config": {"batch_size": 256, "random_shift": 4}}
    assert _differences(d4pg, shifted) == ["random_shift 0 != 4"]
