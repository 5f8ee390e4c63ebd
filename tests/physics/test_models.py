"""Our MjSpec-built models compile to exactly dm_control's models."""

from __future__ import annotations

import copy
import functools
import importlib

import mujoco
import numpy as np
import pytest

import jaxcontrol
from jaxcontrol import mjcf
from jaxcontrol.mjcf import compare, compat

CASES = [
    ("pendulum", {}),
    ("acrobot", {}),
    ("point_mass", {}),
    ("cartpole", {"num_poles": 1}),
    ("cartpole", {"num_poles": 2}),
    ("cartpole", {"num_poles": 3}),
    ("cheetah", {}),
    # dog's per-task floors: stand and walk, trot, run; fetch's ball; dm_control's defaults.
    ("dog", {"floor_size": 15}),
    ("dog", {"floor_size": 45}),
    ("dog", {"floor_size": 135}),
    ("dog", {"remove_ball": False}),
    ("dog", {}),
    ("walker", {}),
    ("hopper", {}),
    ("humanoid", {}),
    ("humanoid_CMU", {}),
    ("finger", {}),
    ("reacher", {}),
    ("ball_in_cup", {}),
    ("manipulator", {"use_peg": False, "insert": False}),
    ("manipulator", {"use_peg": True, "insert": False}),
    ("manipulator", {"use_peg": False, "insert": True}),
    ("manipulator", {"use_peg": True, "insert": True}),
    ("fish", {}),
    ("swimmer", {"n_links": 3}),
    ("swimmer", {"n_links": 6}),
    ("swimmer", {"n_links": 15}),
    ("swimmer", {"n_links": 20}),
    # LQR's joints are drawn from dm_control's random state: several seeds.
    ("lqr", {"n_bodies": 2, "n_actuators": 1, "random": 0}),
    ("lqr", {"n_bodies": 2, "n_actuators": 1, "random": 1}),
    ("lqr", {"n_bodies": 6, "n_actuators": 2, "random": 0}),
    ("lqr", {"n_bodies": 6, "n_actuators": 2, "random": 2**32 - 1}),
    ("lqr", {"n_bodies": 3, "n_actuators": 3, "random": 12345}),
    ("stacker", {"n_boxes": 1}),
    ("stacker", {"n_boxes": 2}),
    ("stacker", {"n_boxes": 3}),
    ("stacker", {"n_boxes": 4}),
    # quadruped's per-task edits: walk, run, escape, fetch, and dm_control's defaults.
    ("quadruped", {"floor_size": 10}),
    ("quadruped", {"floor_size": 100}),
    ("quadruped", {"floor_size": 40, "terrain": True, "rangefinders": True}),
    ("quadruped", {"walls_and_ball": True}),
    ("quadruped", {}),
]
# dm_control's builders whose arguments are named differently from ours.
_REFERENCE_BUILDERS = {
    "manipulator": lambda suite, use_peg, insert: suite.make_model(use_peg, insert),
    "swimmer": lambda suite, n_links: suite.get_model_and_assets(n_links),
    "stacker": lambda suite, n_boxes: suite.make_model(n_boxes),
    "quadruped": lambda suite, **kwargs: (suite.make_model(**kwargs), suite.common.ASSETS),
    "lqr": lambda suite, n_bodies, n_actuators, random: suite.get_model_and_assets(
        n_bodies, n_actuators, np.random.RandomState(random)
    ),
}
_ENERGY = int(mujoco.mjtEnableBit.mjENBL_ENERGY)


def _case_id(case: tuple[str, dict]) -> str:
    domain, kwargs = case
    return domain + "".join(f"-{k}={v}" for k, v in kwargs.items())


@functools.cache
def _reference(domain: str, kwargs_items: tuple = ()) -> mujoco.MjModel:
    """dm_control's compiled model (cached; do not mutate)."""
    suite = importlib.import_module(f"dm_control.suite.{domain}")
    build = _REFERENCE_BUILDERS.get(domain, lambda suite, **kw: suite.get_model_and_assets(**kw))
    xml, assets = build(suite, **dict(kwargs_items))
    return suite.Physics.from_xml_string(xml, assets).model.ptr


def _nudge(array: np.ndarray, index) -> None:
    """Moves array[index] to the next representable float: the least change."""
    array[index] = np.nextafter(array[index], np.inf)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_model_matches_dm_control(case):
    domain, kwargs = case
    ours = mjcf.build(domain, **kwargs)
    ref = _reference(domain, tuple(kwargs.items()))
    assert compare.compare_models(ours, ref) == []


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_model_without_textures_differs_only_in_textures(case):
    """The C backend's per-environment model copies are built without textures
    (`mjcf.common.without_textures`): everything physics reads is unchanged."""
    domain, kwargs = case
    textured = mjcf.build(domain, **kwargs)
    with mjcf.common.without_textures():
        lean = mjcf.build(domain, **kwargs)
    assert textured.ntex and not lean.ntex and lean.nbuffer < textured.nbuffer
    assert compare.compare_models(lean, textured, ignore=compare.TEXTURE_FIELDS) == []
    differ = compare.compare_models(lean, textured)
    assert any(d.startswith("tex_data") for d in differ)
    assert all(d.startswith(compare.TEXTURE_FIELDS) or "mjOBJ_TEXTURE" in d for d in differ)
    assert mjcf.build(domain, **kwargs).ntex == textured.ntex  # only inside the context


