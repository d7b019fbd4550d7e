"""How vm-exec turns its COMMAND words into the guest's shell command line
(nhvm.guest_command), without booting: the guest runs the result with sh -c,
so the host's /bin/sh -c stands in for it here."""
import json
import socket
import socketserver
import subprocess
import threading
import time

import pytest

from helpers import nhvm


def guest_sh(words):
    return subprocess.run(["sh", "-c", nhvm.guest_command(words)], capture_output=True,
                          text=True, check=True).stdout


def test_several_words_are_an_argv():
    assert guest_sh(["sh", "-c", "echo a b"]) == "a b\n"
    assert guest_sh(["printf", "[%s]\\n", "x  y", "$HOME", "a|b", "it's", ""]) == \
        "[x  y]\n[$HOME]\n[a|b]\n[it's]\n[]\n"


def test_one_word_is_a_shell_string():
    assert guest_sh(["echo a b | tr ab AB; echo $((6 * 7))"]) == "A B\n42\n"
    assert nhvm.guest_command(["x=1; echo $x"]) == "x=1; echo $x"


def test_no_command():
    with pytest.raises(nhvm.Error):
        nhvm.guest_command([])


def test_help_documents_both_forms():
    out = subprocess.run([nhvm.os.path.join(nhvm.REPO, "scripts", "vm-exec"), "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "vm-exec -- sh -c 'echo a b'" in out
    assert "a shell string" in out and "an argv" in out


class Watch:
    watch_socket = None

    def __init__(self, watch):
        self.watch = watch


def test_watch_outside_tmux_says_how(tmp_path, monkeypatch, capsys):
    """--watch gives QEMU a QMP socket of the view's own; outside tmux, with nothing to record,
    the command that opens the view is printed (inside tmux it opens in a pane:
    tests/guest/test_live_view.py runs the view itself)."""
    monkeypatch.delenv("TMUX", raising=False)
    opts = Watch("--interval 2")
    args = nhvm.watch_qemu_args(opts, str(tmp_path))
    sock = str(tmp_path / "watch.qmp")
    assert args == ["-qmp", "unix:%s,server=on,wait=off" % sock]
    assert nhvm.start_watch(opts, "vm-exec") is None
    err = capsys.readouterr().err
    assert "not inside tmux" in err
    assert "scripts/nhtop --qmp %s --interval 2" % sock in err
    assert nhvm.watch_qemu_args(Watch(None), str(tmp_path)) == []


class FakeQemu(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Enough of QEMU's QMP for nhtop: the greeting, qmp_capabilities, qom-list finding the
    device and qom-get of its stats (host.write_cmds counts the samples)."""
    daemon_threads = True

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            self.server.conns.append(self.connection)
            self.reply({"QMP": {"version": {"qemu": {"major": 10, "minor": 0, "micro": 0},
                                            "package": ""}, "capabilities": []}})
            for msg in self.messages():
                if msg["execute"] == "qom-list":
                    ret = [{"name": nhvm.NVME_ID, "type": "child<nvme-hybrid>"}]
                elif msg["execute"] == "qom-get":
                    self.server.samples += 1
                    ret = json.dumps({"host": {"write_cmds": self.server.samples}})
                else:
                    ret = {}
                self.reply(dict({"return": ret}, **({"id": msg["id"]} if "id" in msg else {})))

        def messages(self):
            """The client's JSON objects: a stream, not lines (QEMU's parser needs no
            separator, and qemu.qmp sends none)."""
            buf, decoder = "", json.JSONDecoder()
            while True:
                data = self.connection.recv(4096)
                if not data:
                    return
                buf += data.decode()
                while buf.strip():
                    try:
                        msg, end = decoder.raw_decode(buf.lstrip())
                    except ValueError:
                        break
                    buf = buf.lstrip()[end:]
                    yield msg

        def reply(self, obj):
            self.wfile.write(json.dumps(obj).encode() + b"\n")

    def __init__(self, path):
        self.conns, self.samples = [], 0
        super().__init__(path, self.Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def exit(self):
        self.shutdown()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:     # that client is gone already
                pass
        self.server_close()


def test_watch_outside_tmux_records_headless(tmp_path, monkeypatch, capsys):
    """Outside tmux a --record in --watch still records: nhtop runs headless until QEMU (here a
    stand-in speaking QMP) goes away, and the record holds its samples."""
    monkeypatch.delenv("TMUX", raising=False)
    record = tmp_path / "run.jsonl"
    opts = Watch("--interval 0.1 --record %s" % record)
    nhvm.watch_qemu_args(opts, str(tmp_path))
    qemu = FakeQemu(opts.watch_socket)
    recorder = nhvm.start_watch(opts, "vm-exec")
    assert capsys.readouterr().err == \
        "vm-exec: --watch: not inside tmux, so no live view; recording to %s without one\n" \
        % record
    try:
        end = time.monotonic() + 60
        while qemu.samples < 3:
            assert recorder.proc.poll() is None, (tmp_path / "recorder.log").read_text()
            assert time.monotonic() < end, "no samples"
            time.sleep(0.05)
    finally:
        qemu.exit()
    t0 = time.monotonic()
    recorder.finish()
    assert time.monotonic() - t0 < nhvm.HeadlessRecorder.GRACE_SECONDS
    assert recorder.proc.returncode == 0 and capsys.readouterr().err == ""
    samples = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(samples) >= 3
    assert [s["stats"]["host"]["write_cmds"] for s in samples[:3]] == [1, 2, 3]


def test_watch_recorder_failure_is_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("TMUX", raising=False)
    opts = Watch("--record=%s" % (tmp_path / "nowhere" / "run.jsonl"))
    nhvm.watch_qemu_args(opts, str(tmp_path))
    recorder = nhvm.start_watch(opts, "run-vm")
    recorder.finish()
    err = capsys.readouterr().err
    assert "recording to %s without one" % (tmp_path / "nowhere" / "run.jsonl") in err
    assert "run-vm: --watch: the recorder exited with status 2, so nothing more is recorded: " \
           in err and "--record: no directory %s" % (tmp_path / "nowhere") in err


def test_guest_kernel_args(tmp_path, monkeypatch):
    """A variant's guest-images/NAME/cmdline (comments dropped) is added to the
    kernel command line; the default guest and variants without one get nothing;
    a guest given as a directory uses its own `cmdline` file."""
    monkeypatch.delenv("NVME_HYBRID_GUEST", raising=False)

    class Opts:
        guest = None
    opts = Opts()
    assert nhvm.guest_kernel_args(opts, "/nowhere") == ""
    opts.guest = "k510"
    assert nhvm.guest_kernel_args(opts, "/nowhere") == " nvme_core.streams=1"
    opts.guest = "db"
    assert nhvm.guest_kernel_args(opts, "/nowhere") == ""
    (tmp_path / "cmdline").write_text("# comment\na=1 b=2  # why\n\nc\n")
    opts.guest = str(tmp_path)
    assert nhvm.guest_kernel_args(opts, str(tmp_path)) == " a=1 b=2 c"


def common_opts(*args):
    ap = nhvm.argparse.ArgumentParser()
    nhvm.add_common_options(ap)
    return ap.parse_args(list(args))


def qemu_args(*args):
    return nhvm.qemu_command("qemu", common_opts(*args), "/g", "/d.img", "raw", "console=ttyS0",
                             "file:/c.log")


def test_accel_builds_the_command_line():
    """TCG by default; --accel kvm runs the host's CPU model (a --qemu -cpu comes later and
    wins); --icount belongs to TCG. KVM itself cannot run here (docs/timing.md)."""
    tcg = qemu_args()
    assert tcg[tcg.index("-accel") + 1] == "tcg" and "-cpu" not in tcg
    icount = qemu_args("--icount")
    assert icount[icount.index("-icount") + 1] == "shift=0,sleep=off"
    kvm = qemu_args("--accel", "kvm", "--qemu", "-cpu Nehalem")
    assert kvm[kvm.index("-accel") + 1] == "kvm" and "-icount" not in kvm
    assert kvm.count("-accel") == 1
    assert [kvm[i + 1] for i, a in enumerate(kvm) if a == "-cpu"] == ["host", "Nehalem"]


@pytest.mark.parametrize("tool,command", [("vm-exec", ["--", "true"]), ("run-vm", [])])
def test_kvm_with_icount_is_refused(tool, command):
    r = subprocess.run([nhvm.os.path.join(nhvm.REPO, "scripts", tool), "--accel", "kvm",
                        "--icount", "2", "--qemu-binary", "/nonexistent", *command],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "--accel kvm cannot run with --icount: QEMU counts guest instructions only when " \
           "it translates them itself (TCG)" in r.stderr
    with pytest.raises(nhvm.Error, match="cannot run with --icount"):
        nhvm.check_options(common_opts("--accel", "kvm", "--icount"))
    nhvm.check_options(common_opts("--icount"))


def test_kvm_without_dev_kvm_says_so(monkeypatch):
    monkeypatch.setattr(nhvm.os, "access", lambda path, mode: path != "/dev/kvm")
    with pytest.raises(nhvm.Error, match="--accel kvm: /dev/kvm (does not exist|is not "
                                         "readable and writable)"):
        nhvm.check_options(common_opts("--accel", "kvm"))
