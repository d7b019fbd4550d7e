"""nh/session.py without a guest: a stand-in for vm-exec that writes a file, sleeps or exits with
a given status shows what a campaign's boot sees (the boots themselves: tests/guest)."""
import os
import stat

import pytest

from nh import session as nhsession


class Closed:
    def close(self):
        pass


@pytest.fixture
def fake_vm_exec(tmp_path, monkeypatch):
    """vm-exec as a shell script: the command after "--" is run by sh, so a test says what the
    boot does (touch a file, sleep, exit 125)."""
    path = tmp_path / "vm-exec"
    path.write_text('#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done\nshift\nexec sh -c "$1"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(nhsession, "VM_EXEC", str(path))
    return path


def test_workdir_starts_blank(tmp_path):
    guest = tmp_path / "guest.py"
    guest.write_text("print()\n")
    work = tmp_path / "work"
    os.makedirs(work / "share")
    (work / "share" / "old").write_text("")
    for name in ("disk.img", "disk.img.nh-state", "disk.img.nh-ba", "disk.img.nh-ba.bad"):
        (work / name).write_text("")
    path, share, disk = nhsession.workdir(str(work), "x-", str(guest))
    assert (path, share, disk) == (str(work), str(work / "share"), str(work / "disk.img"))
    assert os.listdir(share) == ["guest.py"]
    assert sorted(os.listdir(work)) == ["share"]


def test_a_boot_that_ends_early_or_late_is_an_error(tmp_path, fake_vm_exec):
    log = str(tmp_path / "log")
    with nhsession.Session(str(tmp_path), log) as s:
        s.start([], "exit 0")
        with pytest.raises(nhsession.Error, match=r"the guest ended \(vm-exec 0\) before the "
                                                  r"check phase; see " + log):
            s.wait_for("the check phase", 30, str(tmp_path / "checked"))
    with nhsession.Session(str(tmp_path), log) as s:
        s.start([], "sleep 30")
        with pytest.raises(nhsession.Error, match="no check phase within 0 s"):
            s.wait_for("check phase", 0, lambda: False)
        proc = s.proc
    assert proc.returncode is not None, "leaving the session kills vm-exec"


def test_wait_for_a_file_then_the_cut(tmp_path, fake_vm_exec):
    checked = tmp_path / "checked"
    with nhsession.Session(str(tmp_path), str(tmp_path / "log")) as s:
        s.start([], "touch %s; sleep 0.3; exit 125" % checked)
        s.wait_for("check phase", 30, str(checked))
        s.dev = Closed()
        s.wait_cut(30, "qmp")
    with nhsession.Session(str(tmp_path), str(tmp_path / "log")) as s:
        s.start([], "exit 3")
        s.dev = Closed()
        with pytest.raises(nhsession.Error, match=r"vm-exec exited 3 after the cut \(125 "):
            s.wait_cut(30, "kill")
    for status in (0, 1):
        with nhsession.Session(str(tmp_path), str(tmp_path / "log")) as s:
            s.start([], "exit %d" % status)
            s.dev = Closed()
            if status:
                with pytest.raises(nhsession.Error, match=r"the last boot \(check only\) failed: "
                                                          r"vm-exec 1"):
                    s.power_off(30)
            else:
                s.power_off(30)
