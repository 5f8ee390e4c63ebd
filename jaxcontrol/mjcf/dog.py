"""Dog: a Pharaoh hound's skeleton, 38 filtered torque actuators and a skinned body.

The free-floating torso carries the ribcage, the lumbar spine (L_1..L_7) down to the
pelvis, the hind legs and the 21 tail vertebrae (Ca_1..Ca_21), the neck (C_7..C_1) up
to the skull and jaw, and the scapulae of the forelegs: 62 bodies and 73 hinge joints
(angles in degrees, as in dm_control). Each leg has a hip (scapula and shoulder), knee
(elbow), ankle (wrist) and toe (finger). The spine, neck and tail are driven through
8 fixed tendons (extend, bend, twist), each spreading one actuator over every other
vertebra. All 38 actuators are first-order filtered torque (gain-only) actuators.
Sensors: an IMU at the head, the torso's subtree linear velocity and angular momentum,
touch at the soles and palms, and the forces at the four paws.

Geoms: 290 (296 with fetch's ball, target and walls). Visual or inertial only, never
colliding (contype and conaffinity 0): the 162 bone meshes, the irises and pupils and
the four paw-anchor boxes (170 geoms). Colliding (120): the floor; 102 collision
primitives (capsules, boxes, ellipsoids: limbs, paws, head, teeth, tail) with contype
and conaffinity 1; and 17 "non-self" primitives with conaffinity 0 (the torso
ellipsoid, the 14 vertebra spheres, the 2 pelvis capsules), which touch the floor and
the other primitives but not one another. The skin (dm_control's dog_skin.skn) is only
drawn over the bones.

The meshes, the skin and its two textures are dm_control's files, read at build time
from the installed dm-control package (`pip install 'jaxcontrol[dog]'`); every other
part of the model is built here. As dm_control's `make_model`, `make_spec` takes the
floor's size and whether to leave out fetch's ball, target, walls and their cameras.
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib

import mujoco

from jaxcontrol.mjcf import common

_MESH = mujoco.mjtGeom.mjGEOM_MESH
_PLANE = mujoco.mjtGeom.mjGEOM_PLANE
_SPHERE = mujoco.mjtGeom.mjGEOM_SPHERE
_CAPSULE = mujoco.mjtGeom.mjGEOM_CAPSULE
_ELLIPSOID = mujoco.mjtGeom.mjGEOM_ELLIPSOID
_CYLINDER = mujoco.mjtGeom.mjGEOM_CYLINDER
_BOX = mujoco.mjtGeom.mjGEOM_BOX
_EULER = mujoco.mjtOrientation.mjORIENTATION_EULER
_XYAXES = mujoco.mjtOrientation.mjORIENTATION_XYAXES
_ZAXIS = mujoco.mjtOrientation.mjORIENTATION_ZAXIS
_TRACKCOM = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
_TARGETBODYCOM = mujoco.mjtCamLight.mjCAMLIGHT_TARGETBODYCOM
_LIMITED = mujoco.mjtLimited.mjLIMITED_TRUE
_SITE = mujoco.mjtObj.mjOBJ_SITE
_BODY = mujoco.mjtObj.mjOBJ_BODY

#: dm_control's default floor half-size (the fetch task keeps it).
DEFAULT_FLOOR_SIZE = 10
#: Where the mesh, skin and texture files lie inside the dm_control package.
ASSET_SUBDIR = ("suite", "dog_assets")
_SKIN_FILE = "dog_skin.skn"
_SKIN_TEXTURE_FILE = "skin_texture.png"
_BALL_TEXTURE_FILE = "tennis_ball.png"
# Left is +y. An entry's left value is mirrored through the sagittal plane for the right.
SIDES = (("L", 1), ("R", -1))

# The default classes of dog.xml, with inheritance resolved.
_MAIN_GEOM = {
    "friction": (0.9, 0.005, 0.0001),
    "solref": (0.01, 1),
    "solimp": (0.95, 0.99, 0.001, 0.5, 2),
}
_BONE = {
    **_MAIN_GEOM,
    "type": _MESH,
    "contype": 0,
    "conaffinity": 0,
    "group": 5,
    "rgba": (0.5, 0.5, 0.5, 1),
    "density": 1100,
}
_LIGHT_BONE = {**_BONE, "density": 300}
_VISIBLE_BONE = {**_BONE, "group": 1}
_COLLISION = {
    **_MAIN_GEOM,
    "type": _CAPSULE,
    "contype": 1,
    "conaffinity": 1,
    "condim": 1,
    "group": 3,
    "rgba": (0, 0.5, 0.5, 1),
    "density": 300,
}
_FOOT = {**_COLLISION, "rgba": (0, 0.6, 0.4, 1), "solimp": (0.9, 0.95, 0.001, 0.5, 2)}
_TOOTH = {**_COLLISION, "condim": 6, "priority": 2, "friction": (0.5, 0.01, 0.01)}
_NONSELF = {**_COLLISION, "conaffinity": 0}
_ANCHOR = {**_FOOT, "type": _BOX, "contype": 0, "conaffinity": 0, "size": (0.005, 0.005, 0.005)}
_BOUNCY = {
    **_MAIN_GEOM,
    "condim": 6,
    "priority": 1,
    "friction": (0.5, 0.001, 0.001),
    "solref": (-5000, -5),
    "solimp": (0.5, 0.9, 0.01, 0.5, 2),
}
_VELCRO = {**_MAIN_GEOM, "condim": 6, "priority": 2, "friction": (0.5, 0.01, 0.01)}
_SENSOR_SITE = {"group": 4}
_MAIN_JOINT = {
    "limited": _LIMITED,
    "solref_limit": (0.01, 1),
    "solimp_limit": (0.9, 0.99, 0.01, 0.5, 2),
    "stiffness": 0.1,
    "armature": 0.0001,
    "damping": 0.01,
}
_LUMBAR = {"group": 3, "pos": (0.012, 0, 0.01), "armature": 0.01, "damping": 3.0}
_CERVICAL = {"group": 3, "stiffness": 4.0, "armature": 0.01, "damping": 3.0}
_CAUDAL = {"group": 3, "springdamper": (0.001, 50), "range": (-15, 15)}
_HIP = {"stiffness": 5.0, "armature": 0.01, "damping": 0.5}
_SCAPULA = {"stiffness": 10.0, "damping": 1.5}
_SHOULDER = {"stiffness": 5.0, "damping": 1.0}
# Joint and actuator classes: name -> (joint attributes over the main class, the gain
# of the class's actuator). Stiffness and damping are the polynomials' first terms.
_CLASSES = {
    "lumbar_extend": ({**_LUMBAR, "stiffness": 30.0, "range": (-24.5, 24.5)}, 60),
    "lumbar_bend": ({**_LUMBAR, "stiffness": 45.0, "range": (-21, 21)}, 40),
    "lumbar_twist": ({**_LUMBAR, "stiffness": 45.0, "range": (-16.333, 16.333)}, 40),
    "cervical_extend": ({**_CERVICAL, "range": (-17.5, 61.25)}, 20),
    "cervical_bend": ({**_CERVICAL, "range": (-35, 35)}, 20),
    "cervical_twist": ({**_CERVICAL, "range": (-23.333, 23.333)}, 14),
    "caudal_extend": (_CAUDAL, 0.5),
    "caudal_bend": (_CAUDAL, 0.5),
    "atlas": ({"axis": (0, -1, 0), "stiffness": 2.0, "range": (-15, 30), "damping": 0.2}, 10),
    "mandible": ({"stiffness": 2.0, "range": (-15, 20), "springref": -11.0, "damping": 0.2}, 3),
    "hip_supinate": ({**_HIP, "range": (-20, 20)}, 10),
    "hip_abduct": ({**_HIP, "range": (-30, 90)}, 10),
    "hip_extend": ({**_HIP, "range": (-130, 60)}, 40),
    "knee": ({"range": (-120, 10), "damping": 0.5}, 30),
    "ankle": ({"range": (-100, 20), "damping": 0.3}, 20),
    "toe": ({"stiffness": 2.0, "range": (-15, 70), "damping": 0.02}, 2),
    "scapula_supinate": ({**_SCAPULA, "range": (-15, 35)}, 30),
    "scapula_abduct": ({**_SCAPULA, "range": (-15, 20)}, 30),
    "scapula_extend": ({**_SCAPULA, "range": (-30, 30)}, 30),
    "shoulder_supinate": ({**_SHOULDER, "range": (-30, 15)}, 30),
    "shoulder_extend": ({**_SHOULDER, "range": (-40, 60)}, 30),
    "elbow": ({"range": (-100, 30), "damping": 0.3}, 20),
    "wrist": ({"range": (-110, 10), "damping": 0.2}, 10),
    "finger": ({"stiffness": 1.0, "range": (-15, 100), "damping": 0.02}, 2),
}
_SPINE_AXES = {"extend": (0, 1, 0), "bend": (0, 0, 1), "twist": (1, 0, 0)}

# Lumbar vertebrae L_1..L_7 (each the child of the last): body position, bone position.
# Odd vertebrae extend and bend, even ones twist.
_LUMBAR_VERTEBRAE = (
    ((-0.1235, 0, 0.09287), (0.083094, 0, -0.50809)),
    ((-0.023024, 0, 0.00096026), (0.10612, 0, -0.50905)),
    ((-0.0233, 0, 0.00039242), (0.12942, 0, -0.50944)),
    ((-0.024246, 0, -0.00041778), (0.15366, 0, -0.50903)),
    ((-0.024458, 0, -0.00014988), (0.17812, 0, -0.50888)),
    ((-0.023445, 0, 0.00066898), (0.20157, 0, -0.50954)),
    ((-0.026399, 0, 0.0014219), (0.22797, 0, -0.51097)),
)
# Cervical vertebrae C_7..C_1, from the torso to the skull: body position, bone
# position, collision sphere radius, joint position, and the bend (odd vertebrae, which
# also extend about y) or twist (even) axis. C_7..C_4 are light bones.
_CERVICAL_VERTEBRAE = (
    ((0.1433, 0, 0.0869), (-0.18371, 0, -0.50212), 0.07, (-0.015711, 0, -0.0016227), (-0.10274, 0, 0.99471)),
    ((0.018193, 0, 0.0093423), (-0.2019, 0, -0.51146), 0.064, (-0.013896, 0, -0.0071356), (0.88957, 0, 0.4568)),
    ((0.013355, 0, 0.025525), (-0.21525, 0, -0.53699), 0.058, (-0.0074555, 0, -0.01425), (-0.88605, 0, 0.46359)),
    ((0.010919, 0, 0.034482), (-0.22617, 0, -0.57147), 0.052, (-0.0050618, 0, -0.015985), (0.30188, 0, 0.95334)),
    ((0.0062566, 0, 0.036103), (-0.23243, 0, -0.60757), 0.046, (-0.0028252, 0, -0.016302), (-0.98531, 0, 0.17075)),
    ((0.0075908, 0, 0.036994), (-0.24002, 0, -0.64457), 0.04, (-0.0048286, 0, -0.023533), (0.201, 0, 0.97959)),
    ((0.023095, 0, 0.032123), (-0.26312, 0, -0.67669), 0.034, (-0.011471, 0, -0.015955), (-0.81194, 0, 0.58375)),
)  # fmt: skip
# Caudal vertebrae Ca_1..Ca_21: body position, bone position, joint position, joint
# axis (odd vertebrae extend, even ones bend), collision capsule size, position, quat.
_CAUDAL_VERTEBRAE = (
    ((0.0082462, 0, 0.04354), (0.29994, 0, -0.51971), (0.011214, 0, -0.0020078), (0, 1, 0), (0.013645, 0.0064555, 0.011392), (3.5794e-06, 0, -3.8864e-06), (0, 0.4196, 0, 0.90771)),
    ((-0.01491, 0, 4.6796e-05), (0.31485, 0, -0.51975), (0.011646, 0, -3.6552e-05), (-0.0031385, 0, -1), (0.012209, 0.0092225, 0.011646), (3.1789e-06, 0, 2.9096e-06), (0, 0.51164, 0, 0.8592)),
    ((-0.01408, 0, -0.0010873), (0.32893, 0, -0.51867), (0.01091, 0, 0.00084249), (0, 1, 0), (0.011207, 0.011436, 0.010942), (2.8069e-06, 0, -4.389e-06), (0, 0.44901, 0, 0.89353)),
    ((-0.012508, 0, -0.002837), (0.34144, 0, -0.51583), (0.010088, 0, 0.0022882), (0.2212, 0, -0.97523), (0.0092021, 0.012461, 0.010344), (4.8867e-06, 0, -1.4063e-06), (0, 0.39441, 0, 0.91894)),
    ((-0.013783, -1.652e-06, -0.0065348), (0.35522, 1.687e-06, -0.50929), (0.010037, 1.203e-06, 0.0047586), (0, 1, 0), (0.007544, 0.012356, 0.011108), (1.9298e-06, 0, 3.8335e-06), (0.0073058, 0.50965, 0.0050246, 0.86034)),
    ((-0.016384, -1.0009e-05, -0.0098338), (0.3716, 1.1696e-05, -0.49946), (0.0082633, 5.0481e-06, 0.0049597), (0.51463, 0, -0.85741), (0.0073248, 0.012258, 0.0096375), (-1.8304e-06, 0, 0), (-0.014581, 0.47369, -0.007547, 0.88054)),
    ((-0.016206, 1.4193e-05, -0.011471), (0.38781, -2.4968e-06, -0.48799), (0.0081104, -7.103e-06, 0.0057407), (0, 1, 0), (0.0072624, 0.011349, 0.0099365), (1.9008e-06, 0, -8.7709e-07), (0.62321, 0.32952, 0.32581, 0.62998)),
    ((-0.018452, 0.00021258, -0.013121), (0.40626, -0.00021508, -0.47487), (0.0089967, -0.00010365, 0.0063975), (0.57949, 0, -0.81493), (0.0052297, 0.010249, 0.01104), (-3.6054e-07, 0, -1.5754e-06), (-0.22403, 0.40034, -0.10176, 0.88271)),
    ((-0.019834, -1.086e-05, -0.017678), (0.42609, -0.00020422, -0.45719), (0.0090216, 4.9397e-06, 0.008041), (0, 1, 0), (0.005861, 0.01177, 0.012085), (-4.8466e-06, 0, 0), (0.7194, 0.24021, 0.29795, 0.57964)),
    ((-0.023389, 1.1411e-05, -0.022029), (0.44948, -0.00021563, -0.43516), (0.012071, -5.8892e-06, 0.011369), (0.68563, 0, -0.72795), (0.0060592, 0.014866, 0.016582), (-3.8011e-06, 0, 8.0203e-07), (-0.055024, 0.39716, -0.023434, 0.9158)),
    ((-0.024196, -5.3444e-06, -0.022377), (0.47368, -0.00021028, -0.41278), (0.011106, 2.453e-06, 0.010271), (0, 1, 0), (0.0056974, 0.016024, 0.015127), (0, 0, 3.6296e-06), (-0.044239, 0.41597, -0.020132, 0.90808)),
    ((-0.024081, -5.5423e-05, -0.019678), (0.49776, -0.00015486, -0.39311), (0.011708, 2.6945e-05, 0.0095669), (0.63276, 0, -0.77434), (0.0052969, 0.01585, 0.015119), (-1.1154e-06, 0, -4.2092e-06), (-0.067175, 0.43232, -0.032219, 0.89864)),
    ((-0.02323, -1.2027e-05, -0.017776), (0.52099, -0.00014283, -0.37533), (0.010237, 5.3e-06, 0.0078334), (0, 1, 0), (0.0050115, 0.014033, 0.01289), (-1.5794e-06, 0, 0), (0.65681, 0.301, 0.32349, 0.61102)),
    ((-0.023245, -9.0352e-05, -0.018326), (0.54424, -5.2481e-05, -0.357), (0.012094, 4.7007e-05, 0.0095343), (0.61911, 0, -0.78529), (0.0048495, 0.014433, 0.0154), (3.9059e-06, 0, 3.612e-06), (0.68073, 0.29564, 0.3441, 0.57516)),
    ((-0.024641, 5.041e-05, -0.014254), (0.56888, -0.00010289, -0.34275), (0.010103, -2.0668e-05, 0.005844), (0, 1, 0), (0.0040575, 0.013822, 0.011671), (3.3718e-06, 0, -4.4389e-07), (-0.083613, 0.55813, -0.059816, 0.82336)),
    ((-0.023338, -3.1369e-05, -0.0085014), (0.59221, -7.1522e-05, -0.33425), (0.011122, 1.4949e-05, 0.0040515), (0.34227, 0, -0.9396), (0.0037779, 0.014767, 0.011837), (-4.2489e-06, 0, -1.8936e-06), (-0.085016, 0.5886, -0.065817, 0.80125)),
    ((-0.024444, -1.4083e-05, -0.0053673), (0.61666, -5.7439e-05, -0.32888), (0.012585, 7.2505e-06, 0.0027633), (0, 1, 0), (0.0041188, 0.01702, 0.012885), (1.5136e-06, 0, 8.4095e-07), (-0.1046, 0.65534, -0.095041, 0.74199)),
    ((-0.02601, 1.3546e-05, -0.0022059), (0.64267, -7.0985e-05, -0.32667), (0.013759, -7.1658e-06, 0.0011669), (0.084506, 0, -0.99642), (0.0041192, 0.016385, 0.013809), (1.2295e-06, 0, 4.9815e-06), (0.51343, 0.48795, 0.4862, 0.51176)),
    ((-0.026655, 3.2028e-05, 0.00068575), (0.66932, -0.00010301, -0.32736), (0.013735, -1.6504e-05, -0.00035336), (0, 1, 0), (0.0036068, 0.016752, 0.01374), (-3.6363e-06, 0, 7.3241e-07), (-0.064025, 0.75105, -0.07658, 0.65266)),
    ((-0.026838, -6.5667e-05, 0.0040269), (0.69616, -3.7346e-05, -0.33139), (0.012076, 2.9547e-05, -0.0018119), (-0.14838, 0, -0.98893), (0.0027962, 0.01437, 0.012211), (-1.9507e-06, 0, -2.415e-06), (-0.082662, 0.75899, -0.098524, 0.63828)),
    ((-0.020294, 4.4629e-05, 0.0048627), (0.71646, -8.1976e-05, -0.33625), (0.010185, -2.2399e-05, -0.0024405), (0, 1, 0), (0.0023331, 0.014653, 0.010474), (3.7435e-06, 0, 2.826e-07), (-0.017531, 0.80227, -0.023589, 0.59624)),
)  # fmt: skip

# Explicit inertials (mass, position, quat, diagonal inertia); other bodies' come from
# their geoms.
_INERTIALS = {
    "torso": (2.6757659178332736, (-1.5426e-07, 0, 2.4738e-07), (0.45517, 0.54113, 0.54113, 0.45517), (0.026026, 0.023326, 0.011595)),
    "skull": (0.3579225852102398, (-0.0023917, 0, 0.0023167), (0, 0.81647, 0, 0.57739), (0.00072864, 0.00064468, 0.00028384)),
    "jaw": (0.1332899051442993, (-0.0015134, 0, -0.00096033), (0, 0.89706, 0, 0.44191), (0.0002144, 0.00018551, 6.3481e-05)),
}  # fmt: skip
# Head primitives: name, type, size, position, euler.
_SKULL_PRIMITIVES = (
    ("skull0", _ELLIPSOID, (0.06, 0.06, 0.04), (-0.02, 0, 0.01), (0, 10, 0)),
    ("skull1", _CAPSULE, (0.015, 0.04, 0.015), (0.06, 0, -0.01), (0, 110, 0)),
    ("skull2", _BOX, (0.03, 0.028, 0.008), (0.02, 0, -0.03), (0, 0, 0)),
    ("skull3", _BOX, (0.02, 0.018, 0.006), (0.07, 0, -0.03), (0, 0, 0)),
    ("skull4", _BOX, (0.005, 0.015, 0.004), (0.095, 0, -0.03), (0, 0, 0)),
)
_JAW_PRIMITIVES = (
    ("jaw0", _BOX, (0.03, 0.028, 0.008), (-0.03, 0, 0.01), (0, 55, 0)),
    ("jaw1", _BOX, (0.02, 0.022, 0.005), (0, 0, -0.012), (0, 30, 0)),
    ("jaw2", _BOX, (0.02, 0.018, 0.005), (0.03, 0, -0.028), (0, 25, 0)),
    ("jaw3", _BOX, (0.015, 0.013, 0.003), (0.052, 0, -0.035), (0, 15, 0)),
)
# Teeth, ellipsoids fitted to each tooth (so not exact mirror images): name, size,
# position, quat. dm_control's names, irregular ones included.
_UPPER_TEETH = (
    ("Canine_Top_L", (0.0025499, 0.0043559, 0.014793), (0.084079, 0.014638, -0.037877), (0.72471, -0.012602, -0.14496, 0.67351)),
    ("Canine_Top_R", (0.0025499, 0.0043559, 0.014793), (0.084079, -0.014638, -0.037877), (0.67351, -0.14496, -0.012602, 0.72471)),
    ("Incisors_Top_L_1", (0.0017755, 0.0021365, 0.0054398), (0.10162, 0.0027916, -0.038244), (0.97791, 0.023841, -0.19858, -0.060711)),
    ("Incisors_Top_L_2", (0.0020262, 0.0022059, 0.0057043), (0.10006, 0.0077809, -0.038121), (0.97744, 0.11358, -0.1769, 0.020556)),
    ("Incisors_Top_L_3", (0.0023739, 0.0027155, 0.0070594), (0.095636, 0.012224, -0.038721), (0.92895, 0.17418, 0.005002, -0.32664)),
    ("Incisors_Top_R_1", (0.0017755, 0.0021365, 0.0054398), (0.10162, -0.0027915, -0.038244), (0.97791, -0.023841, -0.19858, 0.060711)),
    ("Incisors_Top_R_2", (0.0020262, 0.0022059, 0.0057043), (0.10006, -0.0077808, -0.038121), (0.97744, -0.11358, -0.1769, -0.020556)),
    ("Incisors_Top_R_3", (0.0023739, 0.0027155, 0.0070594), (0.095636, -0.012224, -0.038721), (0.92895, -0.17418, 0.005002, 0.32664)),
    ("Molars_Top_1L", (0.0046165, 0.0062275, 0.0065298), (0.0197, 0.027961, -0.040326), (-0.16961, 0.79395, 0.22795, 0.53751)),
    ("Molars_Top_2L", (0.003681, 0.0041279, 0.0046702), (0.010745, 0.026296, -0.035745), (0.7973, 0.5314, 0.26968, 0.095941)),
    ("Molars_Top_R_1", (0.0046165, 0.0062275, 0.0065298), (0.0197, -0.027961, -0.040326), (0.16961, 0.79395, -0.22795, 0.53751)),
    ("Molars_Top_R_2", (0.003681, 0.0041279, 0.0046702), (0.010745, -0.026296, -0.035745), (0.5314, 0.7973, -0.095942, -0.26968)),
    ("Premolars_Top_L_1", (0.0017159, 0.0029358, 0.0055561), (0.073229, 0.015812, -0.039091), (0.72764, -0.013978, -0.13084, 0.67322)),
    ("Premolars_Top_L_2", (0.0022037, 0.0054716, 0.0060794), (0.063298, 0.017151, -0.039565), (0.40653, 0.68555, 0.52903, 0.29136)),
    ("Premolars_Top_L_3", (0.0022548, 0.0059774, 0.0065176), (0.05089, 0.021051, -0.03949), (0.34888, 0.78683, 0.47043, 0.19462)),
    ("Premolars_Top_L_4", (0.0036198, 0.0076569, 0.010082), (0.035357, 0.025889, -0.040495), (0.54615, 0.58019, 0.43612, 0.41821)),
    ("Premolars_Top_R_1", (0.0017159, 0.0029358, 0.0055561), (0.073229, -0.015812, -0.039091), (0.67322, -0.13084, -0.013978, 0.72764)),
    ("Premolars_Top_R_2", (0.0022037, 0.0054716, 0.0060794), (0.063298, -0.017151, -0.039565), (0.29136, 0.52903, 0.68555, 0.40653)),
    ("Premolars_Top_R_3", (0.0022548, 0.0059774, 0.0065176), (0.05089, -0.021051, -0.03949), (0.19462, 0.47043, 0.78683, 0.34888)),
    ("Premolars_Top_R_7", (0.0036198, 0.0076569, 0.010082), (0.035357, -0.025889, -0.040495), (0.41821, 0.43612, 0.58019, 0.54615)),
)  # fmt: skip
_LOWER_TEETH = (
    ("Canine_Bottom_L", (0.0023284, 0.002986, 0.011309), (0.060438, 0.012773, -0.030276), (0.60217, 0.20042, 0.3918, 0.66612)),
    ("Canine_Bottom_R", (0.0023284, 0.002986, 0.011309), (0.060438, -0.012773, -0.030276), (0.66612, 0.3918, 0.20042, 0.60217)),
    ("Incisors_Bottom_L_1", (0.0012789, 0.0016917, 0.0075464), (0.069553, 0.0020266, -0.033364), (-0.0027879, 0.50693, 0.0047406, 0.86197)),
    ("Incisors_Bottom_L_2", (0.001254, 0.0017182, 0.0073036), (0.068765, 0.0056498, -0.032947), (-0.24629, 0.49406, -0.046715, 0.8325)),
    ("Incisors_Bottom_L_3", (0.001485, 0.0018936, 0.0075715), (0.066779, 0.0093056, -0.031601), (0.79249, 0.07161, 0.44127, 0.41486)),
    ("Incisors_Bottom_R_1", (0.0012789, 0.0016917, 0.0075464), (0.069553, -0.0020265, -0.033364), (0.0027879, 0.50693, -0.0047405, 0.86197)),
    ("Incisors_Bottom_R_2", (0.001254, 0.0017182, 0.0073036), (0.068765, -0.0056497, -0.032947), (0.24629, 0.49406, 0.046715, 0.8325)),
    ("Incisors_Bottom_R_3", (0.001485, 0.0018936, 0.0075715), (0.066779, -0.0093056, -0.031601), (0.41486, 0.44127, 0.07161, 0.79249)),
    ("Molars_Bottom_3L", (0.0018005, 0.0026907, 0.0027199), (-0.014575, 0.020996, 0.0073694), (0.56708, 0.56708, 0.4224, 0.4224)),
    ("Molars_Bottom_L_1", (0.0028795, 0.0087141, 0.010424), (0.0027877, 0.01936, -0.0074155), (0.42653, 0.5875, 0.52952, 0.43877)),
    ("Molars_Bottom_L_2", (0.0026497, 0.0039836, 0.0048444), (-0.010552, 0.020402, 0.00095734), (0.70033, 0.33849, 0.27393, 0.56562)),
    ("Molars_Bottom_R_1", (0.0028795, 0.0087141, 0.010424), (0.0027877, -0.01936, -0.0074155), (0.43877, 0.52952, 0.5875, 0.42653)),
    ("Molars_Bottom_R_2", (0.0026497, 0.0039836, 0.0048444), (-0.010552, -0.020402, 0.00095734), (0.56562, 0.27393, 0.33849, 0.70033)),
    ("Molars_Bottom_R_3", (0.0018005, 0.0026907, 0.0027199), (-0.014575, -0.020996, 0.0073694), (0.4224, 0.4224, 0.56708, 0.56708)),
    ("Premolars_Bottom_L_1", (0.0012836, 0.0020381, 0.0043778), (0.04749, 0.012799, -0.027576), (0.72376, 0.083786, 0.21501, 0.65032)),
    ("Premolars_Bottom_L_2", (0.0020521, 0.0051826, 0.0057164), (0.039534, 0.01408, -0.024161), (0.60291, 0.47483, 0.39424, 0.50558)),
    ("Premolars_Bottom_L_3", (0.0020628, 0.0052806, 0.0059829), (0.028975, 0.016126, -0.019807), (0.64746, 0.40808, 0.34017, 0.54639)),
    ("Premolars_Bottom_L_4", (0.002223, 0.0060011, 0.0069385), (0.017719, 0.018186, -0.015), (0.62015, 0.43869, 0.37559, 0.53095)),
    ("Premolars_Bottom_R_1", (0.0012836, 0.0020381, 0.0043778), (0.04749, -0.012799, -0.027576), (0.65032, 0.21501, 0.083786, 0.72376)),
    ("Premolars_Bottom_R_2", (0.0020521, 0.0051826, 0.0057164), (0.039534, -0.014079, -0.024161), (0.50558, 0.39424, 0.47483, 0.60291)),
    ("Premolars_Bottom_R_3", (0.0020628, 0.0052806, 0.0059829), (0.028975, -0.016126, -0.019807), (0.54639, 0.34017, 0.40808, 0.64746)),
    ("Premolars_Bottom_R_4", (0.002223, 0.0060011, 0.0069385), (0.017719, -0.018186, -0.015), (0.53095, 0.37559, 0.43869, 0.62015)),
)  # fmt: skip

# Leg segments, each the child of the last, with left values ({s}: the side): body
# position, the bones' common offset, and the bone meshes in dm_control's order. Those in
# _VISIBLE are drawn (group 1); the other bones are hidden (group 5).
_HIND_LEG = {
    "upper_leg": (
        (-0.018108, 0.047237, -0.012597),
        (0.32629, -0.047237, -0.46357),
        ("Femoris_{s}", "Femoris_fabellae_{s}_1", "Femoris_fabellae_{s}_2", "Patella_{s}"),
    ),
    "lower_leg": (
        (-0.023037, 0.0311, -0.16702),
        (0.34933, -0.078337, -0.29655),
        ("Fibula_{s}", "Tibia_{s}"),
    ),
    "foot": (
        (-0.17914, -0.0056423, -0.13824),
        (0.52847, -0.072695, -0.15831),
        (
            "Calcaneal_tuber_{s}",
            *(f"Metatarsi_{{s}}_{i}" for i in range(1, 5)),
            *(f"Tarsus_{{s}}_{n}" for n in ("I", "II", "III", "IV")),
            "Tarsus_central_{s}",
            "Tibial_tarsal_{s}",
        ),
    ),
    "foot_anchor": ((-0.015043, 0.0081311, -0.11993), None, ()),
    "toe": (
        (0, 0, 0),
        (0.54351, -0.080826, -0.03838),
        tuple(f"Phalanges_B_{row}{{s}}_{i}" for row in ("2_", "3_", "") for i in range(1, 5)),
    ),
}
_DIGITS = ("III", "II", "IV", "V")
_FORELEG = {
    "scapula": ((0.08, 0.02, 0.14), (-0.1204, -0.02, -0.55522), ("Scapula_{s}",)),
    "upper_arm": ((0.075, 0.033, -0.13), (-0.1954, -0.053, -0.42522), ("humerus_{s}",)),
    "lower_arm": (
        (-0.05, 0.015, -0.145),
        (-0.1454, -0.068, -0.28022),
        ("Carpal_accessory_{s}", "Carpal_ulnar_{s}", "Radius_{s}", "Ulna_{s}"),
    ),
    "hand_anchor": ((0.003, -0.015, -0.19), None, ()),
    "hand": (
        (0, 0, 0),
        (-0.1484, -0.053, -0.090221),
        (
            *(f"Carpal_{n}_{{s}}" for n in ("III", "II", "IV", "I")),
            "Carpal_{s}",
            "Carpal_Sesamoid_{s}",
            *(f"Os_metacarpale_{n}_{{s}}" for n in ("III", "II", "IV", "I")),
            "Os_metacarpale_V_{s}.001",
            "Os_metacarpale_V_{s}",
            "Phalanx_distalis_digiti_I_{s}",
        ),
    ),
    "finger": (
        (0.02, 0, -0.06),
        (-0.1684, -0.053, -0.030221),
        tuple(
            f"{bone}_digiti_{n}_{{s}}"
            for bone in ("Phalanx_distalis", "Phalanx_media", "Phalanxpmxinutlis")
            for n in _DIGITS
        ),
    ),
}
_VISIBLE = frozenset(
    [f"Phalanges_B_3_{{s}}_{i}" for i in range(1, 5)]
    + [f"Phalanx_distalis_digiti_{n}_{{s}}" for n in _DIGITS]
)
# dm_control's two left-finger meshes named with a trailing underscore.
_MESH_RENAMES = {
    "Phalanxpmxinutlis_digiti_III_L": "Phalanxpmxinutlis_digiti_III_L_",
    "Phalanxpmxinutlis_digiti_IV_L": "Phalanxpmxinutlis_digiti_IV_L_",
}
# Thigh capsules (left): size, position, euler.
_THIGH_CAPSULES = (
    ((0.04, 0.08), (-0.01, 0.02, -0.08), (10, 20, 0)),
    ((0.04, 0.04), (-0.03, 0, -0.05), (10, 5, 0)),
)
# Toe and finger pads: capsules across the paw (size, position), and the touch site's
# size and position.
_TOE_PADS = (
    ((0.018, 0.012), (0.015, 0, -0.02)),
    ((0.01, 0.015), (0.035, 0, -0.028)),
    ((0.008, 0.01), (0.045, 0, -0.03)),
)
_FINGER_PADS = (
    ((0.018, 0.012), (0.012, 0, -0.012)),
    ((0.01, 0.015), (0.032, 0, -0.02)),
    ((0.008, 0.01), (0.042, 0, -0.022)),
)
_SOLE = ((0.025, 0.03, 0.008), (0.026, 0, -0.033))
_PALM = ((0.028, 0.03, 0.007), (0.02, 0, -0.024))
# The legs' oblique collision primitives: name ({s}: the side) -> type, size, and per side
# the position and quat (fitted to each bone, so not exact mirror images).
_LEG_PRIMITIVES = {
    "lower_leg_{s}": (
        _CAPSULE,
        (0.02, 0.1),
        {
            "L": ((-0.09513, -1.1454e-05, -0.068643), (0.80051, 0.18703, 0.42091, 0.38345)),
            "R": ((-0.09513, 1.136e-05, -0.068643), (0.38345, 0.42091, 0.18703, 0.80051)),
        },
    ),
    "Radius_{s}": (
        _CAPSULE,
        (0.017, 0.09),
        {
            "L": ((-0.0016515, -0.0069684, -0.10807), (0.9802, -0.056819, 0.010884, 0.18935)),
            "R": ((-0.0016515, 0.0069684, -0.10807), (0.9802, 0.056819, 0.010884, -0.18935)),
        },
    ),
    "Ulna_{s}": (
        _CAPSULE,
        (0.015, 0.06),
        {
            "L": ((-0.01187, -0.00044152, -0.051646), (0.69933, -0.032243, -0.022055, 0.71373)),
            "R": ((-0.01187, 0.00044155, -0.051646), (0.71373, -0.022055, -0.032243, 0.69933)),
        },
    ),
    "humerus_{s}": (
        _CAPSULE,
        (0.02, 0.08),
        {
            "L": ((-0.018023, 0.00985, -0.077038), (0.56918, 0.17822, 0.080004, 0.79867)),
            "R": ((-0.018023, -0.00985, -0.077038), (0.79867, 0.080004, 0.17822, 0.56918)),
        },
    ),
    "Scapula_{s}": (
        _BOX,
        (0.01758, 0.03491, 0.057492),
        {
            "L": ((0.038823, 0.030833, -0.064928), (0.73469, -0.16444, -0.27169, 0.59948)),
            "R": ((0.038823, -0.030833, -0.064928), (0.59948, -0.27169, -0.16444, 0.73469)),
        },
    ),
}

# Fixed tendons: name -> coefficients of its joints, vertebra by vertebra from the
# torso outward (the joints of that kind, e.g. lumbar_extend: L_1, L_3, L_5, L_7).
_TENDONS = {
    "lumbar_extend": (1.0887906214976453, 1.0287221260745385, 0.9678084616051313, 0.9146787908226849),
    "lumbar_bend": (1.1360135211286146, 1.0490053091600777, 0.9555458104917836, 0.8594353592195243),
    "lumbar_twist": (1.0007967860214304, 0.9996855391691534, 0.9995176748094166),
    "cervical_extend": (1.1651729548786316, 1.0638262565660335, 0.9279175112069821, 0.8430832773483526),
    "cervical_bend": (1.1032094508820511, 1.1151582521827508, 0.9257028175303736, 0.8559294794048242),
    "cervical_twist": (1.0490139787418138, 0.9679313738406048, 0.9830546474175812),
    "caudal_extend": (
        1.4175697632800168, 1.3533291916469086, 1.2905602895468757, 1.1963357977448668,
        1.0882282181745322, 0.9549416058705948, 0.839068010247595, 0.7575627896787993,
        0.71516710400689, 0.6955591082173007, 0.6916781215856203,
    ),
    "caudal_bend": (
        1.3236846643142188, 1.3130782401287662, 1.2679178338493764, 1.170681278111726,
        1.0404777760545052, 0.9053320718072471, 0.8040064645300866, 0.7475697729484704,
        0.7188107117102569, 0.7084411865453454,
    ),
}  # fmt: skip
# Each spine region's vertebrae from the torso outward: name prefix, numbers.
_VERTEBRAE = {
    "lumbar": ("L", range(1, 8)),
    "cervical": ("C", range(7, 0, -1)),
    "caudal": ("Ca", range(1, 22)),
}
# Joint actuators after the tendons', in dm_control's order ({s}: the side): per hind
# leg, the head, per foreleg. Each is named as its joint and has its joint's class.
_HIND_JOINTS = (
    "hip_{s}_supinate",
    "hip_{s}_abduct",
    "hip_{s}_extend",
    "knee_{s}",
    "ankle_{s}",
    "toe_{s}",
)
_FORE_JOINTS = (
    "scapula_{s}_supinate",
    "scapula_{s}_abduct",
    "scapula_{s}_extend",
    "shoulder_{s}_supinate",
    "shoulder_{s}_extend",
    "elbow_{s}",
    "wrist_{s}",
    "finger_{s}",
)
_JOINT_ACTUATORS = tuple(
    (template.format(s=side), template.replace("_{s}", ""))
    for joints, sides in (
        (_HIND_JOINTS, SIDES),
        (("atlas", "mandible"), [("", 0)]),
        (_FORE_JOINTS, SIDES),
    )
    for side, _ in sides
    for template in joints
)
_SENSORS = (
    ("accelerometer", mujoco.mjtSensor.mjSENS_ACCELEROMETER, _SITE, "head"),
    ("velocimeter", mujoco.mjtSensor.mjSENS_VELOCIMETER, _SITE, "head"),
    ("gyro", mujoco.mjtSensor.mjSENS_GYRO, _SITE, "head"),
    ("torso_linvel", mujoco.mjtSensor.mjSENS_SUBTREELINVEL, _BODY, "torso"),
    ("torso_angmom", mujoco.mjtSensor.mjSENS_SUBTREEANGMOM, _BODY, "torso"),
    *(
        (f"{pad}_{side}", mujoco.mjtSensor.mjSENS_TOUCH, _SITE, f"{pad}_{side}")
        for pad in ("palm", "sole")
        for side, _ in SIDES
    ),
    *(
        (f"{paw}_{side}", mujoco.mjtSensor.mjSENS_FORCE, _SITE, f"{paw}_anchor_{side}")
        for paw in ("foot", "hand")
        for side, _ in SIDES
    ),
)
# Body pairs whose contacts are excluded.
_EXCLUDES = (
    ("upper_arm_L", "torso"),
    ("upper_arm_R", "torso"),
    ("pelvis", "Ca_2"),
    ("pelvis", "Ca_3"),
    ("Ca_1", "Ca_3"),
    ("Ca_2", "Ca_4"),
    ("Ca_3", "Ca_5"),
    ("Ca_4", "Ca_6"),
    ("C_7", "scapula_L"),
    ("C_7", "scapula_R"),
    ("C_6", "scapula_L"),
    ("C_6", "scapula_R"),
    ("C_5", "scapula_L"),
    ("C_5", "scapula_R"),
    ("C_1", "jaw"),
    ("torso", "lower_arm_L"),
    ("torso", "lower_arm_R"),
    ("C_4", "scapula_R"),
    ("C_4", "scapula_L"),
    ("C_5", "upper_arm_R"),
    ("C_5", "upper_arm_L"),
    ("C_6", "upper_arm_R"),
    ("C_6", "upper_arm_L"),
    ("C_7", "upper_arm_R"),
    ("C_7", "upper_arm_L"),
    ("upper_leg_L", "upper_leg_R"),
    ("lower_leg_L", "pelvis"),
    ("upper_leg_L", "foot_L"),
    ("lower_leg_R", "pelvis"),
    ("upper_leg_R", "foot_R"),
)
# fetch's walls: name, position, z axis, size (at the default floor, which fetch keeps).
_WALLS = (
    ("wall_px", (-10.7, 0, 0.7), (1, 0, 1), (1, 10, 0.5)),
    ("wall_py", (0, -10.7, 0.7), (0, 1, 1), (10, 1, 0.5)),
    ("wall_nx", (10.7, 0, 0.7), (-1, 0, 1), (1, 10, 0.5)),
    ("wall_ny", (0, 10.7, 0.7), (0, -1, 1), (10, 1, 0.5)),
)


def _mirror(pos, sign: int):
    """A left position or vector mirrored to the side `sign` (1: left, -1: right)."""
    x, y, z = pos
    return (x, sign * y, z)


def _mirror_axial(axis, sign: int):
    """A left rotation axis or euler angles mirrored to the side `sign`."""
    x, y, z = axis
    return (sign * x, y, sign * z)


def _orient(element, kind, value) -> None:
    element.alt.type = kind
    setattr(element.alt, {_EULER: "euler", _XYAXES: "xyaxes", _ZAXIS: "zaxis"}[kind], value)


def _geom(body: mujoco.MjsBody, defaults: dict, euler=None, **attrs) -> mujoco.MjsGeom:
    geom = body.add_geom(**{**defaults, **attrs})
    if euler is not None:
        _orient(geom, _EULER, euler)
    return geom


def _bones(body: mujoco.MjsBody, templates, pos, side: str = "", defaults=_BONE) -> None:
    """Adds bone meshes, each geom named as its mesh, at the bones' common offset."""
    for template in templates:
        name = template.format(s=side)
        name = _MESH_RENAMES.get(name, name)
        kind = _VISIBLE_BONE if template in _VISIBLE else defaults
        body.add_geom(name=name, meshname=name, pos=pos, **kind)


