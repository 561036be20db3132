#!/usr/bin/env python3
"""Checks that every relative link and anchor in oplite's Markdown resolves.

The docs point at each other and at the source a great deal (`see
[protocol.md](protocol.md#direct-tables)`), and a renamed heading or a moved
file breaks such a link without any test noticing. This script reads every
Markdown file of the repository (`git ls-files '*.md'` and new files git
does not ignore, less node_modules and vendored directories, of which none
is tracked today) and, for each inline link or image `[text](target)`, each
reference definition `[label]: target`, each `<a href>`/`<img src>` and
each `[text][label]` (whose label must be defined), checks the target: a
relative path (to the Markdown file; one starting with `/` to the
repository's root) must be a file or directory of the repository, tracked
or at least not ignored by git; a `#fragment` on the same file or on another
.md file must name a heading there by GitHub's slug (lowercased; characters
other than letters, digits, spaces, hyphens and underscores dropped; each
space a hyphen; a repeated slug gets `-1`, `-2`, ...) or an explicit
`<a id="...">`/`<a name="...">`. URLs with a scheme (http, https, mailto,
...) are not fetched, and fragments of non-Markdown files (GitHub's `#L10`)
are not checked. Fenced code blocks, inline code spans and HTML comments
are skipped. The slug rule and the link reader are tested on a few cases
first, every run.

One check per Markdown file, passed when all its links resolve; each broken
link is listed under it with its line. Closes with `links: N passed, M
failed` and exits 1 on any failure (the house phase of scripts/test.sh).
Usage: check-links.py [FILE.md...] (default: all of the repository's).
"""
import os
import re
import subprocess
import sys
import urllib.parse

from checks import check, summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIPPED_DIRS = {"node_modules", "vendor", "vendored", "third_party", "third-party"}
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
INLINE = re.compile(r"\]\(\s*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
DEFINITION = re.compile(r"^ {0,3}\[((?:[^\]\\]|\\.)+)\]:[ \t]*(<[^<>\n]*>|\S+)", re.M)
FULL_REFERENCE = re.compile(r"\[(?:[^\]\\\n]|\\.)+\]\[((?:[^\]\\\n]|\\.)*)\]")
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def blank(match):
    """The match's text with everything but its newlines made spaces."""
    return re.sub(r"[^\n]", " ", match.group(0))


def prose(text):
    """The text with fenced blocks, code spans and comments blanked out (the
    same length, so offsets keep their lines), and the headings outside the
    fences as (line number, raw heading text)."""
    lines = text.split("\n")
    fence = None
    headings = []
    for i, line in enumerate(lines):
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
            lines[i] = " " * len(line)
            continue
        if opening:
            fence = opening.group(1)
            lines[i] = " " * len(line)
            continue
        atx = ATX.match(line)
        if atx:
            headings.append((i + 1, atx.group(2) or ""))
        elif SETEXT.match(line) and i > 0 and lines[i - 1].strip() and not ATX.match(lines[i - 1]) \
                and not re.match(r"^ {0,3}([-*+]|\d+[.)])\s|^\s*\|", lines[i - 1]):
            headings.append((i, lines[i - 1].strip()))
    blanked = "\n".join(lines)
    blanked = COMMENT.sub(blank, blanked)
    blanked = CODE_SPAN.sub(blank, blanked)
    return blanked, headings


def heading_text(raw):
    """The text GitHub renders for a heading's Markdown: code spans keep
    their content, links and images their text, HTML tags and emphasis
    marks go (an underscore inside a word stays: `sync_local`)."""
    parts = re.split(r"(`+[^`]*`+)", raw)
    for i in range(0, len(parts), 2):
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", parts[i])
        text = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", text)
        text = re.sub(r"<[^>]+>", "", text)
        parts[i] = re.sub(r"\*+|(?<!\w)_+|_+(?!\w)", "", text)
    return "".join(parts)


def slug(text):
    """GitHub's anchor for a heading's text (github-slugger, without the
    de-duplication, which `Slugger` adds)."""
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class Slugger:
    """Gives a repeated slug the suffix -1, -2, ..., as GitHub does."""

    def __init__(self):
        self.seen = {}

    def slug(self, text):
        base = result = slug(text)
        while result in self.seen:
            self.seen[base] += 1
            result = f"{base}-{self.seen[base]}"
        self.seen[result] = 0
        return result


def anchors(text):
    """Every fragment a Markdown text defines: its headings' slugs and its
    explicit `<a id>`/`<a name>` anchors."""
    blanked, headings = prose(text)
    slugger = Slugger()
    found = {slugger.slug(heading_text(raw)) for _, raw in headings}
    found |= set(HTML_ANCHOR.findall(blanked))
    return found


def links(text):
    """(line number, what was written, target) for each link in a Markdown
    text; a `[text][label]` whose label is not defined has target None."""
    blanked, _ = prose(text)
    line_of = lambda offset: blanked.count("\n", 0, offset) + 1
    found = []
    defined = {m.group(1).strip().lower() for m in DEFINITION.finditer(blanked)}
    for m in INLINE.finditer(blanked):
        target = m.group(1)
        found.append((line_of(m.start()), f"({target})", target.strip("<>")))
    for m in DEFINITION.finditer(blanked):
        found.append((line_of(m.start()), f"[{m.group(1)}]: {m.group(2)}", m.group(2).strip("<>")))
    for m in HTML_LINK.finditer(blanked):
        found.append((line_of(m.start()), m.group(0), m.group(1)))
    for m in FULL_REFERENCE.finditer(blanked):
        label = m.group(1) or m.group(0)[1:].split("]")[0]
        if label.strip().lower() not in defined:
            found.append((line_of(m.start()), m.group(0), None))
    return sorted(found, key=lambda link: link[0])


def self_test():
    """The slug rule and the link reader on cases whose answers are known."""
    cases = [
        ("The house check", "the-house-check"),
        ("5. The sync engine: `powersync_control`", "5-the-sync-engine-powersync_control"),
        ("Storing lines and `sync_local`", "storing-lines-and-sync_local"),
        ("Moving between the SDK's own database and oplite", "moving-between-the-sdks-own-database-and-oplite"),
        ("What it installs, and as whom", "what-it-installs-and-as-whom"),
        ("C/C++ & Rust (2026)", "cc--rust-2026"),
        ("  Leading and trailing  ", "leading-and-trailing"),
        ("Déjà vu", "déjà-vu"),
        ("[The API](web.md#the-api)", "the-api"),
        ("**Bold** and _it_, snake_case", "bold-and-it-snake_case"),
    ]
    failures = [f"slug({raw!r}) is {slug(heading_text(raw))!r}, not {want!r}"
                for raw, want in cases if slug(heading_text(raw)) != want]
    slugger = Slugger()
    repeated = [slugger.slug(t) for t in ["Notes", "Notes", "Notes-1", "Notes"]]
    if repeated != ["notes", "notes-1", "notes-1-1", "notes-2"]:
        failures.append(f"repeated headings give {repeated}")
    sample = "\n".join([
        "# Title", "", "See [a](a.md#x) and `[no](code.md)` and ![img](<p q.png> \"t\").",
        "```md", "[no](fenced.md)", "## Not a heading", "```", "<!-- [no](comment.md) -->",
        "[ref]: ref.md", "[used][ref] and [missing][nowhere] <a id=\"here\"></a>", "Title", "=====",
    ])
    got = [(line, target) for line, _, target in links(sample)]
    want = [(3, "a.md#x"), (3, "p q.png"), (9, "ref.md"), (10, None)]
    if got != want:
        failures.append(f"the sample's links are {got}, not {want}")
    if anchors(sample) != {"title", "title-1", "here"}:
        failures.append(f"the sample's anchors are {sorted(anchors(sample))}")
    check(f"slugs and links read as GitHub reads them ({len(cases) + 3} cases)", not failures, failures)


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def markdown_files():
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.md")
    if listed.returncode == 0:
        paths = listed.stdout.split("\0")
    else:  # not a git checkout (a source tarball): every .md on disk
        paths = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs if f.endswith(".md")]
    return sorted(p for p in paths if p and not SKIPPED_DIRS & set(p.split("/")) and os.path.isfile(p))


