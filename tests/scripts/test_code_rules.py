"""Two rules of the house that no compiler checks: no function over 100 lines, in C or in Python,
anywhere in the repository; and no script in scripts/ reaches its siblings by patching sys.path
(they import the package scripts/nh, which the entry scripts find beside themselves)."""
import ast
import os
import re

from helpers import REPO, SCRIPTS

LIMIT = 100
SKIP_DIRS = {"build", ".git", "__pycache__", ".pytest_cache"}


def repo_files():
    for top, dirs, files in os.walk(REPO):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            yield os.path.join(top, f)


def is_python(path):
    if path.endswith(".py"):
        return True
    if os.path.splitext(path)[1]:
        return False
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def python_functions(source):
    """(name, first line, lines) of every def in @source, nested ones too."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


# What the C scanner must not mistake for braces: comments, strings, character constants.
C_NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def c_functions(source):
    """(name, first line, lines) of every function definition in @source: a top-level brace whose
    head (the text since the previous top-level declaration) ends in a parameter list.  The
    length runs from the head's first line to the closing brace."""
    text = C_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group()),
                  text, flags=re.M)
    depth, head_at, opened = 0, 0, None
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                head = text[head_at:i]
                m = re.search(r"(\w+)\s*\([^;{}]*\)\s*$", head)
                opened = (m.group(1), i - len(head.lstrip())) if m and "=" not in head else None
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if opened:
                    first = text.count("\n", 0, opened[1]) + 1
                    yield opened[0], first, text.count("\n", 0, i) + 1 - first + 1
                opened, head_at = None, i + 1
        elif ch == ";" and depth == 0:
            head_at = i + 1


def long_functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        source = f.read()
    if path.endswith((".c", ".h")):
        found = c_functions(source)
    elif is_python(path):
        found = python_functions(source)
    else:
        return []
    return [(os.path.relpath(path, REPO), line, name, n) for name, line, n in found if n > LIMIT]


def test_the_scanners_measure_functions():
    c = "static int\nf(int a)\n{\n" + "    a++;\n" * 100 + "    return a;\n}\n" \
        "struct s t = { 1, 2 };\nint g(void) { return '}'; /* } */ }\n"
    assert list(c_functions(c)) == [("f", 1, 105), ("g", 107, 1)]
    py = "def f():\n" + "    x = 1\n" * 100 + "\n\ndef g():\n    def h():\n        pass\n"
    assert list(python_functions(py)) == [("f", 1, 101), ("g", 104, 3), ("h", 105, 2)]


def test_no_function_over_100_lines():
    long = ["%s:%d %s() is %d lines" % (rel, line, name, n)
            for path in repo_files() for rel, line, name, n in long_functions(path)]
    assert not long, "functions over %d lines:\n  %s" % (LIMIT, "\n  ".join(long))


def path_patches(source):
    """Lines of @source that touch sys.path or add a site directory (code, not comments)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (
                node.attr == "path" and isinstance(node.value, ast.Name) and node.value.id == "sys"
                or node.attr == "addsitedir"):
            yield node.lineno


def test_no_sys_path_patching_in_scripts():
    assert list(path_patches("import sys\nsys.path.insert(0, 'x')\n")) == [2]
    patched = []
    for top, dirs, files in os.walk(SCRIPTS):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for path in (os.path.join(top, f) for f in files):
            if is_python(path):
                with open(path, encoding="utf-8") as f:
                    patched += ["%s:%d" % (os.path.relpath(path, REPO), n)
                                for n in path_patches(f.read())]
    assert not patched, "scripts/ patches sys.path: " + ", ".join(patched)
