#!/usr/bin/env python3
"""Every query of deploy/grafana/shmbpf.json returns data, from a real
`shmbpf serve` scraped by a real Prometheus, while the things the panels
show happen for real:

- a pod, as a node has one: two containers' cgroups laid out as kubelet's
  cgroupfs driver lays them out (kubepods/burstable/pod<uid>/<id>, a memory
  limit on the pod), a name for it in a pod-logs directory of the test's
  own (`--runtime-root pod-logs=`), and a /dev/shm of its own (a 32 MiB
  tmpfs in a mount namespace its container holds). The first container
  writes a file there and ends: an orphan, and one left by a restart, as
  the second container still runs. The second fills /dev/shm to 80% and
  keeps growing it, so that its time to full and to the memory limit exist;
- a full 1 MiB tmpfs: a write fails with ENOSPC, then a mapping of it
  SIGBUS-kills its process;
- a memory cgroup with a 32 MiB limit in which a process maps a 64 MiB
  tmpfs file: an OOM kill.

Then each target's variables are replaced as Grafana would ($node =
testnode, the serve's --node-name; $namespace/$pod = the pod's names, and
the Pod row once more with All, `.*`, which also matches the empty labels
of the host; $__range = the time Prometheus has run), and each query is
asked as an instant query (/api/v1/query) and, for a time series panel, as
Grafana asks it too (/api/v1/query_range): each must give a series. The
panels of what the test made (orphans, SIGBUS, ENOSPC, OOM kills) must
also count them. Everything is removed at the end, on failure too.

Needs root, BPF and Debian's prometheus; a machine without them skips
(77), except under CI=true, where it fails.

    grafana.py <source dir> <shmbpf binary>
"""
import contextlib
import ctypes
import json
import math
import os
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import grafana_dashboard

NODE = "testnode"
POD_NAMESPACE, POD_NAME = "grafana-check", "shm-pod"
PROMETHEUS = "/usr/bin/prometheus"
KIB, MIB = 1 << 10, 1 << 20
ORPHAN_BYTES = 256 * KIB
SHM_SIZE, SHM_PREFILL = 32 * MIB, 26 * MIB
POD_LIMIT, OOM_LIMIT, OOM_FILE = 256 * MIB, 32 * MIB, 64 * MIB
RATE_INTERVAL, INTERVAL = "10s", "2s"
# A panel of one of these must count what the test made, not only answer.
MADE = {
    "shmbpf_orphaned_bytes": "the orphan the pod's first container left",
    "shmbpf_restart_orphaned_bytes": "the orphan the pod's first container left",
    "shmbpf_sigbus_total": "the SIGBUS on the full tmpfs",
    "shmbpf_nospace_total": "the ENOSPC on the full tmpfs",
    "shmbpf_oom_kills_total": "the OOM kill",
}

# The workloads, each a python3 -c program.
GROW = f"""
import os, sys, time
fd = os.open('/dev/shm/grafana-check-grow', os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
for _ in range({SHM_PREFILL} // {MIB}):
    os.write(fd, b'p' * {MIB})
print('ready', flush=True)
while True:
    try:
        os.write(fd, b'g' * {16 * KIB})
    except OSError:
        pass
    time.sleep(0.25)
"""
FILL_AND_FAULT = """
import errno, mmap, os, sys
d = sys.argv[1]
log = os.open(d + '/log', os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
try:
    while True:
        os.write(log, b'w' * 65536)
except OSError as e:
    if e.errno != errno.ENOSPC:
        sys.exit(2)
os.ftruncate(log, 0)  # room for the mapping's first pages again
fd = os.open(d + '/big', os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
os.ftruncate(fd, 4 << 20)
m = mmap.mmap(fd, 4 << 20)
for off in range(0, 4 << 20, 4096):
    m[off] = 1  # SIGBUS at 1 MiB
sys.exit(3)
"""
FILL_PAST_LIMIT = f"""
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
os.ftruncate(fd, {OOM_FILE})
m = mmap.mmap(fd, {OOM_FILE})
for off in range(0, {OOM_FILE}, 4096):
    m[off] = 1  # killed past the cgroup's limit
sys.exit(3)
"""


