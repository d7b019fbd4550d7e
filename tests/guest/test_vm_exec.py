"""vm-exec's COMMAND: several words are an argv (each reaches the guest
program as one argument), a single word is a shell string."""
import subprocess

from conftest import VM_EXEC


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
