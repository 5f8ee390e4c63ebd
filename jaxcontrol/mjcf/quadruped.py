"""Quadruped: an ellipsoid torso on four three-jointed legs, driven through tendons.

Each leg yaws and pitches at the hip and bends at the knee and ankle. A fixed tendon
equality couples pitch, knee and ankle; each leg's three actuators are first-order
filtered position servos on its yaw joint and on its "lift" and "extend" tendons.
Sensors: an IMU (accelerometer, gyro, velocimeter) at the torso, force and torque at
each toe, the torso's subtree centre of mass, and 20 rangefinders looking ahead.

As dm_control's procedural model, `make_model` keeps only what a task uses: the floor's
size, the height-field terrain (escape), the rangefinder sensors (escape), and the four
walls, the ball and the target (fetch). The 201 x 201 height field asset is always there.
"""

from __future__ import annotations

import mujoco

from jaxcontrol.mjcf import common

_HINGE = mujoco.mjtJoint.mjJNT_HINGE
_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_CYLINDER = mujoco.mjtGeom.mjGEOM_CYLINDER
_ELLIPSOID = mujoco.mjtGeom.mjGEOM_ELLIPSOID
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_EULER = mujoco.mjtOrientation.mjORIENTATION_EULER
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
_LIMITED = mujoco.mjtLimited.mjLIMITED_TRUE
_SITE = mujoco.mjtObj.mjOBJ_SITE

#: dm_control's default floor half-size (the fetch task keeps it).
DEFAULT_FLOOR_SIZE = 15
#: The terrain height field: rows, columns, and size (x, y, top z, base depth).
HFIELD_SHAPE = (201, 201)
HFIELD_SIZE = (30, 30, 5, 0.1)
LEGS = ("front_left", "front_right", "back_right", "back_left")
WALLS = ("wall_px", "wall_py", "wall_nx", "wall_ny")

# The default classes of quadruped.xml, with inheritance resolved.
_MAIN_GEOM = {"solimp": (0.9, 0.99, 0.003, 0.5, 2), "solref": (0.01, 1)}
_BODY_GEOM = {
    **_MAIN_GEOM,
    "type": _CAPSULE,
    "size": (0.08, 0, 0),
    "condim": 1,
    "material": "self",
    "density": 500,
}
_BODY_JOINT = {
    "type": _HINGE,
    "damping": (30, 0, 0),
    "armature": 0.01,
    "limited": _LIMITED,
    "solimp_limit": (0, 0.99, 0.01, 0.5, 2),
}
_YAW = {**_BODY_JOINT, "axis": (0, 0, 1), "range": (-50, 50)}
_PITCH = {**_BODY_JOINT, "axis": (0, 1, 0), "range": (-20, 60)}
_HIP_GEOM = {**_BODY_GEOM, "fromto": (0, 0, 0, 0.3, 0, 0.11)}
_KNEE_JOINT = {**_BODY_JOINT, "axis": (0, 1, 0), "range": (-60, 50)}
_KNEE_GEOM = {**_BODY_GEOM, "size": (0.065, 0, 0), "fromto": (0, 0, 0, 0.25, 0, -0.25)}
_ANKLE_JOINT = {**_BODY_JOINT, "axis": (0, 1, 0), "range": (-45, 55)}
_ANKLE_GEOM = {**_BODY_GEOM, "size": (0.055, 0, 0), "fromto": (0, 0, 0, 0, 0, -0.25)}
_TOE_GEOM = {
    **_BODY_GEOM,
    "type": _SPHERE,
    "size": (0.08, 0, 0),
    "material": "effector",
    "friction": (1.5, 0.005, 0.0001),
}
_TOE_SITE = {"type": _SPHERE, "size": (0.084, 0.005, 0.005), "material": "site", "group": 4}
_RANGEFINDER_SITE = {"type": _CAPSULE, "size": (0.005, 0.1, 0.005), "material": "site", "group": 4}
_WALL_GEOM = {**_MAIN_GEOM, "type": _PLANE, "material": "decoration"}

