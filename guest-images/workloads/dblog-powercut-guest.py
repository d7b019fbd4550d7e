#!/usr/bin/env python3
"""The guest half of scripts/dblog-powercut (Python standard library only; runs in the db
guest, copied into the campaign's share).  One boot, two phases:

check      (rounds after the first) the restart after the previous round's power cut:
           nh-db-setup --keep (with --wal: the rings are replayed, as root, before any server
           starts), each engine's own recovery (PostgreSQL's and Redis's start, RocksDB's open
           by ldb), what each holds of the previous round's writes (present-ENGINE-R.txt), each
           engine's own consistency check (amcheck's bt_index_check, redis-check-aof, ldb
           checkconsistency) and a fio verify of the region outside the databases that the
           previous round wrote before its workload; the verdicts in check-R.json.
workload   fio writes that region (durable before anything else starts), then every engine's
           client writes until the host cuts the power, reporting each acknowledged commit or
           write as one line, one write(2), in ack-ENGINE-R.txt on the 9p share, which reaches
           the host file before the call returns: PostgreSQL, autocommit INSERTs from psql
           sessions (the \\echo after each is printed once the commit returned); Redis, SETs
           through python3-redis; RocksDB, db_bench fillseq (its progress line "finished N ops"
           means keys 0..N-1 were written and, with sync=true, synced).
--mode async: the same without the window and with asynchronous logging (PostgreSQL
synchronous_commit=off, Redis appendfsync everysec, RocksDB sync=false): acknowledged writes
may be lost, which is what the host's checker must see.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import threading
import time

SHARE = "/mnt/share"
DB = "/mnt/db"
SOCK = "/run/redis/redis.sock"
ROCKS_ENV = {"LD_PRELOAD": "/usr/local/lib/libnhwal.so", "NHWAL_RING": "rocksdb",
             "NHWAL_PATTERN": DB + "/rocksdb/*/*.log"}
PSQL = ["runuser", "-u", "postgres", "--", "psql", "-h", "/run/postgresql", "-X", "-q", "-A",
        "-t", "-v", "ON_ERROR_STOP=1", "postgres"]
FIO_MB = 8          # the region fio writes and verifies: the namespace's last FIO_MB MiB
ID_BASE = 10 ** 7   # PostgreSQL ids and Redis keys of round R, client C: R*ID_BASE + C*10**6 + i


def run(args, env=None):
    """(status, output) of a command run in / (the servers' users cannot enter the share);
    the output is stdout, with stderr after it when the command failed."""
    r = subprocess.run(args, env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, cwd="/")
    return r.returncode, r.stdout + (r.stderr if r.returncode else "")


def must(args, env=None):
    status, out = run(args, env)
    if status:
        raise SystemExit("dblog-powercut-guest: %s failed (%d):\n%s"
                         % (" ".join(args), status, out[-3000:]))
    return out


def acknowledged_any(engine, rnd):
    """Did the client of @engine report any acknowledged write in round @rnd (a whole line of
    its ack file in the share)?"""
    try:
        with open(os.path.join(SHARE, "ack-%s-%d.txt" % (engine, rnd))) as f:
            return "\n" in f.read()
    except FileNotFoundError:
        return False


def put(name, text):
    tmp = os.path.join(SHARE, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, os.path.join(SHARE, name))


def fio(rnd, verify):
    dev = must(["nvme-hybrid-dev"]).strip()
    size = int(must(["blockdev", "--getsize64", dev]))
    args = ["fio", "--name=outside", "--filename=" + dev, "--offset=%d" % (size - FIO_MB * 2**20),
            "--size=%dM" % FIO_MB, "--rw=write", "--bs=64k", "--direct=1", "--ioengine=psync",
            "--verify=crc32c", "--randseed=%d" % (rnd + 1)]
    args += ["--verify_only"] if verify else ["--do_verify=0", "--fsync_on_close=1"]
    return run(args)


class Guest:
    def __init__(self, o):
        self.o = o
        self.wal = o.mode == "window"
        self.walopt = ["--wal"] if self.wal else []

    def start(self, engines, fresh):
        """nh-db-setup: a new file system (fresh) or the one found; then each server on its
        own, so that one that cannot recover does not keep the others from being checked.
        Returns {engine: (started, output)}."""
        first = ["nh-db-setup"] + ([] if fresh else ["--keep"]) + self.walopt + ["rocksdb"]
        status, out = run(first)
        put("setup-%d.txt" % self.o.round, out)
        if status:
            return {e: (False, out) for e in engines}
        started = {"rocksdb": (True, out)}
        for e in ("pg", "redis"):
            if e in engines:
                st, o = run(["nh-db-setup", "--restart"] + self.walopt + [e])
                started[e] = (st == 0, o)
        if self.o.mode == "async" and started.get("redis", (False,))[0]:
            must(["redis-cli", "-s", SOCK, "config", "set", "appendfsync", "everysec"])
        return started

    # -------------------------------------------------------------------- check phase

    def check_pg(self, rnd):
        lo, hi = rnd * ID_BASE, (rnd + 1) * ID_BASE
        st, out = run(PSQL + ["-c", "select id from acked where id >= %d and id < %d" % (lo, hi)])
        if st:
            return None, "select failed: " + out[-500:]
        present = out.split()
        st, out = run(PSQL + ["-c", "select bt_index_check('acked_pkey', true)"])
        return present, None if st == 0 else "amcheck: " + out[-500:]

    def check_redis(self, rnd):
        code = ("import redis\nr = redis.Redis(unix_socket_path=%r)\n"
                "for k in r.scan_iter('r%d:*', count=1000):\n"
                "    i = k.split(b':')[1]\n"
                "    if r.get(k) == b'v' + i * 4: print(int(i))\n" % (SOCK, rnd))
        st, out = run(["python3", "-c", code])
        if st:
            return None, "scan failed: " + out[-500:]
        present = out.split()
        st, aof = run(["redis-check-aof", DB + "/redis/appendonlydir/appendonly.aof.manifest"])
        ok = st == 0 and "All AOF files and manifest are valid" in aof
        return present, None if ok else "redis-check-aof: " + aof[-500:]

    def check_rocksdb(self, rnd):
        db = "--db=%s/rocksdb/r%d" % (DB, rnd)
        if not os.path.exists(db[5:] + "/CURRENT"):
            # The cut came before db_bench had made the database: nothing of it can have been
            # acknowledged (the host counts anything it saw acknowledged as missing).
            return [], None
        st, out = run(["ldb", db, "--hex", "scan", "--no_value"])
        if st and not acknowledged_any("rocksdb", rnd):
            # db_bench's fillseq opens the database, destroys it (DestroyDB unlinks its files
            # one by one, in directory order) and creates it again before its first put; a cut
            # in between leaves a half-destroyed database, e.g. CURRENT naming a MANIFEST
            # already unlinked.  RocksDB does not make that atomic, and nothing of it was
            # acknowledged: the database was not made yet, as above.
            return [], None
        if st:
            return None, "ldb scan (recovery) failed: " + out[-500:]
        # fillseq's keys: the counter as 8 big-endian bytes, then "00000000".
        present = [str(int(line[2:18], 16)) for line in out.split() if line.startswith("0x")]
        st, out = run(["ldb", db, "checkconsistency"])
        return present, None if st == 0 and "OK" in out else "ldb checkconsistency: " + out[-500:]

    def check(self):
        o = self.o
        prev = o.round - 1
        verdict = {}
        for engine, (up, out) in self.start(o.engines, fresh=False).items():
            if engine not in o.engines:
                continue
            if not up:
                verdict[engine] = dict(recovered=False, problem="start failed: " + out[-800:])
                continue
            present, problem = getattr(self, "check_" + engine)(prev)
            if present is not None:
                put("present-%s-%d.txt" % (engine, prev), "\n".join(present) + "\n")
            verdict[engine] = dict(recovered=present is not None and problem is None,
                                   problem=problem)
        if verdict.get("rocksdb", {}).get("recovered"):
            # Judged: every round's db_bench makes a database of its own, and each keeps a WAL
            # preallocated to about 70 MB (fallocate KEEP_SIZE), so they would fill the file
            # system in a dozen rounds.
            shutil.rmtree("%s/rocksdb/r%d" % (DB, prev), ignore_errors=True)
        st, out = fio(prev, verify=True)
        verdict["fio"] = dict(ok=st == 0, output=out[-800:] if st else "")
        replays = re.findall(r"replayed ([0-9]+) records .* from ring '(\w+)'",
                             open(os.path.join(SHARE, "setup-%d.txt" % o.round)).read())
        verdict["replayed"] = {ring: int(n) for n, ring in replays}
        put("check-%d.json" % o.round, json.dumps(verdict))

    # -------------------------------------------------------------------- workload phase

    def acks(self, engine):
        return os.open(os.path.join(SHARE, "ack-%s-%d.txt" % (engine, self.o.round)),
                       os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def pg_client(self, c, ack):
        base = self.o.round * ID_BASE + c * 10 ** 6
        p = subprocess.Popen(["stdbuf", "-oL"] + PSQL, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd="/")

        def feed():
            for i in range(base, base + 10 ** 6):
                p.stdin.write("insert into acked values (%d, repeat('p', 100));\n\\echo ack %d\n"
                              % (i, i))
                p.stdin.flush()
        threading.Thread(target=feed, daemon=True).start()
        for line in p.stdout:
            if line.startswith("ack "):
                os.write(ack, (line[4:].strip() + "\n").encode())

    def redis_client(self, c, ack):
        import redis
        r = redis.Redis(unix_socket_path=SOCK)
        base = self.o.round * ID_BASE + c * 10 ** 6
        for i in range(base, base + 10 ** 6):
            r.set("r%d:%d" % (self.o.round, i), b"v" + str(i).encode() * 4)
            os.write(ack, b"%d\n" % i)

    def rocksdb_client(self, ack):
        cmd = ["db_bench", "--benchmarks=fillseq", "--db=%s/rocksdb/r%d" % (DB, self.o.round),
               "--num=100000000", "--value_size=64", "--sync=%s" % str(self.wal).lower()]
        p = subprocess.Popen(cmd, env=dict(os.environ, **(ROCKS_ENV if self.wal else {})),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/")
        buf = b""
        while True:
            chunk = p.stderr.read1(4096)
            if not chunk:
                break
            buf += chunk
            *done, buf = re.split(rb"[\r\n]", buf)
            for line in done:
                m = re.match(rb"\.\.\. finished +([0-9]+) ops", line.strip())
                if m:
                    os.write(ack, m.group(1) + b"\n")

    def workload(self):
        o = self.o
        if o.round == 0:
            started = self.start(o.engines, fresh=True)
            bad = {e: out for e, (up, out) in started.items() if not up}
            if bad:
                raise SystemExit("dblog-powercut-guest: could not start %s" % bad)
            if "pg" in o.engines:
                must(PSQL + ["-c", "create extension amcheck; "
                             "create table acked (id bigint primary key, pad text)"])
                if o.mode == "async":
                    must(PSQL + ["-c", "alter system set synchronous_commit = off"])
                    must(PSQL + ["-c", "select pg_reload_conf()"])
        st, out = fio(o.round, verify=False)
        if st:
            raise SystemExit("dblog-powercut-guest: fio could not write the region:\n" + out)
        threads = []
        for engine in o.engines:
            ack = self.acks(engine)
            if engine == "rocksdb":
                threads.append(threading.Thread(target=self.rocksdb_client, args=(ack,)))
            else:
                for c in range(o.clients):
                    threads.append(threading.Thread(target=getattr(self, engine + "_client"),
                                                    args=(c, ack)))
        for t in threads:
            t.daemon = True
            t.start()
        put("go-%d" % o.round, "")
        while True:
            time.sleep(60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--round", type=int, required=True)
    ap.add_argument("--mode", choices=("window", "async"), required=True)
    ap.add_argument("--engines", type=lambda s: s.split(","), required=True)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--check-only", action="store_true")
    o = ap.parse_args()
    g = Guest(o)
    if o.round > 0:
        g.check()
    put("checked-%d" % o.round, "")
    if not o.check_only:
        g.workload()


if __name__ == "__main__":
    main()
