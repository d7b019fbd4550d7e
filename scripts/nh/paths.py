"""Where things are in this checkout: the one place that derives them from the package's own
location, so no script computes them from its __file__."""
import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(REPO, "scripts")
BUILD = os.path.join(REPO, "build")
# What the campaigns run inside a guest: copied into its --share directory (/mnt/share) each run,
# not built into an image.
WORKLOADS = os.path.join(REPO, "guest-images", "workloads")
# The trace simulator as `ninja -C build` makes it.
SIM = os.path.join(BUILD, "nvme-hybrid-sim")


def simulator(sim=None):
    """The simulator's path: @sim, else $NVME_HYBRID_SIM, else build/nvme-hybrid-sim of this
    checkout."""
    return sim or os.environ.get("NVME_HYBRID_SIM") or SIM
