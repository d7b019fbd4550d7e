"""Shared by the tests of scripts/: the repository's paths and its Python package, scripts/nh
(on sys.path through pytest.ini's pythonpath)."""
from nh import paths
from nh import vm as nhvm  # noqa: F401
from nh.paths import REPO, SCRIPTS  # noqa: F401

SIM = paths.simulator()
