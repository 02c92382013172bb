#!/usr/bin/env python3
"""The shape rules of docs/contributing.md, checked in CI (scripts/run-tests.sh, normal pass):
no product source file (src/, include/, storage/) above 600 lines and no function above 80
lines, unless a comment just above it (or, for a file, in its first ten lines) says why and
contains "Long on purpose". Exit status 1 names each offender with its file, line and length.

Functions are found on clang-formatted code (the CI checks that too): a definition's signature
ends its line with "{", and its body ends at the first "}" at the signature's indentation. This
is a heuristic, not a parser: it errs towards counting a little more (a multi-line signature's
last line starts the count), never less."""
import os, re, subprocess, sys

MAX_FILE, MAX_FUNC = 600, 80
MARK = 'Long on purpose'
CONTROL = re.compile(r'^\s*(if|for|while|switch|else|do|catch|try|namespace|class|struct|enum|union|extern)\b')
SIG_END = re.compile(r'\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(final)?\s*(->\s*[\w:<>,\s*&]+)?\s*\{$')


def functions(lines):
    """Yields (start_index, length) of each function definition."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if not (SIG_END.search(line) and line.strip()) or re.search(r'\]\s*(\(|\{|mutable)', line):
            i += 1
            continue
        # the statement's first line: walk back over a multi-line signature or initializer list
        start = i
        while start > 0:
            prev = lines[start - 1]
            opened = ''.join(lines[start:i + 1])
            if opened.count('(') < opened.count(')'):  # inside a parenthesis: keep walking
                start -= 1
                continue
            if not prev.strip() or prev.rstrip().endswith((';', '{', '}')) or \
                    prev.lstrip().startswith(('//', '#', 'template', 'public:', 'private:', 'protected:')):
                break
            start -= 1
        first = lines[start]
        head = first.split('(')[0]
        if CONTROL.match(first) or '=' in head or first.lstrip().startswith(('return', '}', ':', ')', '//')):
            i += 1
            continue
        indent = re.match(r'^(\s*)', first).group(1)
        end = i + 1
        close = re.compile('^' + indent + r'\}')
        while end < len(lines) and not close.match(lines[end]):
            end += 1
        yield start, end - start + 1
        i = end + 1 if not indent else i + 1


def has_mark(lines, start):
    j = start - 1
    while j >= 0 and (lines[j].lstrip().startswith(('//', 'template', '[[')) or not lines[j].strip()):
        if MARK in lines[j]:
            return True
        if not lines[j].strip():
            break
        j -= 1
    return False


def self_test():
    """The checker must be able to fail: a long function is found (also behind a multi-line
    signature and a multi-line for), a marked one and control blocks are not."""
    body = ['  x++;'] * (MAX_FUNC + 5)
    long_fn = ['Status Foo(int a,', '           int b) {'] + body + ['}']
    marked = ['// Long on purpose: a test.', 'void Bar() {'] + body + ['}']
    loop = ['void Baz() {', '  for (int i = 0; i < 3;', '       i++) {'] + ['    y++;'] * 10 + ['  }', '}']
    found = [(s, n) for s, n in functions(long_fn + marked + loop)]
    assert (0, MAX_FUNC + 8) in found, found
    assert not any(n > MAX_FUNC and has_mark(long_fn + marked + loop, s) is False and s != 0 for s, n in found), found
    assert len([1 for s, n in found if n > MAX_FUNC]) == 2, found  # Foo and Bar (marked), not the loop
    print('check-shape: self-test passed')


def main():
    if '--self-test' in sys.argv:
        self_test()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = subprocess.check_output(['git', '-C', root, 'ls-files', 'src', 'include', 'storage'], text=True).split()
    bad = []
    for f in files:
        if not f.endswith(('.cc', '.h')):
            continue
        lines = open(os.path.join(root, f)).read().split('\n')
        if lines and lines[-1] == '':
            lines.pop()
        if len(lines) > MAX_FILE and not any(MARK in l for l in lines[:10]):
            bad.append(f'{f}: {len(lines)} lines (more than {MAX_FILE}): split it, or say why at its top ("{MARK}: ...")')
        for start, n in functions(lines):
            if n > MAX_FUNC and not has_mark(lines, start):
                name = lines[start].strip()[:70]
                bad.append(f'{f}:{start + 1}: a function of {n} lines (more than {MAX_FUNC}): {name}')
    for b in bad:
        print(b)
    if bad:
        print(f'check-shape: {len(bad)} offender(s); see docs/contributing.md', file=sys.stderr)
        return 1
    print(f'check-shape: {len(files)} files, none above {MAX_FILE} lines, no function above {MAX_FUNC} without a reason')
    return 0


if __name__ == '__main__':
    sys.exit(main())
