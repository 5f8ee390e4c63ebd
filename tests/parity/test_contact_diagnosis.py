"""C MuJoCo's and MJX's contacts and constraint rows side by side (`contact_diagnosis`)."""

import pytest

import jaxcontrol
from jaxcontrol import reference
from jaxcontrol.parity import contact_diagnosis, hard_states


@pytest.fixture(scope="module")
def walker_on_the_floor():
    """walker-walk at the state of a small mix with the most contacts, in float32."""
    with reference.precision(False):
        env = jaxcontrol.load("walker", "walk")
        mix = hard_states.state_mix(env, 20, seed=0)
        i = max(range(20), key=lambda i: (mix.contacts[i], mix.rows[i]))
        yield mix.contacts[i], contact_diagnosis.compare_constraints(env, mix.transitions[i])


def test_every_contact_and_row_of_c_is_paired_with_mjxs(walker_on_the_floor):
    """A planar walker: MJX builds C's contacts (pyramids not turned) and C's rows
    (contacts' and joint limits')."""
    contacts, comparison = walker_on_the_floor
    assert contacts >= 2 and len(comparison.contacts) == contacts
    for pair in comparison.contacts:
        assert pair.geoms[0] == "floor" and pair.dim == 3
        assert pair.dist[1] == pytest.approx(pair.dist[0], abs=1e-6)
        assert pair.pyramid_turn_deg == pytest.approx(0, abs=1e-3)
    kinds = [row.kind for row in comparison.rows]
    assert kinds.count("CONTACT_PYRAMIDAL") == 4 * contacts  # a pyramid: 2 rows per tangent
    assert set(kinds) <= {"CONTACT_PYRAMIDAL", "LIMIT_JOINT"}
    assert comparison.mjx_rows >= len(comparison.rows)
    for row in comparison.rows:
        assert row.jacobian_difference < 1e-5
        assert row.impedance[1] == pytest.approx(row.impedance[0], rel=1e-3)  # float32
        assert row.aref[1] == pytest.approx(row.aref[0], rel=1e-4, abs=1e-3)
    assert comparison.qacc_error < 1e-4
    assert comparison.qacc_smooth_error < comparison.qacc_error or comparison.qacc_error < 1e-5


def test_the_report_names_each_contact_and_row(walker_on_the_floor):
    _, comparison = walker_on_the_floor
    text = contact_diagnosis.report(comparison)
    assert text.startswith("qacc: ")
    assert text.count("floor–") == len(comparison.contacts)
    assert text.count(": |dJ| ") == len(comparison.rows)
