#!/usr/bin/env python3
"""Dead-link check for README.md and the guide (docs/src/*.md); stdlib only.

Every markdown link that is relative (not http(s):, mailto: or another scheme, not a pure
#anchor) must name a file or folder that exists relative to the markdown file. A link with an
#anchor into a markdown file must match one of its headings, slugged as GitHub does: lower-case,
spaces to '-', punctuation other than '-' and '_' removed (a repeated heading gets -1, -2, ...).
A pure #anchor must match a heading of the file itself. Links inside code (fenced blocks, `spans`)
are not links. Exit 1 listing each dead link as file:line: link, else 0.

    scripts/check_links.py [FILE.md ...]    (default: README.md docs/src/*.md)
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# [text](target) or [text](target "title"), text possibly over several lines; ![alt](img) too.
INLINE = re.compile(r'\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
# [label]: target
REFDEF = re.compile(r'^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$', re.M)
SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')


def blank_code(text, spans=True):
    """The text with code (fenced blocks, and inline spans if `spans`) blanked, newlines kept."""
    out, fence = [], None
    for line in text.split('\n'):
        m = re.match(r'^ {0,3}(`{3,}|~{3,})', line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append('')
            continue
        if m:
            fence = m.group(1)
            out.append('')
            continue
        out.append(line)
    text = '\n'.join(out)
    if not spans:
        return text
    return re.sub(r'(`+)(?:(?!\1).)+?\1', lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text,
                  flags=re.S)


def slug(heading):
    h = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading)  # a link's text only
    h = re.sub(r'<[^>]+>', '', h).strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)  # \w keeps letters, digits and '_'
    return h.replace(' ', '-')


_anchors = {}


def rel(path):
    try:
        return path.relative_to(ROOT)
    except ValueError:
        return path


def anchors(path):
    if path not in _anchors:
        seen, result = {}, set()
        text = blank_code(path.read_text(encoding='utf-8', errors='replace'), spans=False)
        for line in text.split('\n'):
            m = re.match(r'^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$', line)
            if not m:
                continue
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            result.add(s if n == 0 else f'{s}-{n}')
        _anchors[path] = result
    return _anchors[path]


def check(md):
    text = md.read_text(encoding='utf-8')
    code_free = blank_code(text)
    links = [(m.start(1), m.group(1)) for m in INLINE.finditer(code_free)]
    links += [(m.start(1), m.group(1)) for m in REFDEF.finditer(code_free)]
    dead = []
    for pos, target in sorted(links):
        line = code_free.count('\n', 0, pos) + 1
        if SCHEME.match(target):
            continue  # http:, https:, mailto:, ...
        path, _, anchor = target.partition('#')
        if path:
            dest = (md.parent / path).resolve()
            if not dest.exists():
                dead.append((line, target, 'no such file'))
                continue
        else:
            dest = md.resolve()
        if anchor and dest.is_file() and dest.suffix.lower() in ('.md', '.markdown'):
            if anchor.lower() not in anchors(dest):
                dead.append((line, target, f'no heading #{anchor} in {rel(dest)}'))
    return dead


def main(argv):
    files = [Path(a).resolve() for a in argv] or [ROOT / 'README.md'] + sorted(
        (ROOT / 'docs' / 'src').glob('*.md'))
    count = 0
    for md in files:
        for line, target, why in check(md):
            print(f'{rel(md)}:{line}: {target} ({why})')
            count += 1
    if count:
        print(f'check_links: {count} dead link(s) in {len(files)} file(s)', file=sys.stderr)
        return 1
    print(f'check_links: no dead link in {len(files)} file(s)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