def _joint(body: mujoco.MjsBody, name: str, cls: str, **attrs) -> None:
    joint = {**_MAIN_JOINT, **_CLASSES[cls][0], **attrs}
    for term in ("stiffness", "damping"):
        joint[term] = (joint[term], 0, 0)
    body.add_joint(name=name, **joint)


def _inertial(body: mujoco.MjsBody) -> None:
    body.explicitinertial = True
    body.mass, body.ipos, body.iquat, body.inertia = _INERTIALS[body.name]


def _sensor_site(body: mujoco.MjsBody, name: str, **attrs) -> None:
    body.add_site(name=name, **_SENSOR_SITE, **attrs)


def _add_lumbar_spine(torso: mujoco.MjsBody) -> mujoco.MjsBody:
    """Adds L_1..L_7 below the torso; returns L_7."""
    parent = torso
    for i, (pos, bone_pos) in enumerate(_LUMBAR_VERTEBRAE, 1):
        body = parent.add_body(name=f"L_{i}", pos=pos)
        _bones(body, [f"L_{i}"], bone_pos)
        _geom(
            body,
            _NONSELF,
            name=f"L_{i}_collision",
            type=_SPHERE,
            size=(0.05, 0, 0),
            pos=(0, 0, -0.02),
        )
        for kind in ("extend", "bend") if i % 2 else ("twist",):
            _joint(body, f"L_{i}_{kind}", f"lumbar_{kind}", axis=_SPINE_AXES[kind])
        parent = body
    return parent


