#!/usr/bin/env python3
"""deploy/kubernetes without a cluster: what `kubectl kustomize` makes of the
base (deploy/kubernetes) and of its prometheus-operator/ addition, checked
against the binary, the systemd unit and the rules file.

The DaemonSet: its arguments are ones `shmbpf serve` takes, in args apart
from the command; it listens on every address of the pod at the port
`serve --help` gives as the default; the probes ask the paths the daemon
answers (user/daemon/endpoints.cpp) on that port; Prometheus is told the
same port and path; the pod sees the node's processes with the capabilities
the systemd unit grants, no more; NODE_NAME is the node's name (downward
API); its nodeAffinity admits the architectures the Dockerfile builds, each
from its own .deb. Around it: the namespace admits it (Pod Security
Admission's privileged level), the NetworkPolicy selects its pods and admits
one peer to that port only, the PodMonitor scrapes its pods' port by name with
honorLabels, and the PrometheusRule's groups are the rules file's
(deploy/prometheus/shmbpf-rules.yml), as scripts/prometheus-rule.py makes
them.

kubectl kustomize runs in a network namespace of its own with nothing in it
(when this runs as root), with an empty HOME and no kubeconfig: the
manifests render offline. The kustomizations use only fields kustomize
v2.0.3 knows (Debian 12's kubectl 1.20), and resources that are files.

    kubernetes.py <source dir> <shmbpf binary>
KUBECTL=/path/to/kubectl picks another kubectl than the one on PATH.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    yaml = None

KUSTOMIZE_DIRS = ("deploy/kubernetes", "deploy/kubernetes/prometheus-operator")
# The Kustomization fields of kustomize v2.0.3, less `patches`, whose meaning
# changed since (there a list of files, now of patch objects).
V2_FIELDS = {"apiVersion", "kind", "namePrefix", "nameSuffix", "namespace", "commonLabels",
             "commonAnnotations", "patchesStrategicMerge", "patchesJson6902", "crds", "vars",
             "images", "imageTags", "resources", "bases", "configMapGenerator",
             "secretGenerator", "generatorOptions", "configurations"}
MONITORING = "monitoring.coreos.com/v1"

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
    return ok


def skip_or_fail(why):
    if os.environ.get("CI") == "true":
        print(f"FAIL: {why}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)


def selects(selector, labels):
    """A label selector's matchLabels, not empty, all among labels."""
    match = (selector or {}).get("matchLabels") or {}
    return bool(match) and match.items() <= labels.items()


def kustomizations(src):
    """Each kustomization.yaml reads in kustomize v2.0.3 and lists every
    manifest beside it; nothing is fetched."""
    for d in KUSTOMIZE_DIRS:
        with open(os.path.join(src, d, "kustomization.yaml")) as f:
            k = yaml.safe_load(f) or {}
        extra = set(k) - V2_FIELDS
        check(not extra, f"{d}/kustomization.yaml: {sorted(extra)} unknown to kustomize v2.0.3 "
                         "(Debian 12's kubectl 1.20 refuses it)")
        listed = k.get("resources") or []
        for r in listed + (k.get("bases") or []):
            check("://" not in r and not r.startswith(("github.com/", "git@")),
                  f"{d}/kustomization.yaml: {r} is remote: kustomize would fetch it")
        for r in listed:
            check(os.path.isfile(os.path.join(src, d, r)),
                  f"{d}/kustomization.yaml: resource {r} is no file (kustomize v2.0.3 takes "
                  "only files in resources)")
        here = {f for f in os.listdir(os.path.join(src, d))
                if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml"}
        check(here <= set(listed), f"{d}: {sorted(here - set(listed))} in no kustomization")


def render(kubectl, directory, tmp):
    """`kubectl kustomize directory`, offline: its objects by kind."""
    cmd = [kubectl, "kustomize", directory]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp,
           "KUBECONFIG": os.path.join(tmp, "no-kubeconfig"),
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    if os.geteuid() == 0 and shutil.which("unshare"):
        cmd = ["unshare", "--net", "--", *cmd]  # not even a loopback that is up
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()}")
    check(not r.stderr.strip(), f"kubectl kustomize {directory} warns: {r.stderr.strip()}")
    objs = {}
    for d in yaml.safe_load_all(r.stdout):
        if d:
            check(d["kind"] not in objs, f"{directory}: two {d['kind']}s")
            objs[d["kind"]] = d
    return objs