def in_ci():
    return os.environ.get("CI") == "true"


def skip_or_fail(why):
    if in_ci():
        print(f"FAIL: {why}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {why}")
    sys.exit(77)


def fail(why):
    raise SystemExit(f"FAIL: {why}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, params=None, timeout=10):
    url = f"http://127.0.0.1:{port}{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None, ""


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def mountinfo():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            yield fields[3], fields[4], fields[sep + 1], fields[sep + 3]  # root, point, type, opts


def tracefs_mounted():
    return any(p == "/sys/kernel/tracing" and t == "tracefs" for _, p, t, _ in mountinfo())


_libc = ctypes.CDLL(None, use_errno=True)


def child_setup(cgroup_procs=()):
    """For a child, before it runs: it dies with the test, dumps no core,
    and is in these cgroups (their cgroup.procs files)."""
    def setup():
        _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        for procs in cgroup_procs:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
    return setup


class Cgroups:
    """Directories below shmbpf-grafana-<pid> in the cgroup v2 hierarchy
    (whose path names a container) and in the one with the memory
    controller (v1's on a hybrid host, else v2's with memory handed down)."""

    def __init__(self, stack):
        self.top = f"shmbpf-grafana-{os.getpid()}"
        v2 = [p for root, p, t, _ in mountinfo() if t == "cgroup2" and root == "/"]
        mem = [p for root, p, t, o in mountinfo()
               if t == "cgroup" and root == "/" and "memory" in o.split(",")]
        with open("/proc/self/cgroup") as f:
            self.v1 = any(l.split(":")[1] and "memory" in l.split(":")[1].split(",")
                          for l in f.read().splitlines())
        if not v2:
            skip_or_fail("no cgroup2 mount")
        self.v2_base = v2[0]
        if self.v1:
            if not mem:
                skip_or_fail("no mount of the v1 memory hierarchy")
            self.mem_base = mem[0]
        else:
            self.mem_base = self.v2_base
            with open(os.path.join(self.v2_base, "cgroup.subtree_control")) as f:
                if "memory" not in f.read().split():
                    skip_or_fail("cgroup v2 without the memory controller at its root")
        self.made = []
        stack.callback(self.remove)

    def make(self, rel):
        """rel below the test's directory, in both hierarchies; the cgroup.procs to join."""
        procs = []
        for base in dict.fromkeys([self.v2_base, self.mem_base]):
            path = base
            for part in [self.top, *rel.split("/")]:
                if not self.v1 and base == self.v2_base and path != base:
                    with contextlib.suppress(OSError):
                        write(os.path.join(path, "cgroup.subtree_control"), "+memory")
                path = os.path.join(path, part)
                if not os.path.isdir(path):
                    os.mkdir(path)
                    self.made.append(path)
            procs.append(os.path.join(path, "cgroup.procs"))
        return procs

    def limit(self, rel, limit):
        d = os.path.join(self.mem_base, self.top, rel)
        write(os.path.join(d, "memory.limit_in_bytes" if self.v1 else "memory.max"), str(limit))
        # Pages go nowhere but the cgroup: over the limit means an OOM kill.
        with contextlib.suppress(OSError):
            write(os.path.join(d, "memory.swappiness" if self.v1 else "memory.swap.max"), "0")

    def remove(self):
        for d in sorted(self.made, key=lambda p: p.count("/"), reverse=True):
            for _ in range(300):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    with contextlib.suppress(OSError), open(os.path.join(d, "cgroup.procs")) as f:
                        for pid in f.read().split():
                            with contextlib.suppress(OSError):
                                os.kill(int(pid), signal.SIGKILL)
                    time.sleep(0.01)


class Prom:
    """Prometheus' HTTP API."""

    def __init__(self, port):
        self.port = port

    def api(self, path, params):
        status, body = http_get(self.port, path, params)
        try:
            j = json.loads(body)
        except ValueError:
            j = {}
        if status != 200 or j.get("status") != "success":
            return None, j.get("error", body.strip()[:300] or f"no answer ({status})")
        return j["data"], None

    def query(self, expr):
        data, err = self.api("/api/v1/query", {"query": expr})
        return (data["result"] if data else None), err

    def query_range(self, expr, start, end, step):
        data, err = self.api("/api/v1/query_range",
                             {"query": expr, "start": start, "end": end, "step": step})
        return (data["result"] if data else None), err

    def values(self, expr):
        result, _ = self.query(expr)
        return [float(s["value"][1]) for s in result or []]


def start(stack, args, log, **kw):
    f = open(log, "w")
    p = subprocess.Popen(args, stdout=kw.pop("stdout", f), stderr=f, stdin=subprocess.DEVNULL,
                         **kw)
    f.close()

    def stop():
        if p.poll() is None:
            p.kill()
            p.wait()
    stack.callback(stop)
    return p


def read_line(p, timeout):
    """The first line a child prints, or '' when it prints none in time."""
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    return p.stdout.readline().decode().strip() if ready else ""


def tail(path, n=30):
    with contextlib.suppress(OSError), open(path) as f:
        return "".join(f.readlines()[-n:])
    return ""


def mount_tmpfs(stack, path, size):
    os.mkdir(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "grafana-check",
                    path], check=True)
    stack.callback(lambda: subprocess.run(["umount", "-l", path], check=False))


