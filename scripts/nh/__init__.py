"""The host tools' library: the scripts in scripts/ import it as `from nh import vm`, which works
because Python puts a script's own directory first on sys.path.  nh/paths.py knows the checkout,
nh/stats.py reads statistics documents, nh/sim.py runs the simulator, nh/vm.py and nh/qmp.py
boot and talk to a guest.  The guest gets nh/table.py and nh/stats.py (guest-images/build), so
those two import nothing else."""