def check_daemonset(src, binary, ds, sa):
    """The DaemonSet against the binary and the unit. Returns the pod's
    labels and its port: name and number."""
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
    labels = spec["template"]["metadata"]["labels"]
    pod = spec["template"]["spec"]
    check(selects(spec["selector"], labels), "the selector does not select the pod template")
    check(pod.get("serviceAccountName") == sa["metadata"]["name"],
          f"serviceAccountName is {pod.get('serviceAccountName')}, not the ServiceAccount's")
    check(pod.get("hostPID") is True, "hostPID is not true: the node's processes are not seen")
    check(pod.get("hostNetwork") is not True, "hostNetwork: the port would be the node's")
    (c,) = pod["containers"]

    # The command runs shmbpf, whose arguments are args alone (a patch
    # replaces them): serve, listening on the pod's addresses at the port.
    command, shmbpf_args = c.get("command", []), c.get("args", [])
    check(command[-1:] == ["/usr/sbin/shmbpf"],
          f"the command does not end with /usr/sbin/shmbpf, before args: {command}")
    check(shmbpf_args[:1] == ["serve"], f"args are not shmbpf serve's: {shmbpf_args}")
    listen = shmbpf_args[shmbpf_args.index("--listen") + 1] if "--listen" in shmbpf_args else None
    check(listen == f"0.0.0.0:{port}", f"--listen is {listen}, not 0.0.0.0:{port}")
    # Every flag is one serve has, and its value one serve takes: values are
    # checked before --help is obeyed (unknown flags only after).
    known = set(re.findall(r"^  (?:-\w,)?(--[\w-]+)", serve_help, re.M))
    for arg in shmbpf_args:
        check(not arg.startswith("-") or arg in known, f"shmbpf serve has no {arg}")
    r = subprocess.run([binary, *shmbpf_args, "--help"], capture_output=True, text=True)
    check(r.returncode == 0, f"shmbpf refuses {shmbpf_args}: {r.stderr.strip()}")

    # The node label's value: the node's name, from the downward API.
    env = {e["name"]: e for e in c.get("env", [])}
    node = env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {})
    check(node.get("fieldPath") == "spec.nodeName" and "value" not in env.get("NODE_NAME", {}),
          f"NODE_NAME is not from fieldRef spec.nodeName: {env.get('NODE_NAME')}")

    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(port in ports.values(), f"no containerPort {port}: {ports}")
    port_name = next((n for n, p in ports.items() if p == port), None)

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

    # One image for several architectures: the nodes the DaemonSet may run
    # on are of those the Dockerfile builds, each pulling the .deb of its own.
    check_architectures(src, pod)
    return labels, port_name, port


