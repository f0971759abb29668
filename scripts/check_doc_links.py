#!/usr/bin/env python3
"""Checks the relative links of the Markdown documentation.

Every `[text](target)` and `![alt](target)` outside code blocks and code
spans in README.md and docs/**/*.md whose target is not a URL must name a
file or folder of the repository, and a `#fragment` must name a heading of
the target file (GitHub's anchors: lower case, punctuation dropped, spaces
as hyphens, repeats numbered). Run from anywhere:

    python3 scripts/check_doc_links.py

Prints each broken link and exits with status 1 if there is one.
"""

import re
import sys
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, code spans removed."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, CODE_SPAN.sub("", line)


def slug(heading):
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def main():
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken = []
    checked = 0
    for path in files:
        for number, line in prose_lines(path.read_text(encoding="utf-8")):
            for match in LINK.finditer(line):
                target = match.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                checked += 1
                name, _, fragment = target.partition("#")
                resolved = (path.parent / unquote(name)).resolve() if name else path
                where = f"{path.relative_to(REPO)}:{number}: {target}"
                if not resolved.exists():
                    broken.append(f"{where}: no such file")
                elif fragment and resolved.suffix == ".md":
                    if fragment not in anchors(resolved):
                        broken.append(f"{where}: no heading with this anchor")
    for line in broken:
        print(line)
    print(f"{checked} relative links in {len(files)} files, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