# Legs: name, hip position, hip yaw about z (degrees).
_HIPS = (
    ("front_left", (0.2, 0.2, 0), 45),
    ("front_right", (0.2, -0.2, 0), -45),
    ("back_right", (-0.2, -0.2, 0), -135),
    ("back_left", (-0.2, 0.2, 0), 135),
)
# Walls: name, position, z axis, size.
_WALLS = (
    ("wall_px", (-15.7, 0, 0.7), (1, 0, 1), (1, 15, 0.5)),
    ("wall_py", (0, -15.7, 0.7), (0, 1, 1), (15, 1, 0.5)),
    ("wall_nx", (15.7, 0, 0.7), (-1, 0, 1), (1, 15, 0.5)),
    ("wall_ny", (0, 15.7, 0.7), (0, -1, 1), (15, 1, 0.5)),
)
# Rangefinder sites: name -> fromto (dm_control's rf_11 repeats rf_10's start).
_RANGEFINDERS = {
    f"rf_{row}{col}": ((0.41, y, z0, x1, 0, z1))
    for row, (z0, x1, z1) in enumerate(
        ((0.11, 0.34, 0.115), (0.1, 0.36, 0.11), (0.09, 0.38, 0.105), (0.08, 0.4, 0.1))
    )
    for col, y in enumerate((-0.02, -0.01, 0, 0.01, 0.02))
}
_RANGEFINDERS["rf_11"] = (0.41, -0.02, 0.1, 0.36, 0, 0.11)
# Actuators: kind -> (control range, transmission: joint or tendon).
_ACTUATORS = (
    ("yaw", (-1, 1), mujoco.mjtTrn.mjTRN_JOINT),
    ("lift", (-1, 1.1), mujoco.mjtTrn.mjTRN_TENDON),
    ("extend", (-0.8, 0.8), mujoco.mjtTrn.mjTRN_TENDON),
)


def _orient(element, kind, value) -> None:
    element.alt.type = kind
    setattr(element.alt, {_EULER: "euler", _XYAXES: "xyaxes", _ZAXIS: "zaxis"}[kind], value)


def _add_assets(spec: mujoco.MjSpec) -> None:
    spec.visual.rgba.rangefinder = (1, 1, 0.1, 0.1)
    spec.visual.map.znear = 0.005
    spec.visual.map.zfar = 20
    nrow, ncol = HFIELD_SHAPE
    # No file: the compiler would refuse; MJCF gives such a height field zero data.
    spec.add_hfield(
        name="terrain", nrow=nrow, ncol=ncol, size=HFIELD_SIZE, userdata=[0.0] * (nrow * ncol)
    )
    spec.add_texture(
        name="ball",
        type=mujoco.mjtTexture.mjTEXTURE_CUBE,
        builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
        mark=mujoco.mjtMark.mjMARK_CROSS,
        width=151,
        height=151,
        rgb1=(0.1, 0.1, 0.1),
        rgb2=(0.9, 0.9, 0.9),
        markrgb=(1, 1, 1),
    )
    ball = spec.add_material(name="ball")
    ball.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "ball"


def _add_arena(world: mujoco.MjsBody, floor_size: float, terrain: bool, walls_and_ball: bool):
    world.add_geom(
        name="floor",
        type=_PLANE,
        size=(floor_size, floor_size, 0.5),
        material="grid",
        **_MAIN_GEOM,
    )
    if walls_and_ball:
        for name, pos, zaxis, size in _WALLS:
            _orient(world.add_geom(name=name, pos=pos, size=size, **_WALL_GEOM), _ZAXIS, zaxis)
        world.add_site(
            name="target",
            type=_CYLINDER,
            size=(0.4, 0.06, 0.005),
            pos=(0, 0, 0.05),
            material="target",
        )
    if terrain:
        world.add_geom(
            name="terrain",
            type=mujoco.mjtGeom.mjGEOM_HFIELD,
            hfieldname="terrain",
            rgba=(0.2, 0.3, 0.4, 1),
            pos=(0, 0, -0.01),
            **_MAIN_GEOM,
        )
    camera = world.add_camera(name="global", pos=(-10, 10, 10), mode=_TRACKCOM)
    _orient(camera, _XYAXES, (-1, -1, 0, 1, 0, 1))