def _segment(parent: mujoco.MjsBody, leg: dict, segment: str, side: str, sign: int):
    """Adds the leg segment `{segment}_{side}` and its bones."""
    pos, bone_pos, bones = leg[segment]
    body = parent.add_body(name=f"{segment}_{side}", pos=_mirror(pos, sign))
    if bones:
        _bones(body, bones, _mirror(bone_pos, sign), side)
    return body


def _add_hind_leg(pelvis: mujoco.MjsBody, side: str, sign: int) -> None:
    upper = _segment(pelvis, _HIND_LEG, "upper_leg", side, sign)
    for kind, axis in (("supinate", (0, 0, 1)), ("abduct", (1, 0, 0)), ("extend", (0, 1, 0))):
        _joint(upper, f"hip_{side}_{kind}", f"hip_{kind}", axis=_mirror_axial(axis, sign))
    for i, (size, pos, euler) in enumerate(_THIGH_CAPSULES):
        pos, euler = _mirror(pos, sign), _mirror_axial(euler, sign)
        name = f"upper_leg_{side}{i}_collision"
        _geom(upper, _COLLISION, name=name, size=size, pos=pos, euler=euler)
    lower = _segment(upper, _HIND_LEG, "lower_leg", side, sign)
    _joint(lower, f"knee_{side}", "knee", axis=(0, -1, 0))
    _leg_primitive(lower, "lower_leg_{s}", side)
    foot = _segment(lower, _HIND_LEG, "foot", side, sign)
    _joint(foot, f"ankle_{side}", "ankle", axis=(0, 1, 0))
    pos = _mirror((-0.01, 0.005, -0.05), sign)
    _geom(foot, _COLLISION, name=f"foot_{side}_collision", size=(0.015, 0.07), pos=pos)
    anchor = _add_anchor(_segment(foot, _HIND_LEG, "foot_anchor", side, sign))
    toe = _segment(anchor, _HIND_LEG, "toe", side, sign)
    _joint(toe, f"toe_{side}", "toe", axis=(0, 1, 0))
    _add_pads(toe, f"toe_{side}", _TOE_PADS, f"sole_{side}", _SOLE)


