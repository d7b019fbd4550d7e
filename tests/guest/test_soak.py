"""scripts/soak (docs/soak.md): a short soak in make check, so that its guest half and its
checks keep working; the long one, hours over four configurations, in make check-slow
(SOAK_MINUTES, default 120)."""
import os
import re
import subprocess

import pytest

from conftest import REPO

SOAK = os.path.join(REPO, "scripts", "soak")
LAST = re.compile(r"^soak minutes ([0-9.]+) configs ([0-9]+) passes ([0-9]+) checks ([0-9]+) "
                  r"problems ([0-9]+)$")


def soak(tmp_path, *args, timeout):
    r = subprocess.run([SOAK, "--dir", str(tmp_path / "soak"), "--json",
                        str(tmp_path / "soak.json")] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    lines = r.stdout.strip().splitlines()
    m = LAST.match(lines[-1]) if lines else None
    assert m, "no summary line (status %d):\n%s" % (r.returncode, r.stdout[-4000:])
    return r.returncode, [float(x) for x in m.groups()], r.stdout


def test_short_soak_volatile_buffer(tmp_path):
    """Two minutes on DFTL with a volatile LRU buffer: several passes, each with verified
    writes, trims, a flush and a controller reset, one full deallocate; every read of the
    statistics and every model check clean."""
    status, (minutes, configs, passes, checks, problems), out = soak(
        tmp_path, "--minutes", "2", "--interval", "5", "--config",
        "preset=none,ftl=dftl,cmt-size=64K,buffer=lru,buffer-size=4M,buffer-volatile=on",
        timeout=1500)
    assert status == 0 and problems == 0, out
    assert configs == 1 and passes >= 3 and checks >= 3, out


@pytest.mark.slow
def test_long_soak(tmp_path):
    minutes = float(os.environ.get("SOAK_MINUTES", "120"))
    status, (ran, configs, passes, checks, problems), out = soak(
        tmp_path, "--minutes", str(minutes), timeout=int(minutes * 60) + 4 * 1800)
    print(out)
    assert status == 0 and problems == 0, out
    assert configs == 4 and ran >= minutes, out