def _add_torso(world: mujoco.MjsBody) -> mujoco.MjsBody:
    torso = world.add_body(name="torso", pos=(0, 0, 0.57))
    torso.add_freejoint(name="root")
    for name, pos, xyaxes, fovy in (
        ("x", (-1.7, 0, 1), (0, -1, 0, 0.75, 0, 1), None),
        ("y", (0, 4, 2), (-1, 0, 0, 0, -0.5, 1), None),
        ("egocentric", (0.3, 0, 0.11), (0, -1, 0, 0.4, 0, 1), 60),
    ):
        camera = torso.add_camera(name=name, pos=pos)
        if name != "egocentric":
            camera.mode = _TRACKCOM
        if fovy is not None:
            camera.fovy = fovy
        _orient(camera, _XYAXES, xyaxes)
    torso.add_light(name="light", pos=(0, 0, 4), mode=_TRACKCOM)
    for side, y in (("r", -0.07), ("l", 0.07)):
        torso.add_geom(
            **{
                **_BODY_GEOM,
                "name": f"eye_{side}",
                "type": _CYLINDER,
                "size": (0.05, 0, 0),
                "fromto": (0.1, y, 0.12, 0.31, y, 0.08),
                "mass": 0,
            }
        )
        pupil = torso.add_site(
            name=f"pupil_{side}",
            type=_SPHERE,
            size=(0.033, 0.005, 0.005),
            pos=(0.3, y, 0.08),
            material="eye",
        )
        _orient(pupil, _ZAXIS, (1, 0, 0))
    torso.add_site(
        name="workspace",
        type=_SPHERE,
        size=(0.3, 0.3, 0.3),
        material="site",
        pos=(0.8, 0, -0.2),
        group=3,
    )
    for name, fromto in _RANGEFINDERS.items():
        torso.add_site(name=name, fromto=fromto, **_RANGEFINDER_SITE)
    torso.add_geom(
        **{
            **_BODY_GEOM,
            "name": "torso",
            "type": _ELLIPSOID,
            "size": (0.3, 0.27, 0.2),
            "density": 1000,
        }
    )
    torso.add_site(name="torso_touch", type=_BOX, size=(0.26, 0.26, 0.26), rgba=(0, 0, 1, 0))
    torso.add_site(name="torso", size=(0.05, 0.005, 0.005), rgba=(1, 0, 0, 1))
    return torso


def _add_leg(torso: mujoco.MjsBody, leg: str, pos, yaw: float) -> None:
    hip = torso.add_body(name=f"hip_{leg}", pos=pos)
    _orient(hip, _EULER, (0, 0, yaw))
    hip.add_joint(name=f"yaw_{leg}", **_YAW)
    hip.add_joint(name=f"pitch_{leg}", **_PITCH)
    hip.add_geom(name=f"thigh_{leg}", **_HIP_GEOM)
    knee = hip.add_body(name=f"knee_{leg}", pos=(0.3, 0, 0.11))
    knee.add_joint(name=f"knee_{leg}", **_KNEE_JOINT)
    knee.add_geom(name=f"shin_{leg}", **_KNEE_GEOM)
    ankle = knee.add_body(name=f"ankle_{leg}", pos=(0.25, 0, -0.25))
    ankle.add_joint(name=f"ankle_{leg}", **_ANKLE_JOINT)
    ankle.add_geom(name=f"foot_{leg}", **_ANKLE_GEOM)
    toe = ankle.add_body(name=f"toe_{leg}", pos=(0, 0, -0.3))
    toe.add_geom(name=f"toe_{leg}", **_TOE_GEOM)
    toe.add_site(name=f"toe_{leg}", **_TOE_SITE)


def _add_ball(world: mujoco.MjsBody) -> None:
    ball = world.add_body(name="ball", pos=(0, 0, 3))
    ball.add_freejoint(name="ball_root")
    ball.add_geom(
        **{
            **_MAIN_GEOM,
            "name": "ball",
            "type": _SPHERE,
            "size": (0.15, 0, 0),
            "material": "ball",
            "priority": 1,
            "condim": 6,
            "friction": (0.7, 0.005, 0.005),
            "solref": (-10000, -30),
        }
    )
    ball.add_light(name="ball_light", pos=(0, 0, 4), mode=_TRACKCOM)