class Repository:
    """What a link may point at: the tracked files and their directories, or
    anything on disk that git does not ignore."""

    def __init__(self):
        listed = git("ls-files", "-z")
        self.tracked = set()
        for path in listed.stdout.split("\0") if listed.returncode == 0 else []:
            while path:
                self.tracked.add(path)
                path = os.path.dirname(path)
        self.anchors = {}

    def problem(self, path):
        """Why `path` (relative to the root, normalised) is not there, or None."""
        if path.startswith("../") or path == "..":
            return "points outside the repository"
        if not os.path.exists(path):
            return "no such file or directory"
        if path in self.tracked or path == ".":
            return None
        if self.tracked and git("check-ignore", "-q", path).returncode == 0:
            return "exists here but git ignores it, so the repository lacks it"
        return None

    def fragments(self, path):
        if path not in self.anchors:
            self.anchors[path] = anchors(open(path, encoding="utf-8").read())
        return self.anchors[path]


def broken_links(doc, repo):
    """(line, what, why) for each link of `doc` that does not resolve, the
    number of links checked and the number of external ones skipped."""
    found = links(open(doc, encoding="utf-8").read())
    broken, external = [], 0
    for line, written, target in found:
        if target is None:
            broken.append((line, written, "the label is not defined"))
            continue
        if SCHEME.match(target) or target.startswith("//"):
            external += 1
            continue
        path, _, fragment = target.partition("#")
        path, fragment = urllib.parse.unquote(path), urllib.parse.unquote(fragment)
        if path.startswith("/"):
            resolved = os.path.normpath(path.lstrip("/") or ".")
        else:
            resolved = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        why = repo.problem(resolved)
        if why:
            broken.append((line, written, f"{resolved}: {why}"))
        elif fragment and resolved.endswith(".md") and os.path.isfile(resolved):
            if fragment not in repo.fragments(resolved):
                broken.append((line, written, f"no heading or anchor #{fragment} in {resolved}"))
    return broken, len(found) - external, external


def main(docs):
    os.chdir(ROOT)
    self_test()
    repo = Repository()
    for doc in docs or markdown_files():
        broken, count, external = broken_links(doc, repo)
        skipped = f" ({external} external, not fetched)" if external else ""
        if broken:
            check(f"{doc}: {len(broken)} of {count} relative links broken{skipped}", False,
                  [f"line {line}: {written}: {why}" for line, written, why in broken])
        else:
            links_ = {0: "no relative links", 1: "1 relative link resolves"}.get(count, f"{count} relative links resolve")
            check(f"{doc}: {links_}{skipped}", True)
    return summary("links")


if __name__ == "__main__":
    sys.exit(main([os.path.relpath(os.path.abspath(a), ROOT) for a in sys.argv[1:]]))
