"""Claims on run directories: one holder at a time, abandoned claims expire."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

from jaxcontrol.agents.common import claims


def test_a_live_claim_keeps_others_out_until_released(tmp_path):
    run = str(tmp_path / "run")
    first = claims.try_claim(run, expiry=60)
    assert first is not None and first.held()
    assert claims.try_claim(run, expiry=60) is None
    first.release()
    assert not os.path.exists(os.path.join(run, claims.CLAIM))
    second = claims.try_claim(run, expiry=60)
    assert second is not None
    second.release()


def test_an_abandoned_claim_is_taken_over_and_its_owner_sees_it_lost(tmp_path):
    run = str(tmp_path / "run")
    old = claims.try_claim(run, expiry=60)
    later = time.time() + 61  # no heartbeat for longer than the expiry
    new = claims.try_claim(run, expiry=60, now=later)
    assert new is not None and new.held() and not old.held()
    old.release()  # not its claim any more: it must not remove the new one
    assert new.held()
    new.release()


def test_the_heartbeat_keeps_a_claim_alive(tmp_path):
    run = str(tmp_path / "run")
    with claims.try_claim(run, expiry=0.4) as claim:
        time.sleep(1.0)  # more than twice the expiry: only the heartbeat keeps it fresh
        assert claims.try_claim(run, expiry=0.4) is None and claim.held()


CLAIMER = textwrap.dedent(
    """
    import json, os, sys
    from jaxcontrol.agents.common import claims
    root, count = sys.argv[1], int(sys.argv[2])
    won = []
    for i in range(count):
        if claims.try_claim(os.path.join(root, str(i)), expiry=30) is not None:
            won.append(i)
    print(json.dumps(won))
    sys.stdout.flush()
    os._exit(0)  # a crash: no claim still held is released
    """
)


def _claimers(root, count, processes=2):
    started = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(root), str(count)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    return [json.loads(p.communicate(timeout=120)[0]) for p in started]


def test_two_processes_never_hold_one_run_and_a_crashed_ones_claims_expire(tmp_path):
    won = _claimers(tmp_path, 40)
    assert sorted(won[0] + won[1]) == list(range(40))  # each run claimed exactly once
    # Both crashed holding their claims: no one may take them before they expire...
    assert all(claims.try_claim(str(tmp_path / str(i)), expiry=30) is None for i in range(40))
    # ...and anyone may after.
    late = time.time() + 31
    taken = [claims.try_claim(str(tmp_path / str(i)), expiry=30, now=late) for i in range(40)]
    assert all(claim is not None for claim in taken)
    for claim in taken:
        claim.release()
