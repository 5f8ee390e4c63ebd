"""A pytest plugin for tests/test_run_order.py: writes every collected test's node id,
in run order, with whether it is marked float64, to the file named by
$JAXCONTROL_RUN_ORDER_LISTING (one collection answers both questions)."""

import os


def pytest_collection_finish(session):
    with open(os.environ["JAXCONTROL_RUN_ORDER_LISTING"], "w") as listing:
        for item in session.items:
            marked = item.get_closest_marker("float64") is not None
            listing.write(f"{'float64' if marked else 'float32'} {item.nodeid}\n")