def test_ignoring_texture_fields_still_compares_physics_and_names():
    ref = _reference("cartpole", (("num_poles", 1),))
    model = copy.deepcopy(ref)
    _nudge(model.body_mass, 1)
    model.geom_matid[0] = -1
    diffs = compare.compare_models(model, ref, ignore=compare.TEXTURE_FIELDS)
    assert [d.split(":")[0] for d in diffs] == ["body_mass", "geom_matid"], diffs
    spec = mjcf.cartpole.make_spec()
    spec.body("pole_1").name = "stick"
    renamed = compare.compare_models(spec.compile(), ref, ignore=compare.TEXTURE_FIELDS)
    assert any("names of mjOBJ_BODY" in d for d in renamed), renamed


def test_required_fields_are_compared():
    fields = set(compare.compared_fields(mjcf.build("point_mass")))
    assert set(compare.REQUIRED_FIELDS) <= fields


def test_build_rejects_unknown_domain():
    with pytest.raises(ValueError, match="acrobot, ball_in_cup, cartpole, cheetah"):
        mjcf.build("walkr")


@pytest.mark.parametrize("n_links", [2, 0, -3, 2.0, "6", None, True])
def test_swimmer_rejects_what_dm_control_rejects(n_links):
    with pytest.raises(ValueError, match="n_links must be an integer >= 3"):
        mjcf.swimmer.make_model(n_links)


@pytest.mark.parametrize("n_boxes", [0, 5, -1, 2.0, "2", None, True])
def test_stacker_rejects_box_counts_beyond_its_four_boxes(n_boxes):
    with pytest.raises(ValueError, match=r"n_boxes must be an integer in \[1, 4\]"):
        mjcf.stacker.make_model(n_boxes)


@pytest.mark.parametrize(
    ("n_bodies", "n_actuators", "match"),
    [
        (0, 1, "At least 1 body"),
        (2, 0, "At least 1 body"),
        (2, 3, "At most 1 actuator"),
        (2.0, 1, "n_bodies must be an integer"),
        (2, True, "n_actuators must be an integer"),
    ],
)
def test_lqr_rejects_what_dm_control_rejects(n_bodies, n_actuators, match):
    with pytest.raises(ValueError, match=match):
        mjcf.lqr.make_model(n_bodies, n_actuators)


def test_dog_says_what_to_install_without_dm_controls_assets(monkeypatch):
    monkeypatch.setattr(mjcf.dog.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install 'jaxcontrol\[dog\]'"):
        mjcf.dog.make_model()


def test_compare_detects_mass_damping_and_option():
    ref = _reference("cartpole", (("num_poles", 2),))
    model = copy.deepcopy(ref)
    _nudge(model.body_mass, 2)
    _nudge(model.dof_damping, 1)
    _nudge(model.opt.gravity, 2)
    model.opt.timestep = 0.02
    diffs = compare.compare_models(model, ref)
    for field in ("body_mass", "dof_damping", "opt.gravity", "opt.timestep"):
        assert any(d.startswith(field + ":") for d in diffs), (field, diffs)
    # A tolerance larger than the nudges hides them, but not the timestep.
    loose = compare.compare_models(model, ref, atol=1e-9)
    assert [d.split(":")[0] for d in loose] == ["opt.timestep"]


def test_compare_detects_a_name():
    spec = mjcf.pendulum.make_spec()
    spec.geom("base").name = "pedestal"
    diffs = compare.compare_models(spec.compile(), _reference("pendulum"))
    assert any("names of mjOBJ_GEOM" in d for d in diffs), diffs


@pytest.mark.parametrize("domain", mjcf.DOMAINS)
def test_compat_put_model(domain):
    model = mjcf.build(domain)
    flags = model.opt.enableflags
    adapted = compat.to_mjx_compatible(model)
    assert model.opt.enableflags == flags  # The input is left alone.
    assert adapted.opt.enableflags == flags & ~_ENERGY
    # The copy differs in the energy flag only.
    expected = [f"opt.enableflags: {flags & ~_ENERGY} != {flags}"]
    assert compare.compare_models(adapted, model) == (expected if flags & _ENERGY else [])
    mjx_model = compat.put_model(model)
    assert mjx_model.nq == model.nq


def test_mjx_model_differs_from_dm_controls_only_by_the_tasks_solver_caps(task):
    """Where a task lowers MJX's solver caps (`Task.solver_caps`, measured by
    benchmarks/solver_caps.py: docs/design/solver-caps.md), those two options are the only
    difference from dm_control's model; the CPU model keeps dm_control's."""
    env = jaxcontrol.load(*task)
    caps = env.task.solver_caps
    dm = compat.to_mjx_compatible(env.mj_model)
    ours = compat.to_mjx_compatible(env.mj_model, caps)
    expected = []
    if caps is not None:
        assert caps[0] <= dm.opt.iterations and caps[1] <= dm.opt.ls_iterations, caps
        for field, cap in zip(("iterations", "ls_iterations"), caps):
            if cap != getattr(dm.opt, field):
                expected.append(f"opt.{field}: {cap} != {getattr(dm.opt, field)}")
    assert compare.compare_models(ours, dm) == expected
    options = env.mjx_model.opt
    assert (int(options.iterations), int(options.ls_iterations)) == (
        ours.opt.iterations,
        ours.opt.ls_iterations,
    )
