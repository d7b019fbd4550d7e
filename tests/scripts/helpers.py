"""Shared by the tests of scripts/: the repository's paths and its Python
modules in scripts/."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(REPO, "scripts")
SIM = os.environ.get("NVME_HYBRID_SIM") or os.path.join(REPO, "build", "nvme-hybrid-sim")
sys.path.insert(0, SCRIPTS)

import nhvm  # noqa: E402,F401
