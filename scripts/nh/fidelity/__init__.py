"""scripts/bench-fidelity-sim as modules: device.py (the device both simulators are given and the
analytical bound), ours.py (our simulator's runs), mqsim.py (MQSim's) and report.py (the tables
and the plot).  The entry script keeps the options and the order of the runs."""
