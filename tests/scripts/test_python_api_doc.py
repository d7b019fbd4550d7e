"""docs/python-api.md's example runs: the ```python blocks of its "Example" section, in order,
as one program started at the top of the checkout, as a notebook would run them."""
import os
import re
import subprocess
import sys

from helpers import REPO, SIM

DOC = os.path.join(REPO, "docs", "python-api.md")


def example_code():
    with open(DOC) as f:
        text = f.read()
    section = re.search(r"^## Example\n(.*?)(?=^## )", text, re.M | re.S)
    assert section, "docs/python-api.md has no '## Example' section"
    blocks = re.findall(r"^```python\n(.*?)^```", section.group(1), re.M | re.S)
    assert blocks, "the Example section of docs/python-api.md has no ```python block"
    return "\n".join(blocks)


def test_the_example_runs(tmp_path):
    # What a reader would look at afterwards: the table, one row per policy, no failures.
    check = ('\nassert list(df["policy"]) == ["none", "lru", "bplru", "cbm"], df\n'
             'assert df["error"].isna().all(), df["error"]\n'
             'assert (df["nand.block_erases"] > 0).all(), "no GC: the fill did not happen"\n')
    script = tmp_path / "example.py"
    script.write_text(example_code() + check)
    r = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, NVME_HYBRID_SIM=SIM))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4/4: " in r.stdout
    assert "cmt: unknown key (valid keys: preset, channels," in r.stdout
