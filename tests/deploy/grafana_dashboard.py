#!/usr/bin/env python3
"""deploy/grafana/shmbpf.json without Grafana: it parses as a dashboard of
Grafana's JSON model, every panel reads the `${datasource}` variable's
Prometheus and sits on the grid without overlapping another, every query
uses only the dashboard's variables, and its three rows are Fleet (every
node), Node ($node) and Pod ($namespace/$pod on $node). grafana.py imports
this and then runs every query against a real Prometheus.

    grafana_dashboard.py <source dir>
"""
import json
import os
import re
import sys

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
PANEL_TYPES = {"row", "timeseries", "stat", "table", "bargauge"}
# What a query may use: the dashboard's variables and Grafana's own.
VARIABLES = {"node", "namespace", "pod", "__range", "__rate_interval", "__interval"}
ROWS = ("Fleet", "Node", "Pod")
# Which variables each row's queries filter on (Fleet: none, every node).
ROW_FILTERS = {"Fleet": set(), "Node": {"node"}, "Pod": {"node", "namespace", "pod"}}
GRID_WIDTH = 24


def path_of(src):
    return os.path.join(src, "deploy/grafana/shmbpf.json")


def variable_query(v):
    """A query variable's PromQL, in either form Grafana saves it."""
    q = v.get("query")
    return q.get("query", "") if isinstance(q, dict) else (q or "")


def used_variables(expr):
    return set(re.findall(r"\$\{?(\w+)", expr))


def flat_panels(d):
    """Every panel, rows first in their place, a collapsed row's own after it."""
    out = []
    for p in d.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []) if p.get("type") == "row" else [])
    return out


def sections(d):
    """(row title, panel) for every panel but rows, by position on the grid."""
    out, row = [], None
    for p in sorted(flat_panels(d), key=lambda p: (p["gridPos"]["y"], p["gridPos"]["x"])):
        if p["type"] == "row":
            row = p["title"]
        else:
            out.append((row, p))
    return out


def targets(d):
    """(row, panel, target) for every query of the dashboard, in grid order."""
    return [(row, p, t) for row, p in sections(d) for t in p["targets"]]


def check(d):
    """What is wrong with the dashboard; empty when nothing is."""
    bad = []
    schema = d.get("schemaVersion")
    if not isinstance(schema, int) or not 36 <= schema <= 41:
        bad.append(f"schemaVersion {schema!r}: not that of Grafana 10 or 11 (36 to 41)")
    for key in ("title", "uid"):
        if not d.get(key):
            bad.append(f"no {key}")

    variables = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    if ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        bad.append(f"no datasource variable of Prometheus data sources: {ds}")
    want = {
        "node": "label_values(shmbpf_build_info, node)",
        "namespace": 'label_values(shmbpf_segments{node=~"$node"}, namespace)',
        "pod": 'label_values(shmbpf_segments{node=~"$node",namespace=~"$namespace"}, pod)',
    }
    for name, query in want.items():
        v = variables.get(name)
        if not v:
            bad.append(f"no variable {name}")
            continue
        got = re.sub(r"\s+", "", variable_query(v))
        if v.get("type") != "query" or got != re.sub(r"\s+", "", query):
            bad.append(f"variable {name}: {v.get('type')} {variable_query(v)!r}, not {query!r}")
        if v.get("datasource") != DATASOURCE:
            bad.append(f"variable {name} does not query {DATASOURCE}")
    for name in ("namespace", "pod"):
        v = variables.get(name, {})
        # Outside Kubernetes both labels are empty: only All (.*) shows those.
        if not v.get("includeAll") or v.get("allValue") != ".*":
            bad.append(f"variable {name}: no All option matching '.*' (the empty value too)")

    panels = flat_panels(d)
    ids = [p.get("id") for p in panels]
    if len(set(ids)) != len(ids) or not all(isinstance(i, int) for i in ids):
        bad.append(f"panel ids are not unique integers: {ids}")
    cells = {}
    for p in panels:
        name = f"panel {p.get('id')} {p.get('title')!r}"
        if p.get("type") not in PANEL_TYPES:
            bad.append(f"{name}: type {p.get('type')!r}, not one of {sorted(PANEL_TYPES)}")
        if p.get("datasource") != DATASOURCE:
            bad.append(f"{name}: datasource {p.get('datasource')}, not {DATASOURCE}")
        grid = p.get("gridPos", {})
        if not all(isinstance(grid.get(k), int) for k in "hwxy") or grid["w"] <= 0 or \
                grid["h"] <= 0 or grid["x"] < 0 or grid["x"] + grid["w"] > GRID_WIDTH:
            bad.append(f"{name}: gridPos {grid} is not on the {GRID_WIDTH}-column grid")
            continue
        for y in range(grid["y"], grid["y"] + grid["h"]):
            for x in range(grid["x"], grid["x"] + grid["w"]):
                if (x, y) in cells:
                    bad.append(f"{name} overlaps {cells[(x, y)]} at x={x} y={y}")
                    break
                cells[(x, y)] = name
            else:
                continue
            break
        if p.get("type") == "row":
            continue
        if not p.get("description", "").strip():
            bad.append(f"{name}: no description")
        ts = p.get("targets") or []
        if not ts:
            bad.append(f"{name}: no targets")
        refs = [t.get("refId") for t in ts]
        if len(set(refs)) != len(refs) or not all(refs):
            bad.append(f"{name}: refIds {refs} are not unique")
        for t in ts:
            if not isinstance(t.get("expr"), str) or not t["expr"].strip():
                bad.append(f"{name} {t.get('refId')}: no expr")
                continue
            if t.get("datasource") != DATASOURCE:
                bad.append(f"{name} {t.get('refId')}: datasource {t.get('datasource')}")
            unknown = used_variables(t["expr"]) - VARIABLES
            if unknown:
                bad.append(f"{name} {t.get('refId')}: unknown variables {sorted(unknown)}")

    titles = [p.get("title", "") for p in d.get("panels", []) if p.get("type") == "row"]
    if [t.split(":")[0] for t in titles] != list(ROWS):
        bad.append(f"rows {titles}, not {list(ROWS)} in that order")
    if bad:
        return bad
    for row, p, t in targets(d):
        section = (row or "").split(":")[0]
        used = used_variables(t["expr"]) & {"node", "namespace", "pod"}
        if used != ROW_FILTERS.get(section, used):
            bad.append(f"{section} row, {p['title']!r} {t['refId']}: filters on "
                       f"{sorted(used)}, not {sorted(ROW_FILTERS[section])}")
    return bad


def load(src):
    with open(path_of(src)) as f:
        return json.load(f)


def main():
    d = load(sys.argv[1])
    bad = check(d)
    for b in bad:
        print(f"FAIL: {b}", file=sys.stderr)
    if bad:
        sys.exit(1)
    n = len(targets(d))
    print(f"ok: {len(sections(d))} panels in {len(ROWS)} rows, {n} queries")


if __name__ == "__main__":
    main()
