#!/usr/bin/env python3
"""The `docker run` that starts the DaemonSet's pod (of `kubectl kustomize
deploy/kubernetes`, a file of the objects it makes) the way a kubelet would,
for tests/deploy/image.sh: a node without a cluster, only Docker.

    daemonset_run.py <manifest> <temp dir> [--volume HOST:PATH[:ro]]...
                     [--facts FILE]

Writes on stdout, each followed by a NUL byte: the options of `docker run`,
the image, then the arguments of its entrypoint (`docker run "${argv[@]}"`).
Writes on stderr, one a line, each thing it did not take as written (the
substitutions, below). With --facts FILE, also writes to FILE what the test
needs to know, one a line: "image <image>", "name <container name>",
"grace <terminationGracePeriodSeconds>", and
"<what> <path> <port>" for each HTTP endpoint the manifest names: readiness
and liveness from the probes, metrics from the prometheus.io annotations.

Every field of the pod spec, of the container and of its securityContext is
either translated or named below as what Docker has no use for: a field this
does not know fails, so that the test follows the manifest.

Substitutions, each said on stderr:
  - BPF and PERFMON are no capabilities Docker 20.10 (Debian 12's) knows: its
    CLI rejects `--cap-add BPF`. SYS_ADMIN, which the manifest also adds, is
    what the kernel accepted before them and still accepts for both (bpf(2),
    perf_event_open(2)), so they map to nothing. A manifest that adds them
    without SYS_ADMIN fails here.
  - A hostPath of type DirectoryOrCreate (the state directory) is a directory
    under the temp dir, not the real host path: the test writes nothing of
    the node's.
  - A hostPath of empty type that does not exist on this machine (containerd's
    task bundles, kubelet's pod logs: a node with Docker only) is an empty
    directory under the temp dir. Docker's -v would create the real path, as
    containerd's CRI does on a node; the test must not.
  - An env var from the downward API's spec.nodeName (NODE_NAME) is this
    machine's host name: the node is this machine.
  - Only where /proc/1/ns/cgroup cannot be opened (a sandbox whose PID 1 is no
    init of this machine; on a node it always can): --cgroup=/proc/1/ns/cgroup
    in the command names /proc/2's instead, kthreadd's, which is in the
    initial cgroup namespace as PID 1 is.
"""
import os
import re
import sys

try:
    import yaml
except ImportError:
    why = "python3-yaml is missing (bash scripts/deps.sh --tests)"
    if os.environ.get("CI") == "true":
        print(f"FAIL: {why}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(77)


class Unsupported(Exception):
    pass


def note(what):
    print(f"daemonset_run: {what}", file=sys.stderr)


def known(d, where, translated, ignored):
    """Fails on a key of d that is neither translated nor ignored."""
    for key in d:
        if key not in translated and key not in ignored:
            raise Unsupported(f"{where}.{key} is not translated to docker run (daemonset_run.py)")


def quantity(q):
    """A Kubernetes memory quantity in bytes: 512Mi, 1Gi, 100M, 1048576."""
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(q))
    if not m:
        raise Unsupported(f"quantity {q!r}")
    scale = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[m.group(2)]
    return int(m.group(1)) * scale


def can_open(path):
    try:
        os.close(os.open(path, os.O_RDONLY))
        return True
    except OSError:
        return False


# Pod spec fields Docker has nothing to do with on a single node.
POD_IGNORED = {
    "serviceAccountName": "no API server",
    "automountServiceAccountToken": "no API server, no token to mount",
    "nodeSelector": "this machine is the node",
    "affinity": "this machine is the node (kubernetes.py checks its architectures)",
    "priorityClassName": "nothing to preempt",
    "tolerations": "no taints",
}
CONTAINER_IGNORED = {
    "imagePullPolicy": "the image is imported, never pulled",
    "ports": "no port is published: --network none, the test enters the netns",
    "livenessProbe": "asked by the test (--facts)",
    "readinessProbe": "asked by the test (--facts)",
}