def _add_foreleg(torso: mujoco.MjsBody, side: str, sign: int) -> None:
    scapula = _segment(torso, _FORELEG, "scapula", side, sign)
    for kind, pos, axis in (
        ("supinate", (-0.03, -0.02, 0), (0, 0, 1)),
        ("abduct", (0, -0.05, -0.07), (1, 0, 0)),
        ("extend", (0, 0, 0), (0.3, 1, 0)),
    ):
        name, pos, axis = f"scapula_{side}_{kind}", _mirror(pos, sign), _mirror_axial(axis, sign)
        _joint(scapula, name, f"scapula_{kind}", pos=pos, axis=axis)
    _leg_primitive(scapula, "Scapula_{s}", side)
    upper = _segment(scapula, _FORELEG, "upper_arm", side, sign)
    for kind, axis in (("supinate", (-1, 0, 1)), ("extend", (0, 1, 0))):
        _joint(upper, f"shoulder_{side}_{kind}", f"shoulder_{kind}", axis=_mirror_axial(axis, sign))
    _leg_primitive(upper, "humerus_{s}", side)
    lower = _segment(upper, _FORELEG, "lower_arm", side, sign)
    _joint(lower, f"elbow_{side}", "elbow", axis=_mirror_axial((0, 1, 0.2), sign))
    _leg_primitive(lower, "Radius_{s}", side)
    _leg_primitive(lower, "Ulna_{s}", side)
    anchor = _add_anchor(_segment(lower, _FORELEG, "hand_anchor", side, sign))
    hand = _segment(anchor, _FORELEG, "hand", side, sign)
    _joint(hand, f"wrist_{side}", "wrist", axis=(0, -1, 0))
    box = {"type": _BOX, "size": (0.03, 0.016, 0.012), "pos": (0.01, 0, -0.04), "euler": (0, 65, 0)}
    _geom(hand, _COLLISION, name=f"hand_{side}_collision", **box)
    finger = _segment(hand, _FORELEG, "finger", side, sign)
    _joint(finger, f"finger_{side}", "finger", axis=_mirror_axial((0, 1, 0.2), sign))
    _add_pads(finger, f"finger_{side}", _FINGER_PADS, f"palm_{side}", _PALM)