def check_architectures(src, pod):
    """The architectures the DaemonSet's required nodeAffinity admits are
    those the Dockerfile names on its `# Architectures:` line, and the
    Dockerfile copies each platform's own .deb (${TARGETARCH}, declared in
    the stage before the COPY): a node of another architecture would get a
    pod whose image has nothing for it."""
    with open(os.path.join(src, "deploy/kubernetes/Dockerfile")) as f:
        lines = f.read().splitlines()
    named = [ln.split(":", 1)[1].split() for ln in lines if ln.startswith("# Architectures:")]
    if not check(len(named) == 1 and named[0],
                 "the Dockerfile has no one line '# Architectures: <arch> ...'"):
        return
    built = sorted(named[0])

    # BuildKit gives a stage TARGETARCH only where it declares it, and takes
    # a declared default over the platform's (docker/buildx#510).
    stage = max((i for i, ln in enumerate(lines) if ln.startswith("FROM ")), default=-1)
    arg = next((i for i, ln in enumerate(lines) if i > stage and ln.startswith("ARG TARGETARCH")),
               None)
    check(arg is not None and lines[arg] == "ARG TARGETARCH",
          "the Dockerfile's stage has no 'ARG TARGETARCH' without a default: "
          f"{lines[arg] if arg is not None else 'none'}")
    copies = [(i, re.search(r"shmbpf_\*_(\S+)\.deb", ln)) for i, ln in enumerate(lines)
              if ln.startswith("COPY ")]
    copies = [(i, m.group(1)) for i, m in copies if m]
    check(copies, "the Dockerfile copies no shmbpf_*_<arch>.deb")
    for i, what in copies:
        m = re.fullmatch(r"\$\{TARGETARCH(?::-(\w+))?\}", what)
        check(m, f"the Dockerfile copies shmbpf_*_{what}.deb, not shmbpf_*_${{TARGETARCH}}.deb: "
                 "every platform would get that one")
        check(arg is None or arg < i,
              "the Dockerfile's COPY comes before its ARG TARGETARCH: the .deb's is empty")
        if m and m.group(1):
            check(m.group(1) in built, f"the Dockerfile's TARGETARCH default {m.group(1)} is "
                                       f"not among its architectures {built}")

    selector = pod.get("nodeSelector", {})
    check(selector.get("kubernetes.io/os") == "linux", "nodeSelector kubernetes.io/os is not linux")
    check("kubernetes.io/arch" not in selector,
          f"nodeSelector pins kubernetes.io/arch {selector.get('kubernetes.io/arch')}: "
          f"the image is built for {built}")
    required = (pod.get("affinity", {}).get("nodeAffinity", {})
                .get("requiredDuringSchedulingIgnoredDuringExecution", {}))
    terms = required.get("nodeSelectorTerms") or []
    check(terms, "no required nodeAffinity on kubernetes.io/arch: nodes of every architecture "
                 "get a pod")
    # The terms are ORed: each one admits the image's architectures alone.
    for term in terms:
        exprs = [e for e in term.get("matchExpressions", [])
                 if e.get("key") == "kubernetes.io/arch"]
        if not check(len(exprs) == 1 and exprs[0].get("operator") == "In",
                     f"a nodeSelectorTerm without one 'kubernetes.io/arch In': {term}"):
            continue
        admitted = sorted(exprs[0].get("values", []))
        check(admitted == built, f"the nodeAffinity admits kubernetes.io/arch {admitted}, "
                                 f"the Dockerfile builds {built} ('# Architectures:')")


def check_namespace(ns):
    """Pod Security Admission: the privileged level, enforced, audited and
    warned of alike (namespace.yaml says why)."""
    labels = ns["metadata"].get("labels", {})
    for mode in ("enforce", "audit", "warn"):
        key = f"pod-security.kubernetes.io/{mode}"
        check(labels.get(key) == "privileged",
              f"namespace {ns['metadata']['name']}: {key} is {labels.get(key)}, not privileged")


def check_network_policy(np, pod_labels, port_name, port):
    """It selects the DaemonSet's pods and admits, to the metrics port
    alone, only peers chosen by namespace and pod together."""
    spec = np["spec"]
    check(selects(spec.get("podSelector"), pod_labels),
          "the NetworkPolicy does not select the DaemonSet's pods")
    check("Ingress" in spec.get("policyTypes", []), "the NetworkPolicy has no Ingress policyType")
    rules = spec.get("ingress") or []
    check(rules, "the NetworkPolicy admits nothing (no ingress rule): Prometheus neither")
    for rule in rules:
        ports = rule.get("ports") or []
        check(ports, "an ingress rule without ports admits every port")
        for p in ports:
            check(p.get("port") in (port, port_name) and p.get("protocol", "TCP") == "TCP"
                  and "endPort" not in p, f"an ingress rule admits {p}, not TCP {port}")
        peers = rule.get("from") or []
        check(peers, "an ingress rule without from admits everyone")
        for peer in peers:
            ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
            check("ipBlock" not in peer and ns_sel and pod_sel,
                  f"a peer not chosen by namespace and pod together: {peer}")
            check("kubernetes.io/metadata.name" in (ns_sel or {}).get("matchLabels", {}),
                  f"a peer's namespace is not chosen by kubernetes.io/metadata.name: {peer}")
            check(bool((pod_sel or {}).get("matchLabels")), f"a peer's pods are any pods: {peer}")


