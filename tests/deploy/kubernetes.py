#!/usr/bin/env python3
"""deploy/kubernetes/shmbpf.yaml without a cluster: it parses, and the
DaemonSet agrees with the binary. Its arguments are ones `shmbpf serve`
takes, it listens on every address of the pod at the port `serve --help`
gives as the default, the probes ask the paths the daemon answers
(user/daemon/endpoints.cpp) on that port, Prometheus is told the same port
and path, and the pod sees the node's processes with the capabilities the
systemd unit grants, no more.

    kubernetes.py <source dir> <shmbpf binary>
"""
import os
import re
import subprocess
import sys

try:
    import yaml
except ImportError:
    why = "python3-yaml is missing (bash scripts/deps.sh --tests)"
    if os.environ.get("CI") == "true":
        print(f"FAIL: {why}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def main():
    src, binary = sys.argv[1], sys.argv[2]
    with open(os.path.join(src, "deploy/kubernetes/shmbpf.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    kinds = {d["kind"]: d for d in docs}
    ds = kinds.get("DaemonSet")
    if not ds:
        sys.exit("FAIL: no DaemonSet in shmbpf.yaml")
    check(ds["apiVersion"] == "apps/v1", "DaemonSet apiVersion is not apps/v1")

    # What the binary says: its default port, the paths it serves.
    serve_help = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True,
                                check=True).stdout
    m = re.search(r"--listen \S*=\S*:(\d+)", serve_help)
    if not m:
        sys.exit("FAIL: no default --listen in shmbpf serve --help")
    port = int(m.group(1))
    with open(os.path.join(src, "user/daemon/endpoints.cpp")) as f:
        served = set(re.findall(r'path == "(/[a-z]*)"', f.read()))
    for path in ("/healthz", "/readyz", "/metrics"):
        check(path in served, f"the daemon does not serve {path} (endpoints.cpp)")

    spec = ds["spec"]
    pod = spec["template"]["spec"]
    check(spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items(),
          "the selector does not select the pod template")
    check(pod.get("hostPID") is True, "hostPID is not true: the node's processes are not seen")
    check(pod.get("hostNetwork") is not True, "hostNetwork: the port would be the node's")
    (c,) = pod["containers"]

    # The command: shmbpf serve, listening on the pod's addresses at the port.
    cmd = c.get("command", []) + c.get("args", [])
    check("/usr/sbin/shmbpf" in cmd, f"the container does not run /usr/sbin/shmbpf: {cmd}")
    shmbpf_args = cmd[cmd.index("/usr/sbin/shmbpf") + 1:] if "/usr/sbin/shmbpf" in cmd else []
    check(shmbpf_args[:1] == ["serve"], f"not shmbpf serve: {shmbpf_args}")
    listen = shmbpf_args[shmbpf_args.index("--listen") + 1] if "--listen" in shmbpf_args else None
    check(listen == f"0.0.0.0:{port}", f"--listen is {listen}, not 0.0.0.0:{port}")
    # Every flag is one serve has, and its value one serve takes: values are
    # checked before --help is obeyed (unknown flags only after).
    known = set(re.findall(r"^  (?:-\w,)?(--[\w-]+)", serve_help, re.M))
    for arg in shmbpf_args:
        check(not arg.startswith("-") or arg in known, f"shmbpf serve has no {arg}")
    r = subprocess.run([binary, *shmbpf_args, "--help"], capture_output=True, text=True)
    check(r.returncode == 0, f"shmbpf refuses {shmbpf_args}: {r.stderr.strip()}")

    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(port in ports.values(), f"no containerPort {port}: {ports}")

    def probe_port(p):
        q = p["httpGet"]["port"]
        return ports.get(q) if isinstance(q, str) else q

    for kind, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        p = c.get(kind)
        check(p is not None, f"no {kind}")
        if p:
            check(p["httpGet"]["path"] == path, f"{kind} asks {p['httpGet']['path']}, not {path}")
            check(probe_port(p) == port, f"{kind} is not on port {port}")

    ann = spec["template"]["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/scrape") == "true", "no prometheus.io/scrape: \"true\"")
    check(ann.get("prometheus.io/port") == str(port), f"prometheus.io/port is not \"{port}\"")
    check(ann.get("prometheus.io/path") == "/metrics", "prometheus.io/path is not /metrics")

    res = c.get("resources", {})
    check("memory" in res.get("limits", {}), "no memory limit")
    check({"cpu", "memory"} <= res.get("requests", {}).keys(), "no cpu and memory requests")

    # The capabilities: those of the systemd unit, every other one dropped.
    sec = c.get("securityContext", {})
    check(sec.get("privileged") is False, "privileged is not false")
    check(sec.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
    caps = sec.get("capabilities", {})
    check(caps.get("drop") == ["ALL"], "capabilities are not drop: [ALL]")
    with open(os.path.join(src, "deploy/systemd/shmbpf.service")) as f:
        unit = re.search(r"^CapabilityBoundingSet=(.*)$", f.read(), re.M).group(1).split()
    want = sorted(cap.removeprefix("CAP_") for cap in unit)
    check(sorted(caps.get("add", [])) == want, f"capabilities add {caps.get('add')}, not {want}")

    # The node's kernel interfaces the programs and scans need.
    mounts = {v["mountPath"]: v for v in c.get("volumeMounts", [])}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for path in ("/sys/kernel/tracing", "/sys/kernel/btf", "/sys/fs/cgroup"):
        v = mounts.get(path)
        check(v is not None, f"nothing mounted at {path}")
        if v:
            host = volumes.get(v["name"], {}).get("hostPath", {}).get("path")
            check(host == path, f"{path} is not the node's (hostPath {host})")
            check(v.get("readOnly") is True, f"{path} is not read-only")

    # What serve writes by default (its state directory, its socket's
    # directory) is on a writable volume when the root is read-only, unless
    # the arguments turn it off.
    def default_of(flag):
        m = re.search(rf"{flag} TEXT(?::PATH)?=(\S+)", serve_help)
        return m.group(1) if m else None

    if sec.get("readOnlyRootFilesystem") is True:
        writes = {"--state-dir": ("--no-state", default_of("--state-dir")),
                  "--socket": ("--no-socket", default_of("--socket"))}
        for flag, (off, default) in writes.items():
            if off in shmbpf_args:
                continue
            path = shmbpf_args[shmbpf_args.index(flag) + 1] if flag in shmbpf_args else default
            check(path is not None, f"no default for {flag} in serve --help")
            if not path:
                continue
            where = path if flag == "--state-dir" else os.path.dirname(path)
            ok = any((where + "/").startswith(mp.rstrip("/") + "/") and not v.get("readOnly")
                     for mp, v in mounts.items())
            check(ok, f"{flag}'s {where} is on the read-only root: serve exits at start")

    # One image, one architecture: the Dockerfile's .deb and the selector agree.
    with open(os.path.join(src, "deploy/kubernetes/Dockerfile")) as f:
        arch = re.search(r"shmbpf_\*_(\w+)\.deb", f.read()).group(1)
    selector = pod.get("nodeSelector", {})
    check(selector.get("kubernetes.io/arch") == arch,
          f"nodeSelector kubernetes.io/arch is {selector.get('kubernetes.io/arch')}, "
          f"not the image's {arch}")

    if failures:
        print("FAIL:\n" + "\n".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"ok: the DaemonSet runs shmbpf serve on port {port}, probes /healthz and /readyz")


if __name__ == "__main__":
    main()