def _leg_primitive(body: mujoco.MjsBody, template: str, side: str) -> None:
    kind, size, placements = _LEG_PRIMITIVES[template]
    pos, quat = placements[side]
    name = template.format(s=side) + "_collision"
    _geom(body, _COLLISION, name=name, type=kind, size=size, pos=pos, quat=quat)


def _add_anchor(anchor: mujoco.MjsBody) -> mujoco.MjsBody:
    """Makes `anchor` a paw's anchor, whose site measures the force on the paw."""
    _geom(anchor, _ANCHOR, name=anchor.name)
    _sensor_site(anchor, anchor.name)
    return anchor


def _add_pads(paw: mujoco.MjsBody, prefix: str, pads, touch: str, site) -> None:
    for i, (size, pos) in enumerate(pads):
        _geom(paw, _FOOT, name=f"{prefix}{i}_collision", size=size, pos=pos, euler=(90, 0, 0))
    size, pos = site
    _sensor_site(paw, touch, type=_BOX, size=size, pos=pos)


def _add_tail(pelvis: mujoco.MjsBody) -> None:
    parent = pelvis
    for i, row in enumerate(_CAUDAL_VERTEBRAE, 1):
        pos, bone_pos, joint_pos, axis, size, geom_pos, quat = row
        body = parent.add_body(name=f"Ca_{i}", pos=pos)
        _bones(body, [f"Ca_{i}"], bone_pos)
        kind = "extend" if i % 2 else "bend"
        _joint(body, f"Ca_{i}_{kind}", f"caudal_{kind}", pos=joint_pos, axis=axis)
        _geom(body, _COLLISION, name=f"Ca_{i}_collision", size=size, pos=geom_pos, quat=quat)
        parent = body
    _sensor_site(parent, "tail_tip")