def wait_for(what, ok, timeout, log=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.25)
    fail(f"{what} within {timeout} s" + (f"; its log:\n{tail(log)}" if log else ""))


def prometheus_regex(value):
    """A variable's value as Grafana puts it in a regex matcher."""
    return re.sub(r"([\\$^*{}\[\]'+?.()|])", r"\\\\\1", value)


def substitute(expr, values):
    """Grafana's interpolation: ${name} and $name, longest names first."""
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
    if "$" in expr:
        fail(f"a variable left in {expr}")
    return expr


def labels_of(series):
    """A series' labels as the panel's legend could use them: job, instance
    and the metric's name left out, container ids and pod uids cut short."""
    keep = {k: v[:12] + "..." if k in ("container_id", "uid") and len(v) > 15 else v
            for k, v in series["metric"].items() if k not in ("job", "instance", "__name__")}
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(keep.items())) + "}"


def number(v):
    x = float(v)
    if math.isinf(x) or math.isnan(x):
        return v
    return f"{x:.0f}" if x == int(x) and abs(x) < 1e15 else f"{x:.4g}"


def show(result, rng):
    """The first few series of a result, and how many there were."""
    lines = []
    for s in result[:3]:
        if rng:
            vals = [v for _, v in s["values"]]
            lines.append(f"{labels_of(s)} {len(vals)} points, last {number(vals[-1])}")
        else:
            lines.append(f"{labels_of(s)} {number(s['value'][1])}")
    if len(result) > 3:
        lines.append(f"... {len(result) - 3} more series")
    return lines


def largest(result, rng):
    vals = [float(v) for s in result for _, v in (s["values"] if rng else [s["value"]])]
    return max(vals, default=0.0)


