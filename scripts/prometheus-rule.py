#!/usr/bin/env python3
"""Makes deploy/kubernetes/prometheus-operator/prometheusrule.yaml from
deploy/prometheus/shmbpf-rules.yml: a PrometheusRule whose spec is the rules
file's groups as written, comments included, so that the rules live in one
file. Run it after each change of the rules file; tests/deploy/kubernetes.py
fails while the committed file is not what this makes.

    python3 scripts/prometheus-rule.py           # writes the file
    python3 scripts/prometheus-rule.py --check   # exit 1 and a diff if it is stale
"""
import difflib
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES = "deploy/prometheus/shmbpf-rules.yml"
OUT = "deploy/kubernetes/prometheus-operator/prometheusrule.yaml"
COMMAND = "python3 scripts/prometheus-rule.py"

HEADER = f"""\
# Made by scripts/prometheus-rule.py from {RULES}
# (its groups, comments included): edit that file, then run
#   {COMMAND}
# tests/deploy/kubernetes.py fails while this file is not what that makes.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: shmbpf
  namespace: shmbpf
  labels:
    app.kubernetes.io/name: shmbpf
spec:
"""


def make(rules_text):
    """The PrometheusRule's text: the rules file from its groups: line on
    (its header comment is about promtool and stays there), each line
    indented under spec:. Indenting every line alike keeps block scalars
    and comments as they are."""
    lines = rules_text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"groups:\s*(#.*)?$", line)), None)
    if start is None:
        raise ValueError(f"{RULES} has no top-level groups:")
    for line in lines[:start]:
        if line.strip() and not line.lstrip().startswith("#"):
            raise ValueError(f"{RULES} has more than groups: {line!r}")
    body = "".join(("  " + line).rstrip() + "\n" for line in lines[start:])
    return HEADER + body


def same_groups(rules_text, out_text):
    """The made file's spec is exactly the rules file, parsed: a rules file
    that indenting would change (another top-level key, a second document)
    is refused rather than written wrong."""
    try:
        import yaml
    except ImportError:
        raise ValueError("python3-yaml is missing (bash scripts/deps.sh --tests)")
    try:
        rules = yaml.safe_load(rules_text)
        (rule,) = [d for d in yaml.safe_load_all(out_text) if d]
    except yaml.YAMLError as e:
        raise ValueError(f"{RULES} is not one YAML document of groups: {e}")
    if not isinstance(rules, dict) or set(rules) != {"groups"}:
        raise ValueError(f"{RULES} is not groups: alone")
    if rule["spec"] != rules:
        raise ValueError(f"{OUT}'s spec would not be {RULES}: not made")


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        sys.exit(__doc__)
    with open(os.path.join(ROOT, RULES)) as f:
        rules_text = f.read()
    try:
        out_text = make(rules_text)
        same_groups(rules_text, out_text)
    except ValueError as e:
        sys.exit(f"prometheus-rule.py: {e}")
    path = os.path.join(ROOT, OUT)
    if check:
        try:
            with open(path) as f:
                have = f.read()
        except FileNotFoundError:
            have = ""
        if have != out_text:
            sys.stdout.writelines(difflib.unified_diff(
                have.splitlines(True), out_text.splitlines(True), OUT, f"{OUT} as made"))
            print(f"{OUT} is not what {RULES} makes: run {COMMAND}", file=sys.stderr)
            sys.exit(1)
        print(f"{OUT} is what {RULES} makes")
        return
    with open(path, "w") as f:
        f.write(out_text)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