def translate(manifest, tmp, extra_volumes):
    with open(manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    ds = next((d for d in docs if d.get("kind") == "DaemonSet"), None)
    if ds is None:
        raise Unsupported("no DaemonSet")
    template = ds["spec"]["template"]
    pod = template["spec"]
    known(pod, "spec", {"hostPID", "terminationGracePeriodSeconds", "containers", "volumes"},
          POD_IGNORED)
    if len(pod["containers"]) != 1:
        raise Unsupported("a pod of more than one container")
    c = pod["containers"][0]
    known(c, "container", {"name", "image", "command", "args", "env", "resources",
                           "securityContext", "volumeMounts"}, CONTAINER_IGNORED)

    opts = ["--detach", "--name", c["name"]]
    # A pod has a network namespace of its own; there is no bridge here, so
    # the container's has only lo, which the test reaches with nsenter -n.
    opts += ["--network", "none"]
    if pod.get("hostPID"):
        opts += ["--pid", "host"]
    if "terminationGracePeriodSeconds" in pod:
        opts += ["--stop-timeout", str(pod["terminationGracePeriodSeconds"])]
    for e in c.get("env", []):
        known(e, "env[]", {"name", "value", "valueFrom"}, {})
        value = e.get("value", "")
        if "valueFrom" in e:
            field = e["valueFrom"].get("fieldRef", {}).get("fieldPath")
            if set(e["valueFrom"]) != {"fieldRef"} or field != "spec.nodeName":
                raise Unsupported(f"env {e['name']}: valueFrom {e['valueFrom']}")
            value = os.uname().nodename
            note(f"env {e['name']}: spec.nodeName is this machine's host name, {value}")
        opts += ["--env", f"{e['name']}={value}"]

    res = c.get("resources", {})
    known(res, "resources", {"limits", "requests"}, {})
    limits = res.get("limits", {})
    known(limits, "resources.limits", {"memory"}, {})
    if "memory" in limits:
        opts += ["--memory", str(quantity(limits["memory"]))]
    # requests only schedule (and weigh CPU shares); the limit is what binds.

    sc = c.get("securityContext", {})
    known(sc, "securityContext", {"privileged", "allowPrivilegeEscalation",
                                  "readOnlyRootFilesystem", "runAsUser", "runAsGroup",
                                  "capabilities", "seccompProfile", "appArmorProfile"}, {})
    if sc.get("privileged"):
        opts += ["--privileged"]
    if sc.get("allowPrivilegeEscalation") is False:
        opts += ["--security-opt", "no-new-privileges"]
    if sc.get("readOnlyRootFilesystem"):
        opts += ["--read-only"]
    if "runAsUser" in sc:
        user = str(sc["runAsUser"])
        if "runAsGroup" in sc:
            user += f":{sc['runAsGroup']}"
        opts += ["--user", user]
    caps = sc.get("capabilities", {})
    known(caps, "capabilities", {"add", "drop"}, {})
    for cap in caps.get("drop", []):
        opts += ["--cap-drop", cap]
    added = caps.get("add", [])
    for cap in added:
        if cap in ("BPF", "PERFMON"):
            if "SYS_ADMIN" not in added:
                raise Unsupported(f"{cap} without SYS_ADMIN: Docker 20.10 cannot grant it")
            note(f"capability {cap}: Docker 20.10 has none by that name; "
                 "SYS_ADMIN (added too) is what the kernel accepts for it")
            continue
        opts += ["--cap-add", cap]
    seccomp = sc.get("seccompProfile", {}).get("type", "RuntimeDefault")
    if seccomp == "Unconfined":
        opts += ["--security-opt", "seccomp=unconfined"]
    elif seccomp != "RuntimeDefault":  # Docker's default profile is the runtime's
        raise Unsupported(f"seccompProfile {seccomp}")
    apparmor = sc.get("appArmorProfile", {}).get("type", "RuntimeDefault")
    if apparmor == "Unconfined":
        opts += ["--security-opt", "apparmor=unconfined"]
    elif apparmor != "RuntimeDefault":
        raise Unsupported(f"appArmorProfile {apparmor}")

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        known(m, "volumeMounts[]", {"name", "mountPath", "readOnly"}, {})
        v = volumes[m["name"]]
        path, ro = m["mountPath"], m.get("readOnly", False)
        if "hostPath" in v:
            host, kind = v["hostPath"]["path"], v["hostPath"].get("type", "")
            if kind == "DirectoryOrCreate":
                sub = os.path.join(tmp, "hostpath", m["name"])
                os.makedirs(sub, mode=0o755, exist_ok=True)
                note(f"volume {m['name']}: hostPath {host} (DirectoryOrCreate) is {sub}")
                host = sub
            elif kind == "Directory":
                if not os.path.isdir(host):
                    raise Unsupported(f"volume {m['name']}: hostPath {host} is no directory "
                                      "(type Directory: the kubelet would not start the pod)")
            elif kind == "":
                if not os.path.exists(host):
                    sub = os.path.join(tmp, "hostpath", m["name"])
                    os.makedirs(sub, mode=0o755, exist_ok=True)
                    note(f"volume {m['name']}: hostPath {host} does not exist here; "
                         f"an empty {sub} instead")
                    host = sub
            else:
                raise Unsupported(f"volume {m['name']}: hostPath type {kind}")
            opts += ["--volume", f"{host}:{path}" + (":ro" if ro else "")]
        elif "emptyDir" in v:
            e = v["emptyDir"] or {}
            if e.get("medium") == "Memory":
                size = f",size={quantity(e['sizeLimit'])}" if "sizeLimit" in e else ""
                opts += ["--tmpfs", f"{path}:{'ro' if ro else 'rw'}{size}"]
            else:
                sub = os.path.join(tmp, "emptydir", m["name"])
                os.makedirs(sub, mode=0o777, exist_ok=True)
                opts += ["--volume", f"{sub}:{path}" + (":ro" if ro else "")]
        else:
            raise Unsupported(f"volume {m['name']}: {sorted(set(v) - {'name'})}")
    for spec in extra_volumes:
        opts += ["--volume", spec]

    # command replaces the image's ENTRYPOINT (and, as docker run
    # --entrypoint does, its CMD); args replace CMD.
    command, args = c.get("command"), c.get("args")
    argv = []
    if command:
        opts += ["--entrypoint", command[0]]
        argv = list(command[1:])
    argv += list(args or [])  # with neither, the image's CMD
    if "--cgroup=/proc/1/ns/cgroup" in argv and not can_open("/proc/1/ns/cgroup"):
        if not can_open("/proc/2/ns/cgroup"):
            raise Unsupported("neither /proc/1/ns/cgroup nor /proc/2/ns/cgroup opens")
        argv[argv.index("--cgroup=/proc/1/ns/cgroup")] = "--cgroup=/proc/2/ns/cgroup"
        note("/proc/1/ns/cgroup cannot be opened here (PID 1 is no init of this machine): "
             "--cgroup=/proc/2/ns/cgroup (kthreadd, the initial cgroup namespace too)")
    return opts + [c["image"]] + argv, facts(template, pod, c)


def facts(template, pod, c):
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", []) if "name" in p}

    def port(p):
        return ports[p] if isinstance(p, str) else int(p)

    out = [("image", c["image"]), ("name", c["name"]),
           ("grace", pod.get("terminationGracePeriodSeconds", 30))]
    for what in ("readiness", "liveness"):
        probe = c.get(f"{what}Probe")
        if probe and "httpGet" in probe:
            out.append((what, probe["httpGet"]["path"], port(probe["httpGet"]["port"])))
    ann = template.get("metadata", {}).get("annotations", {})
    if ann.get("prometheus.io/scrape") == "true":
        out.append(("metrics", ann.get("prometheus.io/path", "/metrics"),
                    int(ann["prometheus.io/port"])))
    return out


def main():
    args = sys.argv[1:]
    extra, facts_file, pos = [], None, []
    while args:
        a = args.pop(0)
        if a == "--volume":
            extra.append(args.pop(0))
        elif a == "--facts":
            facts_file = args.pop(0)
        else:
            pos.append(a)
    if len(pos) != 2:
        sys.exit(__doc__)
    manifest, tmp = pos
    try:
        argv, known_facts = translate(manifest, tmp, extra)
    except (Unsupported, KeyError) as e:
        print(f"FAIL: {manifest}: {e}", file=sys.stderr)
        sys.exit(1)
    if facts_file:
        with open(facts_file, "w") as f:
            for fact in known_facts:
                f.write(" ".join(str(x) for x in fact) + "\n")
    sys.stdout.write("".join(a + "\0" for a in argv))


if __name__ == "__main__":
    main()