def run_queries(prom, d, values, rows, start_s, end_s, summary):
    """Every target of these rows asked as Grafana asks it; what failed."""
    bad = []
    for row, p, t in grafana_dashboard.targets(d):
        if row.split(":")[0] not in rows:
            continue
        expr = substitute(t["expr"], values)
        name = f"[{row.split(':')[0]}] {p['title']} / {t['refId']}"
        print(f"\n{name} ({p['type']})\n  {expr}")
        asks = [("instant", False)] + ([("range", True)] if not t.get("instant") else [])
        got = {}
        for kind, rng in asks:
            if rng:
                result, err = prom.query_range(expr, start_s, end_s, 1)
            else:
                result, err = prom.query(expr)
            if err:
                bad.append(f"{name}: {kind} query failed: {err}")
                print(f"  {kind}: ERROR {err}")
                continue
            print(f"  {kind}: {len(result)} series")
            for line in show(result, rng):
                print(f"    {line}")
            got[kind] = result
            if not result:
                bad.append(f"{name}: the {kind} query gave no series")
                continue
            made = [m for m in MADE if re.search(rf"\b{m}\b", expr)]
            if made and largest(result, rng) <= 0:
                bad.append(f"{name}: the {kind} query does not count {MADE[made[0]]}")
        first = got.get("instant") or []
        summary.append((row.split(":")[0], p["title"], t["refId"], expr,
                        f"{len(first)} series" + (f", {labels_of(first[0])} "
                                                  f"{number(first[0]['value'][1])}"
                                                  if first else "")))
    return bad


def start_serve(stack, binary, tmp):
    """serve on a free port with the pod-logs directory of the test's pod;
    its port and log once it is ready."""
    port, log = free_port(), f"{tmp}/serve.log"
    # The full hook set: writes that fail with ENOSPC are seen by it only.
    serve = start(stack, [binary, "serve", "--listen", f"127.0.0.1:{port}", "--no-socket",
                          "--state-dir", f"{tmp}/state", "--hooks", "full",
                          "--runtime-root", f"pod-logs={tmp}/pods", "--node-name", NODE],
                  log, preexec_fn=child_setup())

    def ready():
        if serve.poll() is not None:
            if serve.returncode == 2:
                skip_or_fail(f"shmbpf serve cannot run here:\n{tail(log)}")
            fail(f"shmbpf serve exited {serve.returncode}:\n{tail(log)}")
        return http_get(port, "/readyz", timeout=2)[0] == 200
    wait_for("shmbpf serve ready", ready, 60, log)
    return serve, port, log


