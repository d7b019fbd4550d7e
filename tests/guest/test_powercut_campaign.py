"""scripts/powercut-campaign in short: three rounds on the device as it is report nothing lost
(and exit 0); the same campaign with the test-only broken durability rule x-flush-no-drain
(Flush completes without draining the volatile buffer) reports acknowledged, flushed bytes
lost (and exits 1), so the checker can fail; run as two chunks at once (--chunk, --jobs), whose
losses must reach the totals."""
import json
import os
import re
import subprocess

from conftest import REPO

CAMPAIGN = os.path.join(REPO, "scripts", "powercut-campaign")
FINAL = re.compile(r"^rounds (\d+) acknowledged-bytes (\d+) lost-bytes (\d+) "
                   r"window-lost (\d+) inconsistent (\d+)$", re.M)


def campaign(tmp_path, *args):
    out_json = tmp_path / "campaign.json"
    r = subprocess.run([CAMPAIGN, "3", "--dir", str(tmp_path / "work"), "--json", str(out_json)]
                       + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    lines = FINAL.findall(r.stdout)
    assert lines, "no final line (exit %d):\n%s" % (r.returncode, r.stdout)
    rounds, acked, lost, wlost, inconsistent = map(int, lines[-1])
    assert rounds == 3 and acked > 0, r.stdout
    with open(out_json) as f:
        doc = json.load(f)
    return r, (lost, wlost, inconsistent), doc


def test_campaign_loses_nothing(tmp_path):
    # Seed 3: both cuts, volatile and capacitor-backed buffers, a round with the window.
    r, (lost, wlost, inconsistent), doc = campaign(tmp_path, "--seed", "3", "--p-window", "0.5")
    assert (lost, wlost, inconsistent) == (0, 0, 0), r.stdout
    assert r.returncode == 0, r.stdout
    cfgs = [rd["config"] for rd in doc["per_round"]]
    assert {c["cut"] for c in cfgs} == {"kill", "qmp"}, cfgs
    assert all(rd["writes"] > 0 for rd in doc["per_round"]), r.stdout


def test_campaign_catches_a_flush_that_does_not_drain(tmp_path):
    # Chunks of 2 and 1 rounds on their own disks, seeds 4 and 5, both at once.
    r, (lost, wlost, inconsistent), doc = campaign(
        tmp_path, "--seed", "4", "--device", "x-flush-no-drain=on", "--volatile", "on",
        "--cut", "qmp", "--min-cut", "1.5", "--p-window", "0", "--chunk", "2", "--jobs", "2")
    assert r.returncode == 1, r.stdout
    assert lost > 0 and doc["lost_by_class"]["durable-flush"] > 0, r.stdout
    assert [(c["seed"], c["rounds"]) for c in doc["chunks"]] == [(4, 2), (5, 1)], doc["chunks"]
    assert lost == sum(c["lost_bytes"] for c in doc["chunks"]), doc["chunks"]
    for i in (0, 1):
        assert (tmp_path / "work" / ("chunk-%d.out" % i)).exists()
