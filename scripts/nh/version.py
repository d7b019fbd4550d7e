"""The project's version, which every tool's --version prints: the one line of VERSION at the
top of the checkout (meson.build reads the same file for the C programs)."""
import os

from nh.paths import REPO


def version():
    with open(os.path.join(REPO, "VERSION")) as f:
        return f.read().strip()


def add_option(ap):
    """--version on an argparse parser: "PROG VERSION"."""
    ap.add_argument("--version", action="version", version="%(prog)s " + version())