def _add_neck(torso: mujoco.MjsBody) -> mujoco.MjsBody:
    """Adds C_7..C_1 above the torso; returns C_1."""
    parent = torso
    for i, row in zip(range(7, 0, -1), _CERVICAL_VERTEBRAE):
        pos, bone_pos, radius, joint_pos, axis = row
        body = parent.add_body(name=f"C_{i}", pos=pos)
        _bones(body, [f"C_{i}"], bone_pos, defaults=_LIGHT_BONE if i >= 4 else _BONE)
        _geom(body, _NONSELF, name=f"C_{i}_R_collision", type=_SPHERE, size=(radius, 0, 0))
        joints = (("extend", (0, 1, 0)), ("bend", axis)) if i % 2 else (("twist", axis),)
        for kind, kind_axis in joints:
            _joint(body, f"C_{i}_{kind}", f"cervical_{kind}", pos=joint_pos, axis=kind_axis)
        parent = body
    return parent


def _add_head(neck: mujoco.MjsBody) -> None:
    skull = neck.add_body(name="skull", pos=(0.077928, 0, 0.017833))
    _bones(
        skull,
        ("eye_L", "eye_R"),
        (-0.34104, 0, -0.69452),
        defaults={**_VISIBLE_BONE, "rgba": (1, 1, 1, 1)},
    )
    for side, sign in SIDES:
        _geom(
            skull,
            _VISIBLE_BONE,
            name=f"iris_{side}",
            type=_ELLIPSOID,
            size=(0.003, 0.007, 0.007),
            rgba=(0.45, 0.45, 0.225, 0.4),
            pos=_mirror((0.023, 0.027, 0.01), sign),
            euler=_mirror_axial((0, 0, 20), sign),
        )
        _geom(
            skull,
            _VISIBLE_BONE,
            name=f"pupil_{side}",
            type=_SPHERE,
            size=(0.003, 0, 0),
            rgba=(0, 0, 0, 1),
            pos=_mirror((0.0215, 0.0275, 0.01), sign),
        )
    _primitives(skull, _SKULL_PRIMITIVES)
    _joint(skull, "atlas", "atlas", pos=(-0.062463, 0, 0))
    _sensor_site(skull, "head", type=_BOX, size=(0.01, 0.01, 0.01))
    _sensor_site(skull, "upper_bite", pos=(0.065, 0, -0.07))
    jaw = skull.add_body(name="jaw", pos=(0.0082923, 0, -0.058237))
    _primitives(jaw, _JAW_PRIMITIVES)
    _joint(jaw, "mandible", "mandible", pos=(-0.043, 0, 0.05), axis=(0, 1, 0))
    _sensor_site(jaw, "lower_bite", pos=(0.063, 0, 0.005))
    _teeth(jaw, _LOWER_TEETH)
    _inertial(jaw)
    _bones(jaw, ["Jaw"], (-0.35599, 0, -0.63249))
    _teeth(skull, _UPPER_TEETH)
    _inertial(skull)
    _bones(skull, ["MergedSkull"], (-0.34765, 0, -0.69098))


