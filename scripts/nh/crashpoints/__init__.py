"""scripts/crashpoints as modules: host.py drives the device under qtest and records what it
acknowledged, workloads.py holds the seeded workloads, points.py runs one cut point (template,
cut, restart) and judge.py says what had to survive.  The entry script keeps the options, the
db workload (scripts/dblog-powercut --at-events) and the campaign's totals."""
