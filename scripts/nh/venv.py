"""Run the calling script with build/venv's Python, where ./configure installed the
Python packages our tools use (Dask, pandas, pyarrow, matplotlib, textual).

    from nh import venv; venv.ensure()      # first thing in a script, before those imports

re-executes the script with build/venv/bin/python3 when it runs under another interpreter.
$NVME_HYBRID_PYTHON names another interpreter that has the packages (for example a Dask
cluster's environment)."""
import os
import sys

from nh.paths import BUILD

VENV_PYTHON = os.path.join(BUILD, "venv", "bin", "python3")


def ensure(modules=("dask", "distributed", "pandas", "pyarrow", "matplotlib")):
    missing = [m for m in modules if not _importable(m)]
    if not missing:
        return
    want = os.environ.get("NVME_HYBRID_PYTHON") or VENV_PYTHON
    if os.environ.get("NVME_HYBRID_VENV_EXEC") or not os.access(want, os.X_OK):
        sys.exit("%s: Python packages missing (%s) in %s; run ./configure, which installs "
                 "them into build/venv" % (os.path.basename(sys.argv[0]), ", ".join(missing),
                                            sys.prefix))
    os.environ["NVME_HYBRID_VENV_EXEC"] = "1"
    os.execv(want, [want] + sys.argv)


def _importable(name):
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:     # a dotted name whose parent package is missing
        return False