def _primitives(body: mujoco.MjsBody, rows) -> None:
    for name, kind, size, pos, euler in rows:
        _geom(
            body, _COLLISION, name=f"{name}_collision", type=kind, size=size, pos=pos, euler=euler
        )


def _teeth(body: mujoco.MjsBody, rows) -> None:
    for name, size, pos, quat in rows:
        _geom(
            body, _TOOTH, name=f"{name}_collision", type=_ELLIPSOID, size=size, pos=pos, quat=quat
        )


def _add_torso(world: mujoco.MjsBody) -> None:
    torso = world.add_body(name="torso", pos=(0.040403, 0, 0.41522))
    torso.add_freejoint(name="root")
    torso.add_light(name="light", mode=_TRACKCOM, pos=(0, 0, 3))
    for name, pos, xyaxes in (
        ("y-axis", (0, -1.5, 0.8), (1, 0, 0, 0, 0.6, 1)),
        ("x-axis", (2, 0, 0.5), (0, 1, 0, -0.3, 0, 1)),
    ):
        _orient(torso.add_camera(name=name, mode=_TRACKCOM, pos=pos), _XYAXES, xyaxes)
    _geom(
        torso,
        _NONSELF,
        name="collision_torso",
        type=_ELLIPSOID,
        size=(0.2, 0.09, 0.11),
        density=200,
        euler=(0, 10, 0),
    )
    pelvis = _add_lumbar_spine(torso).add_body(name="pelvis", pos=(-0.080217, 0, -0.034801))
    _bones(pelvis, ("Sacrum", "Pelvis"), (0.30818, 0, -0.47617))
    for side, sign in SIDES:
        _geom(
            pelvis,
            _NONSELF,
            name=f"collision_pelvis_{side}",
            size=(0.05, 0.05, 0),
            pos=_mirror((0.01, 0.02, -0.01), sign),
            euler=(0, 70, 0),
        )
    for side, sign in SIDES:
        _add_hind_leg(pelvis, side, sign)
    _add_tail(pelvis)
    _add_head(_add_neck(torso))
    for side, sign in SIDES:
        _add_foreleg(torso, side, sign)
    _inertial(torso)
    _bones(torso, ["Ribcage"], (-0.052791, -0.00036588, -0.42183))