def check_pod_monitor(pm, namespace, pod_labels, port_name):
    """It scrapes the DaemonSet's pods at their metrics port, by name, with
    the series' own labels kept (honorLabels)."""
    check(pm["apiVersion"] == MONITORING, f"PodMonitor apiVersion is not {MONITORING}")
    spec = pm["spec"]
    names = spec.get("namespaceSelector", {}).get("matchNames")
    check(pm["metadata"].get("namespace") == namespace if names is None else namespace in names,
          f"the PodMonitor does not look in namespace {namespace}")
    check(selects(spec.get("selector"), pod_labels),
          "the PodMonitor does not select the DaemonSet's pods")
    endpoints = spec.get("podMetricsEndpoints") or []
    check(endpoints, "the PodMonitor has no podMetricsEndpoints")
    for e in endpoints:
        check(e.get("port") == port_name, f"the PodMonitor scrapes port {e.get('port')}, "
                                          f"not the container's {port_name}")
        check(e.get("path", "/metrics") == "/metrics", f"the PodMonitor scrapes {e.get('path')}")
        check(e.get("honorLabels") is True, "the PodMonitor has no honorLabels: true "
                                            "(the series' namespace and pod would be renamed)")


def check_prometheus_rule(src, rule, namespace):
    """Its groups are the rules file's, and the committed file is what
    scripts/prometheus-rule.py makes of it."""
    check(rule["apiVersion"] == MONITORING, f"PrometheusRule apiVersion is not {MONITORING}")
    check(rule["metadata"].get("namespace") == namespace,
          f"the PrometheusRule is not in namespace {namespace}")
    with open(os.path.join(src, "deploy/prometheus/shmbpf-rules.yml")) as f:
        rules = yaml.safe_load(f)
    check(set(rule["spec"]) == {"groups"}, f"the PrometheusRule's spec has {sorted(rule['spec'])}")
    check(rule["spec"].get("groups") == rules["groups"],
          "the PrometheusRule's groups are not deploy/prometheus/shmbpf-rules.yml's: "
          "python3 scripts/prometheus-rule.py")
    r = subprocess.run([sys.executable, os.path.join(src, "scripts/prometheus-rule.py"), "--check"],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"scripts/prometheus-rule.py --check:\n{r.stdout}{r.stderr}")


def main():
    src, binary = sys.argv[1], sys.argv[2]
    if yaml is None:
        skip_or_fail("python3-yaml is missing (bash scripts/deps.sh --tests)")
    kubectl = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if not kubectl:
        skip_or_fail("kubectl is missing (Debian package kubernetes-client; "
                     "bash scripts/deps.sh --tests)")

    kustomizations(src)
    with tempfile.TemporaryDirectory(prefix="shmbpf-kustomize-") as tmp:
        base = render(kubectl, os.path.join(src, KUSTOMIZE_DIRS[0]), tmp)
        extra = render(kubectl, os.path.join(src, KUSTOMIZE_DIRS[1]), tmp)
    want = {"Namespace", "ServiceAccount", "DaemonSet", "NetworkPolicy"}
    if not check(set(base) == want, f"the base has {sorted(base)}, not {sorted(want)}"):
        sys.exit("FAIL:\n" + "\n".join(failures))
    want = {"PodMonitor", "PrometheusRule"}
    if not check(set(extra) == want, f"prometheus-operator/ has {sorted(extra)}, not {sorted(want)}"):
        sys.exit("FAIL:\n" + "\n".join(failures))

    namespace = base["Namespace"]["metadata"]["name"]
    for kind, obj in [*base.items(), *extra.items()]:
        if kind != "Namespace":
            check(obj["metadata"].get("namespace") == namespace,
                  f"the {kind} is not in namespace {namespace}")
    check_namespace(base["Namespace"])
    labels, port_name, port = check_daemonset(src, binary, base["DaemonSet"],
                                              base["ServiceAccount"])
    check_network_policy(base["NetworkPolicy"], labels, port_name, port)
    check_pod_monitor(extra["PodMonitor"], namespace, labels, port_name)
    check_prometheus_rule(src, extra["PrometheusRule"], namespace)

    if failures:
        print("FAIL:\n" + "\n".join(failures), file=sys.stderr)
        sys.exit(1)
    out = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True).stdout
    version = re.search(r"v\d+\.\d+\.\d+", out)
    print(f"ok: kubectl {version.group(0) if version else '?'} kustomize renders "
          f"{', '.join(base)} and {', '.join(extra)}; the DaemonSet runs shmbpf serve on "
          f"port {port}, probes /healthz and /readyz; the NetworkPolicy admits only that port; "
          "the PrometheusRule's groups are the rules file's")


if __name__ == "__main__":
    main()
