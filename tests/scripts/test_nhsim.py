"""scripts/nh/sim.py, the simulator's Python API: a replay gives the command line's --json
document; options reach the simulator; refusals arrive whole as SimError; list_keys parses
--list-keys; table() runs a batch and reports each replay."""
import json
import logging
import os
import subprocess

import pytest

from helpers import REPO, SIM

from nh import sim as nhsim

TRACE = os.path.join(REPO, "tests", "data", "traces", "mqsim_tpcc-small.trace")


def cli(*args):
    r = subprocess.run([SIM, *args], capture_output=True, text=True, timeout=120, check=True)
    return r.stdout


def test_replay_is_the_command_line():
    # preset=none: --fill on the default drive writes its 75 GiB of flash (blocks=auto), minutes
    dev = "preset=none,ftl=dftl,buffer=lru"
    doc = nhsim.replay(TRACE, "mqsim", dev, sim=SIM, qd=4, limit=2000,
                       capacity="1G", fit="modulo", fill=0.5, no_drain=True)
    want = json.loads(cli("--json", "-d", dev, "-t", TRACE, "-f", "mqsim",
                          "--qd", "4", "--limit", "2000", "--capacity", "1G", "--fit", "modulo",
                          "--fill", "0.5", "--no-drain"))
    assert doc == want
    assert doc["host"]["read_cmds"] + doc["host"]["write_cmds"] == 2000
    assert doc["config"]["ftl"] == "dftl"


def test_notes_go_to_the_logger(caplog):
    with caplog.at_level(logging.INFO, logger="nhsim"):
        nhsim.replay(TRACE, "mqsim", "", sim=SIM, limit=100, capacity="1G", fit="modulo")
    assert any("--fit modulo" in m for m in caplog.messages)


def test_refusal_carries_the_whole_message():
    with pytest.raises(nhsim.SimError) as e:
        nhsim.replay(TRACE, "mqsim", "ftl=page,bufer=lru", sim=SIM)
    # the list of valid keys is long; the last of them must still be there
    last = list(nhsim.list_keys(sim=SIM))[-1]
    assert "bufer: unknown key (valid keys: preset, channels," in str(e.value)
    assert last in str(e.value) and e.value.returncode == 1 and e.value.argv[0] == SIM
    with pytest.raises(nhsim.SimError, match="bufer: unknown key"):
        nhsim.check_properties("bufer=lru", sim=SIM)
    assert nhsim.check_properties("ftl=fast,buffer=cbm", sim=SIM) is None


def test_bad_options_and_missing_files():
    with pytest.raises(ValueError, match="option qd: 0 is not a positive integer"):
        nhsim.replay(TRACE, "mqsim", sim=SIM, qd=0)
    with pytest.raises(ValueError, match="unknown simulator option 'depth'"):
        nhsim.replay(TRACE, "mqsim", sim=SIM, depth=4)
    with pytest.raises(ValueError, match="option fit: '--qd' is not a word"):
        nhsim.replay(TRACE, "mqsim", sim=SIM, fit="--qd")
    with pytest.raises(FileNotFoundError, match="no trace file /nonexistent"):
        nhsim.replay("/nonexistent", "mqsim", sim=SIM)
    with pytest.raises(FileNotFoundError, match="no simulator at /nonexistent"):
        nhsim.replay(TRACE, "mqsim", sim="/nonexistent")


def test_list_keys():
    keys = nhsim.list_keys(sim=SIM)
    names = [line for line in cli("--list-keys").splitlines() if not line.startswith(" ")]
    assert list(keys) == names
    assert keys["ftl"].choices == ("page", "dftl", "bast", "fast", "sast")
    assert keys["ftl"].default == "page"
    assert keys["channels"].choices is None and keys["channels"].values == "integer 1..64"
    assert keys["buffer"].meaning.startswith("write-buffer policy")


def test_table_reports_each_replay():
    seen = []
    # preset=none: the default drive's write cache (stripe-merge) absorbs the same overwrites
    runs = [{"trace": TRACE, "format": "mqsim", "device": "preset=none,buffer=" + b, "policy": b,
             "limit": 1000} for b in ("none", "lru", "nosuch")]
    df = nhsim.table(runs, jobs=2, sim=SIM,
                     on_done=lambda done, total, row: seen.append((done, total, row["policy"])))
    assert [d for d, _, _ in seen] == [1, 2, 3] and {t for _, t, _ in seen} == {3}
    assert {p for _, _, p in seen} == {"none", "lru", "nosuch"}
    assert list(df["policy"]) == ["none", "lru", "nosuch"]
    assert df["error"][:2].isna().all() and "unknown value 'nosuch'" in df["error"][2]
    assert df["waf"][1] < df["waf"][0]      # the buffer absorbs some overwrites
    row = nhsim.row(nhsim.replay(TRACE, "mqsim", "preset=none,buffer=lru", sim=SIM, limit=1000),
                    policy="lru")
    assert row["policy"] == "lru" and row["waf"] == df["waf"][1]
    with pytest.raises(ValueError, match="option limit: -1"):
        nhsim.table([{"trace": TRACE, "format": "mqsim", "limit": -1}], sim=SIM)