def _add_tendons(spec: mujoco.MjSpec) -> None:
    for leg in LEGS:
        coupling = spec.add_tendon(name=f"coupling_{leg}")
        for joint in ("pitch", "knee", "ankle"):
            coupling.wrap_joint(f"{joint}_{leg}", 0.333)
    for leg in LEGS:
        extend = spec.add_tendon(name=f"extend_{leg}")
        for joint, coef in (("pitch", 0.25), ("knee", -0.5), ("ankle", 0.25)):
            extend.wrap_joint(f"{joint}_{leg}", coef)
        lift = spec.add_tendon(name=f"lift_{leg}")
        for joint, coef in (("pitch", 0.5), ("ankle", -0.5)):
            lift.wrap_joint(f"{joint}_{leg}", coef)
    for leg in LEGS:
        spec.add_equality(
            name=f"coupling_{leg}",
            type=mujoco.mjtEq.mjEQ_TENDON,
            name1=f"coupling_{leg}",
            solimp=(0.95, 0.99, 0.01, 0.5, 2),
            solref=(0.005, 0.5),
        )


def _add_actuators(spec: mujoco.MjSpec) -> None:
    for leg in LEGS:
        for kind, ctrlrange, trntype in _ACTUATORS:
            actuator = spec.add_actuator(
                name=f"{kind}_{leg}",
                target=f"{kind}_{leg}",
                trntype=trntype,
                ctrllimited=_LIMITED,
                ctrlrange=ctrlrange,
                dyntype=mujoco.mjtDyn.mjDYN_FILTER,
                biastype=mujoco.mjtBias.mjBIAS_AFFINE,
            )
            actuator.gainprm[0] = 1000
            actuator.biasprm[:3] = (0, -1000, 0)
            actuator.dynprm[0] = 0.1


def _add_sensors(spec: mujoco.MjSpec, rangefinders: bool) -> None:
    sensor = mujoco.mjtSensor
    for name, kind in (
        ("imu_accel", sensor.mjSENS_ACCELEROMETER),
        ("imu_gyro", sensor.mjSENS_GYRO),
        ("velocimeter", sensor.mjSENS_VELOCIMETER),
    ):
        spec.add_sensor(name=name, type=kind, objtype=_SITE, objname="torso")
    for prefix, kind in (("force", sensor.mjSENS_FORCE), ("torque", sensor.mjSENS_TORQUE)):
        for leg in LEGS:
            spec.add_sensor(
                name=f"{prefix}_toe_{leg}", type=kind, objtype=_SITE, objname=f"toe_{leg}"
            )
    spec.add_sensor(
        name="center_of_mass",
        type=sensor.mjSENS_SUBTREECOM,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname="torso",
    )
    if rangefinders:
        for name in _RANGEFINDERS:
            rangefinder = spec.add_sensor(
                name=name, type=sensor.mjSENS_RANGEFINDER, objtype=_SITE, objname=name
            )
            rangefinder.intprm[0] = 1  # MJCF's default data spec: the distance only


def make_spec(
    floor_size: float | None = None,
    terrain: bool = False,
    rangefinders: bool = False,
    walls_and_ball: bool = False,
) -> mujoco.MjSpec:
    """Returns the quadruped spec with dm_control's per-task edits.

    Args:
        floor_size: The floor's half-size in x and y (None: 15).
        terrain: Add the height-field terrain geom (escape).
        rangefinders: Add the 20 rangefinder sensors (escape).
        walls_and_ball: Add the four walls, the ball and the target (fetch).
    """
    spec = common.new_spec("quadruped")
    _add_assets(spec)
    spec.option.timestep = 0.005
    world = spec.worldbody
    size = DEFAULT_FLOOR_SIZE if floor_size is None else floor_size
    _add_arena(world, size, terrain, walls_and_ball)
    torso = _add_torso(world)
    for leg, pos, yaw in _HIPS:
        _add_leg(torso, leg, pos, yaw)
    if walls_and_ball:
        _add_ball(world)
    _add_tendons(spec)
    _add_actuators(spec)
    _add_sensors(spec, rangefinders)
    return spec


def make_model(
    floor_size: float | None = None,
    terrain: bool = False,
    rangefinders: bool = False,
    walls_and_ball: bool = False,
) -> mujoco.MjModel:
    """Returns the compiled quadruped model (see `make_spec`)."""
    return common.compile_spec(make_spec(floor_size, terrain, rangefinders, walls_and_ball))
