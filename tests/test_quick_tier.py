"""The quick tier (``python -m pytest -q -m "not slow"``): the tests that took at most ``QUICK_MAX_S`` in the last
recorded whole run (``tests/durations.json``, written by that run) and are not marked slow by hand. It must keep a
test of every door, so a contributor's quick loop still goes through each one."""
import subprocess
import sys

import pytest

from conftest import DURATIONS, REPO, machine_free_env

DOORS = {"the CLI": "tests/test_doors.py", "the chat and scripts": "tests/test_repl_script.py",
         "MCP": "tests/test_mcp_server.py", "HTTP": "tests/test_serve.py", "requests in the chat": "tests/test_intent.py",
         "the answer path": "tests/test_fast_path.py"}


@pytest.mark.skipif(not DURATIONS.is_file(), reason="no recorded whole run yet (tests/durations.json)")
def test_the_quick_tier_keeps_a_test_of_every_door(request):
    here = [i for i in request.session.items if i.nodeid.split("::")[0] in DOORS.values()]
    if {i.nodeid.split("::")[0] for i in here} == set(DOORS.values()):  # this run collected every door's module
        kept = {i.nodeid.split("::")[0] for i in here if not i.get_closest_marker("slow")}
    else:  # a run of a few files: the quick tier's collection, in a process of its own (10 s)
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-m", "not slow", "-p",
                            "no:cacheprovider", *DOORS.values()], cwd=REPO, capture_output=True, text=True,
                           timeout=300, env=machine_free_env())
        kept = {line.split("::")[0] for line in r.stdout.splitlines() if "::" in line}
    missing = [door for door, module in DOORS.items() if module not in kept]
    assert not missing, missing
