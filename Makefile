# nvme-hybrid: a thin wrapper.  ./configure prepares build/ (dependencies, QEMU source, meson);
# ninja does the building; the test suites are meson test (engine), pytest (qtest, guest).
#
#   make            engine, simulator, QEMU with the device  -> build/qemu-system-x86_64
#   make sim        engine and simulator only                -> build/nvme-hybrid-sim
#   make guest      the Debian guest (kernel, initramfs, root image) -> build/guest/
#   make demo       build everything, boot a guest with the device and show it working
#   make check      build everything and run every test (unit, qtest, guest end to end)
#   make check-slow long soak tests and benchmarks (not part of check)
#   make powercut   power-cut campaign, POWERCUT_ROUNDS rounds (scripts/powercut-campaign)
#   make dblog-powercut  power cuts under the databases logging on the window, DBLOG_CUTS cuts
#   make crashpoints  a power cut at every device event of three qtest workloads, and a sample under databases (scripts/crashpoints)
#   make soak       hours of mixed work at 95% full with checks, SOAK_MINUTES (scripts/soak)
#   make fuzz       fuzzing build (clang, libFuzzer, ASan, UBSan) in build/fuzz and a campaign of
#                   FUZZ_SECONDS per configuration (scripts/fuzz-build, scripts/fuzz)
BUILD      := build
PYTEST     := $(BUILD)/venv/bin/pytest
# QEMU compiles with -g; without this ccache would key every object on the clone's directory.
export CCACHE_NOHASHDIR := 1
export CCACHE_BASEDIR := $(CURDIR)
MESON      := $(BUILD)/venv/bin/meson

.PHONY: soak fuzz powercut dblog-powercut crashpoints all sim guest demo check check-unit check-qtest check-scripts check-guest check-slow bench clean

all: $(BUILD)/.configured
	ninja -C $(BUILD)
	@# The device links libnh-engine.a with -l, which QEMU's ninja does not track: a newer
	@# archive must still give a newer QEMU, so drop the stale binary and let ninja relink it.
	@if [ $(BUILD)/libnh-engine.a -nt $(BUILD)/qemu-build/qemu-system-x86_64 ]; then \
	    rm -f $(BUILD)/qemu-build/qemu-system-x86_64; fi
	ninja -C $(BUILD)/qemu-build qemu-system-x86_64
	ln -sfn qemu-build/qemu-system-x86_64 $(BUILD)/qemu-system-x86_64

# configure is re-run when it changes; it is cheap when nothing else has.
$(BUILD)/.configured: configure
	./configure
	touch $@

guest: all
	guest-images/build
	guest-images/build --variant db

demo: all guest
	scripts/demo

check: all guest
	$(MAKE) check-unit check-qtest check-scripts check-guest

check-unit: all
	$(MESON) test -C $(BUILD) --print-errorlogs

check-qtest: all
	$(PYTEST) -q tests/qtest

# The engine, the simulator and the unit tests only (no QEMU).
sim: $(BUILD)/.configured
	ninja -C $(BUILD)

# scripts/: vm-exec's command forms, sweeps on Dask, the live view's arithmetic and plots,
# the simulator's --fit.  They need the simulator and build/venv, not QEMU.
check-scripts: sim
	$(PYTEST) -q tests/scripts

check-guest: all guest
	$(PYTEST) -q tests/guest

check-slow: all guest
	$(PYTEST) -q -m slow tests/guest
	$(MAKE) dblog-powercut

# A long power-cut campaign (about 20 s a round under TCG): the summary line and
# $(BUILD)/powercut.json; POWERCUT_ARGS passes more options (--seed S, --ftl F, ...).
POWERCUT_ROUNDS ?= 100
POWERCUT_ARGS   ?=
powercut: all
	guest-images/build
	scripts/powercut-campaign $(POWERCUT_ROUNDS) --dir $(BUILD)/powercut \
	    --json $(BUILD)/powercut.json $(POWERCUT_ARGS)

# Crash points (docs/powercut.md "Crash points"): the power cut at every event of the block
# workloads (volatile and capacitor-backed buffer) and the window workload, each restart judged,
# and 12 cuts at device events under the databases of the db guest (dblog-powercut --at-events);
# CRASHPOINTS_JOBS points at once.  The summary line and $(BUILD)/crashpoints.json;
# CRASHPOINTS_ARGS passes more options (--points N, --workload W, --seeds S, --verbose, ...).
# make check runs a sample of it (tests/qtest/test_crashpoints.py).
CRASHPOINTS_JOBS ?= 2
CRASHPOINTS_ARGS ?=
crashpoints: all guest
	scripts/crashpoints --jobs $(CRASHPOINTS_JOBS) --dir $(BUILD)/crashpoints \
	    --json $(BUILD)/crashpoints.json $(CRASHPOINTS_ARGS)

# Power cuts under PostgreSQL, Redis and RocksDB logging on the BAR1 window (scripts/dblog-powercut;
# about 50 s a cut under TCG, each cut under all three engines): the summary line and
# $(BUILD)/dblog-powercut.json.  DBLOG_ARGS passes more options (--async, --seed S, ...).
DBLOG_CUTS ?= 100
DBLOG_ARGS ?=
dblog-powercut: all guest
	scripts/dblog-powercut $(DBLOG_CUTS) --dir $(BUILD)/dblog-powercut \
	    --json $(BUILD)/dblog-powercut.json $(DBLOG_ARGS)

# The soak (docs/soak.md): SOAK_MINUTES shared out among four FTL and buffer
# configurations; the last line is `soak minutes M configs C passes P checks K problems X`.
SOAK_MINUTES ?= 120
soak: all guest
	scripts/soak --minutes $(SOAK_MINUTES) --json $(BUILD)/soak.json

# Coverage-guided fuzzing (docs/fuzzing.md): a second QEMU build in build/fuzz (build/qemu-build
# is not touched), then FUZZ_SECONDS per configuration; the last line is
# `execs E edges D crashes C`, and the status is non-zero when C is not 0.
FUZZ_SECONDS ?= 60
FUZZ_ARGS    ?=
fuzz: $(BUILD)/.configured
	scripts/fuzz-build
	scripts/fuzz --seconds $(FUZZ_SECONDS) $(FUZZ_ARGS)

bench: all guest
	scripts/bench-overhead
	scripts/bench-fidelity
	scripts/bench-fidelity-sim
	scripts/bench-sim
	scripts/bench-ba
	scripts/bench-ba --icount
	scripts/bench-dstream
	scripts/bench-dblog
	scripts/bench-dblog --icount
	scripts/bench-seed001
	scripts/bench-warp
	scripts/bench-zns
	scripts/bench-placement-waf

clean:
	rm -rf $(BUILD)/qemu-build $(BUILD)/guest
	ninja -C $(BUILD) clean
