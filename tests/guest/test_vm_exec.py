"""vm-exec's COMMAND: several words are an argv (each reaches the guest
program as one argument), a single word is a shell string."""
import os
import subprocess

from conftest import REPO, VM_EXEC


def vm_exec(*command, timeout=300):
    r = subprocess.run([VM_EXEC, "--timeout", str(timeout), "--size", "64M", "--"] + list(command),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=timeout + 60)
    assert r.returncode == 0, "vm-exec %r exited %d:\n%s\n%s" % (command, r.returncode,
                                                                 r.stdout, r.stderr[-3000:])
    return r.stdout


def test_argv_and_shell_string():
    # argv: sh -c gets 'echo a b | tr ab AB' as one argument, the pipe runs
    # inside it; "x  y" keeps its two spaces and '$HOME' stays unexpanded,
    # because every word is quoted for the guest's shell.
    out = vm_exec("sh", "-c", "echo a b | tr ab AB; printf '[%s]\\n' \"$@\"", "sh",
                  "x  y", "$HOME", "it's")
    assert out.splitlines() == ["A B", "[x  y]", "[$HOME]", "[it's]"], out
    # one word: a shell string, with a pipe and a command substitution
    out = vm_exec("echo one two | tr a-z A-Z; echo $((6 * 7))")
    assert out.splitlines() == ["ONE TWO", "42"], out


def test_boot_retried_once_after_qemu_tlb_race(tmp_path):
    """QEMU's TCG aborting in an MMIO assertion before the command started
    (docs: scripts/vm-exec, TCG_MAP_RACE) costs one more boot, not the run;
    the same abort twice is reported."""
    real = os.path.join(REPO, "build", "qemu-system-x86_64")
    fake = tmp_path / "qemu"
    fake.write_text("#!/bin/sh\n"
                    "n=$(cat %(d)s/boots 2>/dev/null || echo 0); echo $((n + 1)) > %(d)s/boots\n"
                    "if [ $n -lt $(cat %(d)s/aborts) ]; then\n"
                    "  echo \"qemu-system-x86_64: ../hw/pci/msix.c:228: msix_table_mmio_write: "
                    "Assertion \\`addr + size <= dev->msix_entries_nr * PCI_MSIX_ENTRY_SIZE' "
                    "failed.\" >&2\n"
                    "  kill -ABRT $$\n"
                    "fi\n"
                    "exec %(real)s \"$@\"\n" % {"d": tmp_path, "real": real})
    fake.chmod(0o755)
    env = dict(os.environ, NVME_HYBRID_QEMU=str(fake))
    for aborts, status in ((1, 0), (2, 125)):
        (tmp_path / "aborts").write_text("%d\n" % aborts)
        (tmp_path / "boots").unlink(missing_ok=True)
        r = subprocess.run([VM_EXEC, "--timeout", "300", "--size", "64M", "--", "echo ran"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=360, env=env)
        assert r.returncode == status, (r.returncode, r.stdout, r.stderr[-3000:])
        assert "booting again" in r.stderr, r.stderr[-3000:]
        assert (r.stdout == "ran\n") == (status == 0), r.stdout
        assert (tmp_path / "boots").read_text().strip() == "2"
