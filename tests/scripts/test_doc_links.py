"""The documentation stands on its own in a clone: every relative link in README.md and docs/*.md
names a file or folder of the repository (and, into a Markdown file, a heading or anchor that
it has), and no link or path in their text leads outside the repository."""
import glob
import os
import re
import subprocess
from urllib.parse import unquote

import pytest

from helpers import REPO, SIM

DOCS = [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
INLINE_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HTML_LINK = re.compile(r"<a\s[^>]*href=\"([^\"]*)\"", re.I)
# A relative path that climbs (../x), wherever it is written: code spans included.
CLIMBING = re.compile(r"(?<![\w./-])((?:\.\./)+[\w.+-][\w./+-]*)")


def prose(path):
    """The file's text without its fenced code blocks (commands, not links)."""
    with open(path, encoding="utf-8") as f:
        return FENCE.sub("", f.read())


def links(path):
    text = prose(path)
    # Inline code is not a link either, but a path in it is checked below.
    text_no_code = re.sub(r"`[^`\n]*`", "", text)
    found = INLINE_LINK.findall(text_no_code) + REFERENCE_DEF.findall(text_no_code) + \
        HTML_LINK.findall(text_no_code)
    return [u for u in found if u]


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    """Every anchor a Markdown file offers: its headings' slugs (repeats numbered as GitHub
    does) and explicit <a id=...> / <a name=...>."""
    text = prose(path)
    seen, out = {}, set()
    for h in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        s = slug(h)
        out.add(s if s not in seen else "%s-%d" % (s, seen[s]))
        seen[s] = seen.get(s, 0) + 1
    out.update(re.findall(r"<a\s[^>]*(?:id|name)=\"([^\"]+)\"", text))
    return out


def is_external(url):
    return re.match(r"[a-z][a-z0-9+.-]*:", url, re.I) is not None


def inside(path):
    real = os.path.realpath(path)
    return real == os.path.realpath(REPO) or real.startswith(os.path.realpath(REPO) + os.sep)


def broken(path):
    """What is wrong with the links of the file at @path, as messages."""
    rel = os.path.relpath(path, REPO)
    here = os.path.dirname(path)
    problems = []
    for url in links(path):
        if is_external(url):
            if url.startswith("file:"):
                problems.append("%s: %s: a file: link points outside the clone" % (rel, url))
            continue
        target, _, anchor = url.partition("#")
        dest = os.path.normpath(os.path.join(here, unquote(target))) if target else path
        if target.startswith("/") or not inside(dest):
            problems.append("%s: %s leads outside the repository" % (rel, url))
        elif not os.path.exists(dest):
            problems.append("%s: %s: no such file or folder" % (rel, url))
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            problems.append("%s: %s: %s has no heading or anchor #%s"
                            % (rel, url, os.path.relpath(dest, REPO), anchor))
    # Paths written as text (in code spans, say), outside the links checked above and the
    # code blocks, whose paths are relative to where their commands run.
    text = REFERENCE_DEF.sub("", INLINE_LINK.sub("", prose(path)))
    for m in CLIMBING.finditer(text):
        dest = os.path.normpath(os.path.join(here, m.group(1)))
        if not inside(dest) or not os.path.exists(dest):
            problems.append("%s: the path %s is not in the repository" % (rel, m.group(1)))
    return problems


@pytest.mark.parametrize("path", DOCS, ids=lambda p: os.path.relpath(p, REPO))
def test_links_resolve_inside_the_repository(path):
    assert broken(path) == []


def test_the_checker_catches_what_it_should(tmp_path, monkeypatch):
    """A file with each kind of bad link, in a stand-in repository."""
    import test_doc_links as me
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Two words\n\n<a id=\"x\"></a>\n")
    bad = tmp_path / "docs" / "b.md"
    bad.write_text("[ok](a.md#two-words) [ok](a.md#x) [ok](#b) [ok](https://example.org)\n"
                   "[gone](nothing.md) [anchor](a.md#three) [out](../../elsewhere/x.md)\n"
                   "[abs](/etc/passwd) see `../shared/DESIGN.md`\n\n# B\n"
                   "```sh\n[not a link](nowhere.md)\n```\n")
    monkeypatch.setattr(me, "REPO", str(tmp_path))
    got = me.broken(str(bad))
    assert len(got) == 5, got
    assert any("nothing.md: no such file" in g for g in got)
    assert any("has no heading or anchor #three" in g for g in got)
    assert any("../../elsewhere/x.md leads outside" in g for g in got)
    assert any("/etc/passwd leads outside" in g for g in got)
    assert any("the path ../shared/DESIGN.md is not in the repository" in g for g in got)


def test_properties_page_has_every_engine_key():
    """docs/properties.md documents each key the engine takes (the device-only ones are checked
    against QEMU by tests/qtest/test_properties.py)."""
    out = subprocess.run([SIM, "--list-keys"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    keys = [line for line in out.splitlines() if line and not line.startswith(" ")]
    with open(os.path.join(REPO, "docs", "properties.md")) as f:
        page = f.read()
    documented = set(re.findall(r"^\| `([a-z0-9-]+)`", page, re.M))
    documented |= set(re.findall(r"`([a-z0-9-]+)`,? ", page))
    assert [k for k in keys if k not in documented] == []