def start_prometheus(stack, tmp, port):
    """Prometheus scraping serve each second, as a node's would (honor_labels:
    serve's namespace and pod are the segments', not the target's)."""
    write(f"{tmp}/prometheus.yml", f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: shmbpf
    honor_labels: true
    static_configs:
      - targets: ['127.0.0.1:{port}']
""")
    prom_port, log = free_port(), f"{tmp}/prometheus.log"
    started = time.time()
    start(stack, [PROMETHEUS, f"--config.file={tmp}/prometheus.yml",
                  f"--storage.tsdb.path={tmp}/data", "--log.level=warn",
                  f"--web.listen-address=127.0.0.1:{prom_port}"],
          log, preexec_fn=child_setup())
    prom = Prom(prom_port)
    wait_for("Prometheus scraping shmbpf serve",
             lambda: prom.values('up{job="shmbpf"}') == [1.0], 60, log)
    return prom, started


def make_pod(stack, cg, tmp, serve_port, serve_log):
    """The pod, named in the pod-logs directory: its second container holds
    the mount namespace of the pod's /dev/shm and grows a file there; its
    first leaves a file there and ends. The pod's uid."""
    uid = str(uuid.uuid4())
    pod = f"kubepods/burstable/pod{uid}"
    first = cg.make(f"{pod}/{uuid.uuid4().hex * 2}")
    second = cg.make(f"{pod}/{uuid.uuid4().hex * 2}")
    cg.limit(pod, POD_LIMIT)
    os.makedirs(f"{tmp}/pods/{POD_NAMESPACE}_{POD_NAME}_{uid}")
    holder = start(stack, ["unshare", "-m", "--propagation", "private", "--", "sh", "-c",
                           f"mount -t tmpfs -o size={SHM_SIZE},mode=1777 grafana-check "
                           "/dev/shm && echo ready && exec sleep 600"],
                   f"{tmp}/holder.log", stdout=subprocess.PIPE, preexec_fn=child_setup(second))
    if read_line(holder, 10) != "ready":
        fail(f"the pod's /dev/shm was not mounted: {tail(tmp + '/holder.log')}")
    # Written into before serve has read the new namespace's mounts, a file
    # there was counted as an orphan only at the next full rescan, 30 s or
    # more later: first the mount, as a runtime does.
    wait_for("shmbpf serve seeing the pod's /dev/shm", lambda: any(
        line.startswith("shmbpf_mount_size_bytes{") and f'pod="{POD_NAME}"' in line
        for line in http_get(serve_port, "/metrics")[1].splitlines()), 20, serve_log)
    in_pod = ["nsenter", "-m", "-t", str(holder.pid), "--"]
    grower = start(stack, in_pod + [sys.executable, "-c", GROW], f"{tmp}/grower.log",
                   stdout=subprocess.PIPE, preexec_fn=child_setup(second))
    if read_line(grower, 20) != "ready":
        fail(f"the pod's grower did not fill /dev/shm: {tail(tmp + '/grower.log')}")
    left = subprocess.run(in_pod + ["sh", "-c", f"head -c {ORPHAN_BYTES} /dev/zero "
                                    "> /dev/shm/grafana-check-left-by-restart"],
                          preexec_fn=child_setup(first))
    if left.returncode != 0:
        fail("the pod's first container could not write its file")
    return uid


def make_failures(stack, cg, tmp):
    """ENOSPC and SIGBUS on a full tmpfs, an OOM kill; the full tmpfs' path."""
    full, oomfs = f"{tmp}/full", f"{tmp}/oom"
    mount_tmpfs(stack, full, "1m")
    mount_tmpfs(stack, oomfs, "128m")
    r = subprocess.run([sys.executable, "-c", FILL_AND_FAULT, full], preexec_fn=child_setup())
    if r.returncode != -signal.SIGBUS:
        fail(f"the process mapping the full tmpfs ended with {r.returncode}, not SIGBUS")
    oom = cg.make("oom")
    cg.limit("oom", OOM_LIMIT)
    r = subprocess.run([sys.executable, "-c", FILL_PAST_LIMIT, f"{oomfs}/fill"],
                       preexec_fn=child_setup(oom))
    if r.returncode != -signal.SIGKILL:
        fail(f"the process filling its memory cgroup ended with {r.returncode}, "
             "not an OOM kill")
    return full


def wait_for_data(prom, full, began):
    """Until Prometheus has scraped what the test made."""
    pod = f'namespace="{POD_NAMESPACE}",pod="{POD_NAME}"'
    expected = {
        "the SIGBUS": f'shmbpf_sigbus_total{{mountpoint="{full}"}} >= 1',
        "the ENOSPC": f'shmbpf_nospace_total{{mountpoint="{full}"}} >= 1',
        "an OOM kill": "sum(shmbpf_oom_kills_total) >= 1",
        "the restart orphan": f"shmbpf_restart_orphaned_bytes{{{pod}}} >= {ORPHAN_BYTES}",
        "the pod's time to full": f"shmbpf_mount_seconds_to_full{{{pod}}}",
        "the pod's time to its memory limit": f"shmbpf_mount_seconds_to_memory_limit{{{pod}}}",
        "three samples of shmbpf's CPU": "count_over_time(process_cpu_seconds_total[10s]) >= 3",
    }
    for what, expr in expected.items():
        wait_for(f"Prometheus has {what} ({expr})", lambda: prom.values(expr), 45)
        print(f"Prometheus has {what} after {time.monotonic() - began:.1f} s")
    # A range query's last step comes up to a step before its end.
    time.sleep(2)


def check_variables(prom):
    """The variables' queries, asked as Grafana asks them, offer the pod."""
    for name, match, want in (
            ("node", "shmbpf_build_info", NODE),
            ("namespace", f'shmbpf_segments{{node=~"{NODE}"}}', POD_NAMESPACE),
            ("pod", f'shmbpf_segments{{node=~"{NODE}",namespace=~"{POD_NAMESPACE}"}}', POD_NAME)):
        got, err = prom.api(f"/api/v1/label/{name}/values", {"match[]": match})
        print(f"variable {name}: label_values({match}, {name}) = {got}")
        if err or want not in got:
            fail(f"variable {name} does not offer {want}: {got or err}")


def main():
    src, binary = sys.argv[1], sys.argv[2]
    d = grafana_dashboard.load(src)
    bad = grafana_dashboard.check(d)
    if bad:
        fail("the dashboard's structure:\n  " + "\n  ".join(bad))
    if os.geteuid() != 0:
        skip_or_fail("needs root (BPF, mounts, cgroups)")
    if not os.access(PROMETHEUS, os.X_OK):
        skip_or_fail(f"{PROMETHEUS} is missing (Debian package prometheus; "
                     "bash scripts/deps.sh --tests)")
    for tool in ("unshare", "nsenter", "mount"):
        if not shutil.which(tool):
            skip_or_fail(f"{tool} is missing (Debian package util-linux)")
    serve_help = subprocess.run([binary, "serve", "--help"], capture_output=True,
                                text=True).stdout
    if "--node-name" not in serve_help:
        fail("shmbpf serve has no --node-name: the dashboard's $node needs it")

    # SIGTERM (ctest's timeout) unwinds like a failure: everything is removed.
    signal.signal(signal.SIGTERM, lambda *_: fail("stopped by SIGTERM"))
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        # serve mounts tracefs in a namespace of its own where it is not
        # mounted; whatever happens, the host's stays as it was.
        if not tracefs_mounted():
            stack.callback(lambda: tracefs_mounted() and subprocess.run(
                ["umount", "/sys/kernel/tracing"], check=False))
        tmp = tempfile.mkdtemp(prefix="shmbpf-grafana-")
        stack.callback(shutil.rmtree, tmp, True)
        cg = Cgroups(stack)
        serve, port, serve_log = start_serve(stack, binary, tmp)
        prom, prom_started = start_prometheus(stack, tmp, port)
        uid = make_pod(stack, cg, tmp, port, serve_log)
        full = make_failures(stack, cg, tmp)
        wait_for_data(prom, full, began)
        print(f"\nworkload done after {time.monotonic() - began:.0f} s; "
              f"pod {POD_NAMESPACE}/{POD_NAME} uid {uid}")
        check_variables(prom)

        end = time.time()
        rng = f"{math.ceil(end - prom_started) + 5}s"
        common = {"node": NODE, "__range": rng, "__rate_interval": RATE_INTERVAL,
                  "__interval": INTERVAL}
        summary, all_summary = [], []
        bad = run_queries(prom, d, {**common, "namespace": prometheus_regex(POD_NAMESPACE),
                                    "pod": prometheus_regex(POD_NAME)},
                          ("Fleet", "Node", "Pod"), prom_started, end, summary)
        print("\n=== the Pod row once more with All: namespace and pod '.*'")
        bad += run_queries(prom, d, {**common, "namespace": ".*", "pod": ".*"}, ("Pod",),
                           prom_started, end, all_summary)
        print(f"\n=== {len(summary)} queries ($__range={rng}, $__rate_interval={RATE_INTERVAL},"
              f" $node={NODE}, $namespace={POD_NAMESPACE}, $pod={POD_NAME}):")
        for row, title, ref, _, what in summary:
            print(f"  {row:5} | {title} / {ref} | {what}")

        serve.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            serve.wait(20)
        if serve.returncode != 0:
            bad.append(f"shmbpf serve stopped with {serve.returncode}:\n{tail(serve_log)}")
        if bad:
            fail(f"{len(bad)} of the dashboard's queries:\n  " + "\n  ".join(bad))
    print(f"\nok: every query of {len(summary)} (and the Pod row's {len(all_summary)} with All) "
          f"gave data, in {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
