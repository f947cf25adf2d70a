#!/usr/bin/env python3
"""The man pages against the binary: a page for shmbpf and for every
subcommand `shmbpf --help` lists, every long option of `shmbpf <cmd> --help`
in its page, the version the binary reports in each page's header, and no
warning from groff or man.

    man_pages.py <shmbpf binary> <directory of built man pages>
"""
import os
import re
import shutil
import subprocess
import sys


def skip_or_fail(why):
    if os.environ.get("CI") == "true":
        print(f"FAIL: {why}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def help_text(binary, *words):
    r = run([binary, *words, "--help"])
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(['shmbpf', *words])} --help exited {r.returncode}: {r.stderr}")
    return r.stdout


def subcommands(text):
    """The words under 'Subcommands:' in CLI11's help."""
    out, inside = [], False
    for line in text.splitlines():
        if line.rstrip().lower() == "subcommands:":
            inside = True
        elif inside and re.match(r"^  \S", line):
            out.append(line.split()[0])
        elif inside and line.strip() and not line.startswith(" "):
            inside = False
    return out


def long_options(text):
    """Long options in the option column: '  -p,--pid UINT', '  --json'."""
    opts = set()
    for line in text.splitlines():
        m = re.match(r"^  (?:-\w,)?(--[\w-]+)", line)
        if m:
            opts.add(m.group(1))
    return opts


def rendered(page):
    """The page as a reader sees it, plain ASCII (no bold, no hyphen glyphs),
    and what groff and man warn about."""
    env = dict(os.environ, MANWIDTH="200", LC_ALL="C.UTF-8")
    r = run(["groff", "-man", "-Tascii", "-ww", "-P-cbou", page], env=env)
    warnings = r.stderr.strip()
    m = run(["man", "--warnings", "-l", "-Tutf8", page], env=env)
    if m.returncode != 0 or m.stderr.strip():
        warnings += m.stderr.strip() or f"man exited {m.returncode}"
    return r.stdout, warnings


def main():
    binary, pages = sys.argv[1], sys.argv[2]
    for tool, package in (("groff", "groff-base"), ("man", "man-db")):
        if not shutil.which(tool):
            skip_or_fail(f"{tool} is missing (Debian package {package}; "
                         "bash scripts/deps.sh --tests)")
    failures = []
    version = run([binary, "--version"]).stdout.split()[1]  # shmbpf 0.1.0 (revision …)
    commands = subcommands(help_text(binary))
    if not commands:
        sys.exit("FAIL: no subcommand found in shmbpf --help")
    expected = {"shmbpf": help_text(binary)}
    for cmd in commands:
        expected[f"shmbpf-{cmd}"] = help_text(binary, cmd)
    for name, text in expected.items():
        page = os.path.join(pages, f"{name}.8")
        if not os.path.exists(page):
            failures.append(f"{name}: no man page ({page})")
            continue
        body, warnings = rendered(page)
        if warnings:
            failures.append(f"{name}.8: warnings:\n{warnings}")
        header = body.splitlines()[0] if body else ""
        if not header.startswith(name.upper() + "(8)"):
            failures.append(f"{name}.8: header is {header!r}")
        if f"shmbpf {version}" not in body:
            failures.append(f"{name}.8: does not say version {version}")
        for opt in sorted(long_options(text)):
            if not re.search(re.escape(opt) + r"(?![\w-])", body):
                failures.append(f"{name}.8: {opt} (in its --help) is not in the page")
        # The main page lists every command, and says where its page is.
        if name == "shmbpf":
            for cmd in commands:
                if f"shmbpf-{cmd}(8)" not in body:
                    failures.append(f"shmbpf.8: does not refer to shmbpf-{cmd}(8)")
    for page in sorted(os.listdir(pages)):
        if page.endswith(".8") and page[:-2] not in expected:
            failures.append(f"{page}: no such command in shmbpf --help")
    if failures:
        print("FAIL:\n" + "\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"ok: {len(expected)} man pages, every command and long option of --help in them")


if __name__ == "__main__":
    main()
