#!/usr/bin/env python3
"""The guest half of scripts/bench-dblog (Python standard library only; runs in the db guest,
copied into the benchmark's share).  One boot: nh-db-setup --wal puts the three engines on the
namespace with their rings, then every repetition runs each engine in each mode (the order of
the modes rotates from one repetition to the next) and, in each mode, each client count:

  block   the log on the block device, synchronously durable (PostgreSQL synchronous_commit=on,
          RocksDB WAL sync=true, Redis appendfsync always): every commit waits for fdatasync
  window  the same settings, the servers (and db_bench) under libnhwal.so: every commit waits
          for the log record's persist in the BAR1 window
  async   asynchronous logging, the upper bound (synchronous_commit=off, sync=false,
          appendfsync everysec): acknowledged commits may be lost on a power cut

Workloads: pgbench -N (simple update: at scale 1 the TPC-B-like branch update serializes every
client on one row) for --duration seconds; "linkbench": PostgreSQL again, LinkBench's operation
mix on a graph of --linkbench-nodes nodes (linkbench/ beside this script, loaded at the start), for
--duration seconds, its commit latency that of the write transactions; db_bench
readrandomwriterandom (YCSB-A-like: 50% reads, 50% updates of 64-byte values) on a database
filled at the start, for --duration seconds;
redis-benchmark SET of 64-byte values (the write half of YCSB-A; GETs do not touch the AOF),
as many requests as the previous run of that mode and client count made in --duration seconds.

Each run is one JSON line in /mnt/share/results.jsonl: throughput, commits, commit latency (mean
and p99; PostgreSQL: a transaction's, RocksDB: a write's, Redis: a SET's), the device's counters
over the run (vendor log page: Flush commands, host bytes written, NAND pages programmed) and the
ring's appends and flushes.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import time

SHARE = "/mnt/share"
DB = "/mnt/db"
ROCKS_DB = DB + "/rocksdb/ycsb"
REDIS_SOCK = "/run/redis/redis.sock"
LIB_ENV = {"LD_PRELOAD": "/usr/local/lib/libnhwal.so"}
ROCKS_LIB_ENV = dict(LIB_ENV, NHWAL_RING="rocksdb", NHWAL_PATTERN=DB + "/rocksdb/*/*.log")
RING_OF = {"pg": "pg", "linkbench": "pg", "rocksdb": "rocksdb", "redis": "redis"}
SERVER_OF = {"pg": "pg", "linkbench": "pg", "redis": "redis"}   # db_bench is its own process
LINKBENCH = SHARE + "/linkbench"
# LinkBench's request mix (its config/FBWorkload.properties, from Facebook's production graph
# workload), percent; pgbench takes whole weights, so thousandths of a percent.
LINKBENCH_MIX = {"addlink": 8.9886601, "deletelink": 2.9907664, "updatelink": 8.0122125,
                 "countlink": 4.8863567, "getlink": 0.5261142, "getlinklist": 50.7119145,
                 "getnode": 12.9326683, "addnode": 2.5732789, "updatenode": 7.366437,
                 "deletenode": 1.0115914}
LINKBENCH_WRITES = ("addlink", "deletelink", "updatelink", "addnode", "updatenode", "deletenode")


def sh(args, env=None):
    # In /tmp: runuser keeps root's working directory, which the postgres user may not enter.
    r = subprocess.run(args, env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, cwd="/tmp")
    if r.returncode:
        raise SystemExit("dblog-bench-guest: %s failed (%d):\n%s"
                         % (" ".join(args), r.returncode, r.stdout[-3000:]))
    return r.stdout


def device_counters():
    doc = json.loads(sh(["nvme-hybrid-stats", "--json"]))
    g = doc["geometry"]
    return {"flushes": doc["host"]["flush_cmds"], "host_write_bytes": doc["host"]["write_bytes"],
            "nand_bytes": doc["nand"]["page_programs"] * g["physical_bytes"] // g["pages_total"]}


def ring_counters(ring):
    out = sh(["nhwal", "status", "--name", ring])
    m = re.search(r"appends ([0-9]+) append_bytes ([0-9]+) flushes ([0-9]+)", out)
    return {"ring_appends": int(m.group(1)), "ring_bytes": int(m.group(2)),
            "ring_flushes": int(m.group(3))}


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100.0 * len(v)))]


class Bench:
    def __init__(self, o):
        self.o = o
        self.server_lib = {"pg": True, "redis": True}     # nh-db-setup --wal started them so
        self.redis_rate = {}                              # (mode, clients) -> SETs per second
        self.pg_engines = {e for e in o.engines if SERVER_OF.get(e) == "pg"}
        self.cold = set(self.pg_engines)                  # see run()

    def server_mode(self, engine, mode):
        """(Re)start the engine's server for @mode: with the library for window, without
        for block and async; async's own settings are per run (pg) or set here (redis)."""
        if engine not in SERVER_OF:
            return
        server = SERVER_OF[engine]
        lib = mode == "window"
        if self.server_lib[server] != lib:
            sh(["nh-db-setup", "--restart"] + (["--wal"] if lib else []) + [server])
            self.server_lib[server] = lib
            if server == "pg":
                self.cold |= self.pg_engines
        if server == "redis":
            sh(["redis-cli", "-s", REDIS_SOCK, "config", "set", "appendfsync",
                "everysec" if mode == "async" else "always"])

    def pgbench(self, mode, clients, workload, db, commit_scripts=None):
        """pgbench for --duration s: its throughput (transactions a second), and the commits
        and their latency from its per-transaction log, counting only the scripts numbered in
        @commit_scripts when given (the others only read, and commit nothing to the WAL)."""
        logdir = "/tmp/pgb"
        shutil.rmtree(logdir, ignore_errors=True)
        os.mkdir(logdir)
        os.chmod(logdir, 0o777)
        env = {"PGOPTIONS": "-c synchronous_commit=off"} if mode == "async" else {}
        out = sh(["runuser", "-u", "postgres", "--", "env"] + ["%s=%s" % kv for kv in env.items()]
                 + ["pgbench", "-h", "/run/postgresql", "-n", "-c", str(clients),
                    "-j", str(min(clients, 2)), "-T", str(self.o.duration), "-l",
                    "--log-prefix=%s/tx" % logdir] + workload + [db])
        tps = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
        lat = []
        for name in os.listdir(logdir):
            with open(os.path.join(logdir, name)) as f:
                # client, transaction, latency us, script, epoch s, us
                rows = [line.split() for line in f if line.strip()]
            lat += [int(r[2]) for r in rows if commit_scripts is None or int(r[3]) in commit_scripts]
        return dict(throughput=tps, commits=len(lat), lat_mean_us=sum(lat) / max(1, len(lat)),
                    lat_p99_us=percentile(lat, 99) if lat else 0.0)

    def run_pg(self, mode, clients):
        return self.pgbench(mode, clients, ["-N"], "postgres")

    def load_linkbench(self):
        sh(["runuser", "-u", "postgres", "--", "createdb", "-h", "/run/postgresql", "linkdb"])
        sh(["runuser", "-u", "postgres", "--", "psql", "-q", "-h", "/run/postgresql",
            "-v", "maxid=%d" % self.o.linkbench_nodes, "-f", LINKBENCH + "/schema.sql", "linkdb"])

    def run_linkbench(self, mode, clients):
        workload = ["-D", "maxid=%d" % self.o.linkbench_nodes]
        for op, percent in LINKBENCH_MIX.items():
            workload += ["-f", "%s/%s.sql@%d" % (LINKBENCH, op, round(percent * 1000))]
        r = self.pgbench(mode, clients, workload, "linkdb",
                         {i for i, op in enumerate(LINKBENCH_MIX) if op in LINKBENCH_WRITES})
        # The graph's own invariant: every count is its number of visible links.
        bad = sh(["runuser", "-u", "postgres", "--", "psql", "-At", "-h", "/run/postgresql",
                  "-c", "SELECT count(*) FROM lb_check", "linkdb"]).strip()
        if bad != "0":
            raise SystemExit("dblog-bench-guest: linkbench: %s link counts differ from the "
                             "visible links after a %s run" % (bad, mode))
        return r

    def run_rocksdb(self, mode, clients):
        out = sh(["db_bench", "--benchmarks=readrandomwriterandom", "--use_existing_db=1",
                  "--readwritepercent=50", "--db=" + ROCKS_DB, "--num=%d" % self.o.rocks_keys,
                  "--value_size=64", "--sync=%s" % ("false" if mode == "async" else "true"),
                  "--threads=%d" % clients, "--duration=%d" % self.o.duration, "--histogram=1"],
                 env=ROCKS_LIB_ENV if mode == "window" else None)
        m = re.search(r"^readrandomwriterandom +: .* ([0-9]+) ops/sec .*writes:([0-9]+)", out,
                      re.M)
        w = re.search(r"Microseconds per write:\nCount: [0-9]+ Average: ([0-9.]+).*\n.*\n"
                      r"Percentiles: .* P99: ([0-9.]+)", out)
        if not m or not w:
            raise SystemExit("dblog-bench-guest: db_bench printed no result:\n" + out[-3000:])
        return dict(throughput=float(m.group(1)), commits=int(m.group(2)),
                    lat_mean_us=float(w.group(1)), lat_p99_us=float(w.group(2)))

    def run_redis(self, mode, clients):
        rate = self.redis_rate.get((mode, clients), 100.0 * clients)
        n = max(50 * clients, int(rate * self.o.duration))
        out = sh(["redis-benchmark", "-s", REDIS_SOCK, "-t", "set", "-d", "64", "-c",
                  str(clients), "-n", str(n), "-r", "100000", "--csv"])
        m = re.search(r'^"SET","([0-9.]+)","([0-9.]+)","[0-9.]+","[0-9.]+","[0-9.]+",'
                      r'"([0-9.]+)"', out, re.M)
        if not m:
            raise SystemExit("dblog-bench-guest: redis-benchmark printed no result:\n" + out)
        self.redis_rate[(mode, clients)] = float(m.group(1))
        return dict(throughput=float(m.group(1)), commits=n,
                    lat_mean_us=1000 * float(m.group(2)), lat_p99_us=1000 * float(m.group(3)))

    def run(self, rep, engine, mode, clients):
        if engine in self.cold:
            # The first run since PostgreSQL started: its start is a checkpoint, after which
            # the first change of every page puts a full image of it in the WAL.  Measured,
            # that run paid for them (block, one client: 2.7 times the NAND bytes a commit and
            # 73% of the throughput of the same run later in the boot), whichever mode came
            # first after a restart.  So it runs once unmeasured.
            getattr(self, "run_" + engine)(mode, clients)
            self.cold.discard(engine)
        dev0, ring0 = device_counters(), ring_counters(RING_OF[engine])
        t0 = time.monotonic()
        r = getattr(self, "run_" + engine)(mode, clients)
        r["seconds"] = time.monotonic() - t0
        dev1, ring1 = device_counters(), ring_counters(RING_OF[engine])
        r.update({k: dev1[k] - dev0[k] for k in dev0})
        r.update({k: ring1[k] - ring0[k] for k in ring0})
        r.update(rep=rep, engine=engine, mode=mode, clients=clients)
        with open(os.path.join(SHARE, "results.jsonl"), "a") as f:
            f.write(json.dumps(r) + "\n")
        print("rep %d %-7s %-6s %2d clients: %10.1f /s, commit %9.1f us (p99 %9.1f)"
              % (rep, engine, mode, clients, r["throughput"], r["lat_mean_us"], r["lat_p99_us"]),
              flush=True)

    def main(self):
        o = self.o
        sh(["nh-db-setup", "--wal", "pg", "redis", "rocksdb"])
        g = json.loads(sh(["nvme-hybrid-stats", "--json"]))["geometry"]
        with open(os.path.join(SHARE, "device-timing.json"), "w") as f:
            json.dump({"t_read_ns": g["t_read_ns"], "t_prog_ns": g["t_prog_ns"]}, f)
        if "linkbench" in o.engines:
            self.load_linkbench()
        if "rocksdb" in o.engines:
            sh(["db_bench", "--benchmarks=fillrandom", "--db=" + ROCKS_DB,
                "--num=%d" % o.rocks_keys, "--value_size=64", "--sync=false"])
        for rep in range(o.reps):
            modes = o.modes[rep % len(o.modes):] + o.modes[:rep % len(o.modes)]
            for engine in o.engines:
                for mode in modes:
                    self.server_mode(engine, mode)
                    for clients in o.clients:
                        self.run(rep, engine, mode, clients)
        open(os.path.join(SHARE, "done"), "w").close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engines", required=True, type=lambda s: s.split(","))
    ap.add_argument("--modes", required=True, type=lambda s: s.split(","))
    ap.add_argument("--clients", required=True, type=lambda s: [int(c) for c in s.split(",")])
    ap.add_argument("--reps", type=int, required=True)
    ap.add_argument("--duration", type=int, required=True)
    ap.add_argument("--rocks-keys", type=int, default=20000)
    ap.add_argument("--linkbench-nodes", type=int, default=10000)
    Bench(ap.parse_args()).main()


if __name__ == "__main__":
    main()