def _add_fetch_arena(world: mujoco.MjsBody) -> None:
    """fetch's ball, target, walls and cameras."""
    ball = world.add_body(name="ball", pos=(0.5, 0, 0.1))
    ball.add_freejoint(name="ball_root")
    _geom(ball, _BOUNCY, name="ball", size=(0.03, 0, 0), material="tennis_ball", mass=0.056)
    _geom(world, _VELCRO, name="target", type=_CYLINDER, size=(0.1, 0.004, 0), material="target")
    for name, pos, zaxis, size in _WALLS:
        wall = _geom(
            world, _MAIN_GEOM, name=name, type=_PLANE, size=size, material="decoration", pos=pos
        )
        _orient(wall, _ZAXIS, zaxis)
    for name, target, pos in (
        ("ball", "ball", (0.5, 0.5, 0.9)),
        ("head", "skull", (-0.5, -0.5, 0.9)),
    ):
        world.add_camera(name=name, mode=_TARGETBODYCOM, targetbody=target, pos=pos)


def _add_tendons_and_actuators(spec: mujoco.MjSpec) -> None:
    joints = {joint.name for joint in spec.joints}
    for name, coefs in _TENDONS.items():
        region, kind = name.split("_")
        prefix, vertebrae = _VERTEBRAE[region]
        tendon = spec.add_tendon(name=name, rgba=(0.5, 0, 0, 1))
        wrapped = [f"{prefix}_{i}_{kind}" for i in vertebrae if f"{prefix}_{i}_{kind}" in joints]
        for joint, coef in zip(wrapped, coefs, strict=True):
            tendon.wrap_joint(joint, coef)
    targets = [(name, name, mujoco.mjtTrn.mjTRN_TENDON) for name in _TENDONS]
    targets += [(name, cls, mujoco.mjtTrn.mjTRN_JOINT) for name, cls in _JOINT_ACTUATORS]
    for name, cls, trntype in targets:
        actuator = spec.add_actuator(
            name=name,
            target=name,
            trntype=trntype,
            ctrllimited=_LIMITED,
            ctrlrange=(-1, 1),
            dyntype=mujoco.mjtDyn.mjDYN_FILTER,
        )
        actuator.gainprm[0] = _CLASSES[cls][1]
        actuator.dynprm[0] = 0.05


def _add_sensors(spec: mujoco.MjSpec) -> None:
    for name, kind, objtype, objname in _SENSORS:
        spec.add_sensor(name=name, type=kind, objtype=objtype, objname=objname)


def asset_dir() -> pathlib.Path:
    """The folder of dm_control's dog meshes, skin and textures.

    Raises:
        ImportError: If dm-control is not installed, or lacks the dog's assets.
    """
    package = importlib.util.find_spec("dm_control")
    folders = [] if package is None else list(package.submodule_search_locations or [])
    for folder in folders:
        path = pathlib.Path(folder).joinpath(*ASSET_SUBDIR)
        if path.is_dir():
            return path
    raise ImportError(
        "The dog model loads its bone meshes, skin and textures from dm_control's "
        "package (dm_control/suite/dog_assets), which was not found: install it with "
        "`pip install 'jaxcontrol[dog]'` (dm-control==1.0.50)."
    )


@functools.cache
def _read_assets(folder: pathlib.Path, files: tuple[str, ...]) -> dict[str, bytes]:
    """The files' contents (read once per process: about 20 MB)."""
    return {name: (folder / name).read_bytes() for name in files}


def _add_assets(spec: mujoco.MjSpec) -> None:
    """Adds the meshes (in dm_control's order, by file name), skin and textures."""
    # As in dm_control's XML: files named relative to the package's suite folder
    # (MjModel.paths records these names), their contents handed over in memory.
    spec.meshdir = spec.texturedir = "dog_assets/"
    meshes = sorted(
        (f"BONE{geom.meshname}.stl", geom.meshname) for geom in spec.geoms if geom.type == _MESH
    )
    for file, name in meshes:
        spec.add_mesh(name=name, file=file)
    spec.add_texture(name="skin", type=mujoco.mjtTexture.mjTEXTURE_2D, file=_SKIN_TEXTURE_FILE)
    skin = spec.add_material(name="skin")
    skin.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "skin"
    spec.add_skin(name="skin", file=_SKIN_FILE, material="skin")
    ball = spec.add_texture(
        name="tennis_ball",
        type=mujoco.mjtTexture.mjTEXTURE_CUBE,
        file=_BALL_TEXTURE_FILE,
        gridsize=(3, 4),
    )
    ball.gridlayout = list(".U..LFRB.D..")
    material = spec.add_material(name="tennis_ball")
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "tennis_ball"
    files = [file for file, _ in meshes] + [_SKIN_FILE, _SKIN_TEXTURE_FILE, _BALL_TEXTURE_FILE]
    spec.assets = dict(_read_assets(asset_dir(), tuple(files)))


def make_spec(floor_size: float = DEFAULT_FLOOR_SIZE, remove_ball: bool = True) -> mujoco.MjSpec:
    """Returns the dog spec with dm_control's per-task edits.

    Args:
        floor_size: The floor's half-size in x and y (stand and walk: 15, trot: 45,
            run: 135; fetch keeps the default 10).
        remove_ball: Leave out fetch's ball, target, walls and their two cameras.

    Raises:
        ImportError: If dm-control's dog assets cannot be found (see `asset_dir`).
    """
    spec = common.new_spec("dog")
    spec.option.timestep = 0.005
    spec.option.noslip_iterations = 4
    spec.njmax, spec.nconmax, spec.nkey = 900, 300, 1
    spec.visual.global_.offwidth, spec.visual.global_.offheight = 1920, 1080
    spec.visual.map.znear = 0.001
    scale = spec.visual.scale
    scale.jointlength, scale.jointwidth, scale.framelength, scale.framewidth = 8, 0.5, 2, 0.3
    spec.stat.meansize, spec.stat.extent = 0.01, 1.0
    world = spec.worldbody
    _geom(
        world,
        _MAIN_GEOM,
        name="floor",
        type=_PLANE,
        size=(floor_size, floor_size, 0.1),
        material="grid",
    )
    _add_torso(world)
    if not remove_ball:
        _add_fetch_arena(world)
    for body1, body2 in _EXCLUDES:
        spec.add_exclude(name=f"{body1}:{body2}", bodyname1=body1, bodyname2=body2)
    _add_tendons_and_actuators(spec)
    _add_sensors(spec)
    _add_assets(spec)
    return spec


def make_model(floor_size: float = DEFAULT_FLOOR_SIZE, remove_ball: bool = True) -> mujoco.MjModel:
    """Returns the compiled dog model (see `make_spec`)."""
    return common.compile_spec(make_spec(floor_size, remove_ball))
