#!/usr/bin/env python3
"""shmbpf benchmarks: the driver behind `sudo bench/run` (docs/BENCHMARKS.md).

Every timed comparison is interleaved: each round runs every condition once
(untraced, shmbpf trace, the engine, bpftrace), in an order rotated from
round to round, and the report gives medians over rounds and ratios of
medians. Tracers are started fresh for each measurement and the workload
only runs once the tracer is attached and idle.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

# name -> (program, extra args, iterations for one measurement)
WORKLOADS = {
    "open_close": ("open_close", [], 200000),
    "write": ("write_loop", [], 400000),
    "shm": ("shm_cycle", [], 50000),
    "shm_mmap": ("shm_cycle", ["-m"], 6000),
    "memfd": ("memfd_cycle", [], 60000),
    "sysv": ("sysv_cycle", [], 40000),
}
WORKLOAD_TITLES = {
    "open_close": "open+close on ext4 (unrelated)",
    "write": "64-byte pwrite on ext4 (unrelated)",
    "shm": "POSIX shm cycle",
    "shm_mmap": "POSIX shm cycle + mmap/touch/munmap",
    "memfd": "memfd cycle",
    "sysv": "SysV shmget/shmat/shmdt/RMID cycle",
}

# engine_host (the model without a view) with the full or the light hook set,
# or the light set with a reader that only counts its records: condition ->
# engine_host's arguments.
ENGINES = {"engine": [], "engine_light": ["--hooks", "light"],
           "light_count": ["--hooks", "light", "--count-only"]}
# The floor section's probes (bench/floor): condition -> floor_host's arguments.
FLOOR_MODES = {"floor_empty": ["empty"], "floor_count": ["count"], "floor_record": ["record"],
               "ctime_empty": ["--hooks", "ctime", "empty"], "ctime_record": ["--hooks", "ctime", "record"],
               "ctime_record_ctime": ["--hooks", "ctime", "record_ctime"]}
FLOOR_WORKLOADS = ["open_close", "shm"]

SUBRUNS = 3  # per measurement; the fastest counts

TARGETS = {
    "open_close": 1.03,
    "shm": 1.10,
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def parse_kv(text):
    """Last 'k=v k=v' line of a workload's output as a dict of numbers/strings."""
    out = {}
    for line in text.splitlines():
        if "=" not in line:
            continue
        for tok in line.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                try:
                    out[k] = float(v) if "." in v else int(v)
                except ValueError:
                    out[k] = v
    return out


def proc_cpu_s(pid):
    """utime + stime of a process in seconds, from /proc (None when gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def bpf_fd_count(pid):
    """perf_event and bpf_link fds: one per attached tracepoint or link."""
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target in ("anon_inode:[perf_event]", "anon_inode:bpf_link"):
                n += 1
    except OSError:
        pass
    return n


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def family_of(kind):
    """What runs a condition: shmbpf trace, the engine host, bpftrace or the floor's host."""
    if kind in ("trace", "base", "light"):
        return "trace"
    if kind in ENGINES:
        return "engine"
    if kind == "bpftrace":
        return "bpftrace"
    if kind in FLOOR_MODES:
        return "floor"
    raise ValueError(kind)


class Tracer:
    """A tracer process: shmbpf trace, the engine host, or bpftrace."""

    def __init__(self, kind, cfg, ring=None, out=None, match=None, pid=None, cpus=None):
        self.kind = kind
        self.cfg = cfg
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.out_path = out
        self.family = family_of(kind)
        if self.family == "trace":
            cmd = [cfg.base_shmbpf if kind == "base" else cfg.shmbpf, "trace", "--json"]
            # trace loads the full set unless told (and "base" may predate --hooks).
            if kind == "light":
                cmd += ["--hooks", "light"]
            if ring:
                cmd += ["--ring-buffer-size", str(ring)]
        elif self.family == "engine":
            cmd = [cfg.bin("engine_host")] + ENGINES[kind]
            if ring:
                cmd += ["--ring-buffer-size", str(ring)]
            if match:
                cmd += ["--match", match]
        elif self.family == "bpftrace":
            cmd = ["bpftrace", os.path.join(HERE, "peer", "shm.bt")]
        else:
            cmd = [cfg.bin("floor_host")] + FLOOR_MODES[kind]
        if pid:  # the engine host's light hooks and the floor's ctime hooks
            cmd[1:1] = ["--pid", str(pid)]
        if cpus:
            cmd = ["taskset", "-c", cpus] + cmd
        # The engine host and the floor report on stdout; a tracer's output
        # goes to out, or nowhere.
        piped = self.family in ("engine", "floor")
        stdout = subprocess.PIPE if piped else (open(out, "w") if out else subprocess.DEVNULL)
        self.t_start = time.monotonic()
        self.p = subprocess.Popen(cmd, stdout=stdout, stderr=self.errf)
        if out and not piped:
            stdout.close()

    def wait_ready(self, timeout=120):
        """Attached (the count of BPF attachment fds stopped growing) and idle."""
        deadline = time.monotonic() + timeout
        if self.family == "engine":
            line = self.p.stdout.readline()
            if line.strip() != b"ready":
                raise RuntimeError(f"engine_host did not start: {self.stderr()}")
        last, stable_since = -1, time.monotonic()
        cpu_prev = proc_cpu_s(self.p.pid)
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                raise RuntimeError(f"{self.kind} exited early: {self.stderr()}")
            time.sleep(0.1)
            n = bpf_fd_count(self.p.pid)
            cpu = proc_cpu_s(self.p.pid)
            busy = cpu is not None and cpu_prev is not None and cpu - cpu_prev > 0.02
            cpu_prev = cpu
            if n != last or busy or n == 0:
                last, stable_since = n, time.monotonic()
            elif time.monotonic() - stable_since >= 0.4:
                self.ready_s = time.monotonic() - self.t_start
                self.attachments = n
                return
        raise RuntimeError(f"{self.kind} not ready after {timeout}s")

    def cpu_s(self):
        return proc_cpu_s(self.p.pid)

    def report(self):
        """engine_host only: its stats line, without stopping it."""
        self.p.send_signal(signal.SIGUSR1)
        return json.loads(self.p.stdout.readline())

    def stderr(self):
        self.errf.seek(0)
        return self.errf.read()

    def stop(self):
        """Stops the tracer; returns what it says it delivered and lost."""
        self.p.send_signal(signal.SIGINT)
        out = b""
        try:
            if self.family == "engine":
                out, _ = self.p.communicate(timeout=60)
            else:
                self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        err = self.stderr()
        res = {"events": None, "lost": None}
        if self.family == "trace":
            m = re.search(r"shmbpf: (\d+) events, (\d+) lost", err)
            if m:
                res = {"events": int(m.group(1)), "lost": int(m.group(2))}
        elif self.family == "engine":
            lines = [l for l in out.decode().splitlines() if l.startswith("{")]
            if lines:
                j = json.loads(lines[-1])
                res = {"events": j["events"], "lost": j["lost"], "engine": j}
        elif self.family == "floor":
            m = re.search(r"floor: (\d+) records, (\d+) lost", err)
            if m:
                res = {"events": int(m.group(1)), "lost": int(m.group(2))}
        else:
            lost = sum(int(x) for x in re.findall(r"Lost (\d+) events", err))
            res = {"events": None, "lost": lost}
        return res


class Config:
    def __init__(self, args):
        self.build = os.path.abspath(args.build_dir)
        self.bench_bin = os.path.join(self.build, "bench")
        self.shmbpf = os.path.abspath(args.shmbpf or os.path.join(self.build, "shmbpf"))
        # Another build of shmbpf, measured as condition "base" (A/B of a change).
        self.base_shmbpf = os.path.abspath(args.base_shmbpf) if args.base_shmbpf else None
        self.rounds = args.rounds
        self.scale = args.scale

    def bin(self, name):
        return os.path.join(self.bench_bin, name)

    def has(self, name):
        return os.access(self.bin(name), os.X_OK)


def run_workload(cfg, name, iters=None, extra=()):
    prog, args, n = WORKLOADS[name]
    n = iters or max(1, int(n * cfg.scale))
    cmd = [cfg.bin(prog)] + args + ["-n", str(n)] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return parse_kv(r.stdout)


def conditions(cfg, wanted):
    conds = ["untraced", "trace", "light", "engine"]
    if subprocess.run(["which", "bpftrace"], capture_output=True).returncode == 0:
        conds.append("bpftrace")
    if cfg.base_shmbpf:
        conds.insert(2, "base")
    return [c for c in conds if not wanted or c in wanted]


# --- overhead ---------------------------------------------------------------


def bench_overhead(cfg, workloads, conds):
    """Each workload under each condition, interleaved over rounds."""
    results = {}
    for w in workloads:
        rows = {c: [] for c in conds}
        for r in range(cfg.rounds):
            order = conds[r % len(conds):] + conds[: r % len(conds)]
            for c in order:
                rec = {"load": loadavg()}
                tracer = None
                if c != "untraced":
                    tracer = Tracer(c, cfg)
                    tracer.wait_ready()
                    cpu0 = tracer.cpu_s()
                # The fastest of a few short runs: interference only ever adds time
                # (on this VM the sibling CPU's load alone moves a run by 40%).
                subs = [run_workload(cfg, w, max(1, int(WORKLOADS[w][2] * cfg.scale) // SUBRUNS))
                        for _ in range(SUBRUNS)]
                res = min(subs, key=lambda x: x["ns_per_op"])
                rec.update(ns_per_op=res["ns_per_op"], cpu_ns_per_op=res["cpu_ns_per_op"],
                           ops=sum(x["ops"] for x in subs))
                if tracer:
                    cpu1 = tracer.cpu_s()
                    rec["consumer_cpu_s"] = (cpu1 - cpu0) if None not in (cpu0, cpu1) else None
                    rec.update(tracer.stop())
                rows[c].append(rec)
                log(f"  {w:10s} round {r + 1}/{cfg.rounds} {c:9s} {rec['ns_per_op']:10.1f} ns/op"
                    + (f"  lost={rec.get('lost')}" if tracer else ""))
        summary = summarize(rows, conds)
        for c in conds:
            ops = rows[c][0]["ops"] if rows[c] else 0
            cons = median([x.get("consumer_cpu_s") for x in rows[c]])
            summary[c].update(
                median_cpu_ns_per_op=median([x["cpu_ns_per_op"] for x in rows[c]]),
                consumer_cpu_ns_per_op=(cons * 1e9 / ops) if cons is not None and ops else None)
        results[w] = summary
    return results


def summarize(rows, conds):
    """Per condition: the median ns per op of its rounds, its ratio to untraced's, what was lost."""
    base = median([float(x["ns_per_op"]) for x in rows.get("untraced", [])])
    summary = {}
    for c in conds:
        runs = rows.get(c, [])
        med = median([float(x["ns_per_op"]) for x in runs])
        summary[c] = {"median_ns_per_op": med, "ratio": (med / base) if base and med else None,
                      "lost": sum(int(x.get("lost") or 0) for x in runs), "runs": runs}
    return summary


# --- paired: two hook sets timed side by side ---------------------------------

# The paired section's probes, each looking at one child of the paired shm
# cycle alone: the floor of the inode timestamp hooks twice (the second one
# is the method's control: it should cost what the first does), the light
# set with a reader that only counts, and the floor timed as the light set
# is, by the file's new ctime instead of a clock read.
PAIRED = ["ctime_record", "light_count", "ctime_record_again", "ctime_record_ctime"]


def mean_interval(xs):
    """The mean of xs and a 95% interval for it (Student's t; xs independent)."""
    # Two-sided 95% quantiles by degrees of freedom, 1 to 30; past 30, the
    # one for 30 (no smaller than any after it, so the interval is never short).
    t95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
           2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04]
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, (None, None)
    h = t95[min(len(xs) - 1, len(t95)) - 1] * statistics.stdev(xs) / len(xs) ** 0.5
    return m, (m - h, m + h)


def paired_gaps(blocks, names, first, second):
    """Per block, second's ns/op less first's, as a share of the ns/op of the
    child no probe looks at ("none") in the same block."""
    i, j, k = names.index(first), names.index(second), names.index("none")
    return [(b[j] - b[i]) / b[k] for b in blocks if b[k]]


def run_paired(cfg, names, blocks, per_block, probes=()):
    """One run of the paired shm cycle: a child per name, taking turns on the
    last CPU; probes (names, in the order they are started) each look at
    their own child alone, from another CPU. Returns the blocks, each the
    children's ns/op, and what each probe says it delivered and lost."""
    cpu = str(os.cpu_count() - 1)
    drv = subprocess.Popen(["taskset", "-c", cpu, cfg.bin("shm_cycle"), "-p", f"{len(names)}:{blocks}",
                            "-n", str(per_block), "-w", "200"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pids = [int(drv.stdout.readline()) for _ in names]
    tracers, rows = {}, {}
    try:
        for c in probes:
            tracers[c] = Tracer(c.removesuffix("_again"), cfg, pid=pids[names.index(c)],
                                cpus="0" if cpu != "0" else None)
            tracers[c].wait_ready()
        drv.stdin.write("go\n")
        drv.stdin.flush()
        for line in drv.stdout:
            kv = parse_kv(line)
            rows.setdefault(kv["block"], [None] * len(names))[kv["child"]] = kv["ns_per_op"]
        if drv.wait() != 0:
            raise RuntimeError("shm_cycle -p failed")
    finally:
        stopped = {c: t.stop() for c, t in tracers.items()}
        if drv.poll() is None:
            drv.kill()
            drv.wait()
    return [b for _, b in sorted(rows.items()) if None not in b], stopped


def bench_paired(cfg, rounds, blocks, per_block):
    """The shm cycle in one child per probe of PAIRED, plus one no probe
    looks at ("none"), taking turns on one CPU while each probe looks at its
    own child alone. Each round starts the probes in a rotated order (a
    tracepoint runs its programs in the order they were attached), and runs
    the same children without probes just before and after: "none" carries
    every probe's test for its process, so the gap, measured as a share of
    its cycle, is converted to a share of the untraced cycle."""
    names = PAIRED + ["none"]
    all_blocks, per_round = [], []
    for r in range(rounds):
        order = PAIRED[r % len(PAIRED):] + PAIRED[:r % len(PAIRED)]
        before, _ = run_paired(cfg, names, blocks // 2, per_block)
        got, stopped = run_paired(cfg, names, blocks, per_block, order)
        after, _ = run_paired(cfg, names, blocks // 2, per_block)
        all_blocks += got
        untraced = median([x for b in before + after for x in b])
        none = median([b[names.index("none")] for b in got])
        rec = {"order": order, "blocks": len(got), "lost": {c: s.get("lost") for c, s in stopped.items()},
               "median_ns_per_op": {n: median([b[i] for b in got]) for i, n in enumerate(names)},
               "untraced_ns_per_op": untraced, "none_over_untraced": none / untraced,
               "gap_of_none": median(paired_gaps(got, names, "ctime_record", "light_count")),
               "control_of_none": median(paired_gaps(got, names, "ctime_record", "ctime_record_again")),
               "gap_ctime_of_none": median(paired_gaps(got, names, "ctime_record_ctime", "light_count"))}
        rec["gap"] = rec["gap_of_none"] * rec["none_over_untraced"]
        rec["control"] = rec["control_of_none"] * rec["none_over_untraced"]
        rec["gap_ctime"] = rec["gap_ctime_of_none"] * rec["none_over_untraced"]
        per_round.append(rec)
        log(f"  round {r + 1}/{rounds} (probes started {', '.join(order)}): untraced {untraced:.0f} ns/op, "
            f"none {rec['none_over_untraced']:.3f}x; light_count - ctime_record {rec['gap']:.3f}, "
            f"control {rec['control']:.3f}, light_count - ctime_record_ctime {rec['gap_ctime']:.3f}, "
            f"lost {rec['lost']}")
    # Each round loads the programs afresh, and where their code lands moves
    # a round's gap by about 0.01 (the control shows it): the rounds, not the
    # blocks, are the independent samples of the gap.
    gap, gap_interval = mean_interval([x["gap"] for x in per_round])
    control, control_interval = mean_interval([x["control"] for x in per_round])
    gap_ctime, gap_ctime_interval = mean_interval([x["gap_ctime"] for x in per_round])
    return {"blocks": len(all_blocks), "cycles_per_block": per_block,
            "untraced_ns_per_op": median([x["untraced_ns_per_op"] for x in per_round]),
            "none_over_untraced": median([x["none_over_untraced"] for x in per_round]),
            "median_ns_per_op": {n: median([b[i] for b in all_blocks]) for i, n in enumerate(names)},
            "gap": gap, "gap_interval": gap_interval, "control": control, "control_interval": control_interval,
            "gap_ctime": gap_ctime, "gap_ctime_interval": gap_ctime_interval,
            "lost": sum(sum(v or 0 for v in x["lost"].values()) for x in per_round), "rounds": per_round}


# --- overhead in a VM guest --------------------------------------------------

# The workloads measured in a guest, and their iterations there: TCG runs a
# syscall some 10-20 times slower than this machine does.
VM_WORKLOADS = {"open_close": 20000, "shm": 5000, "memfd": 6000, "sysv": 4000}


def bench_vm(cfg, release, workloads):
    """The overhead section in a VM-layer guest of one Debian kernel (tests/vm/vm.sh):
    untraced, full and light, interleaved, by bench/vm/overhead.sh in the guest."""
    names = [w for w in workloads if w in VM_WORKLOADS] or list(VM_WORKLOADS)
    specs = [f"{w}={WORKLOADS[w][0]}:{max(SUBRUNS, int(VM_WORKLOADS[w] * cfg.scale))}" for w in names]
    script = os.path.join(HERE, "vm", "overhead.sh")
    files = [cfg.shmbpf, script] + [cfg.bin(WORKLOADS[w][0]) for w in names]
    cmd = ["bash", os.path.join(REPO, "tests", "vm", "vm.sh"), "--timeout", "7200"]
    for f in files:
        cmd += ["--file", f]
    cmd += [release, "sh", script, cfg.shmbpf, cfg.bench_bin, str(cfg.rounds), str(SUBRUNS)] + specs
    rows, kernel = {}, None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            line = line.strip()
            if line.startswith("kernel "):
                kernel = line.split(" ", 1)[1]
            elif line.startswith("result "):
                r = parse_kv(line)
                rows.setdefault(r["workload"], {}).setdefault(r["cond"], []).append(r)
                log(f"  {release} {r['workload']:10s} round {r['round']}/{cfg.rounds} {r['cond']:9s} "
                    f"{float(r['ns_per_op']):10.1f} ns/op  lost={r['lost']}")
            else:
                log(f"  {release}: {line}")
    if p.returncode != 0:
        raise RuntimeError(f"the {release} guest failed (status {p.returncode})")
    results = {w: summarize(per, ("untraced", "full", "light")) for w, per in rows.items()}
    return {"release": release, "kernel": kernel, "overhead": results}


# --- throughput and loss ----------------------------------------------------


def start_producers(cfg, prog, args, cpus=None):
    pin = ["taskset", "-c", cpus] if cpus else []
    return [subprocess.Popen(pin + [cfg.bin(prog)] + args, stdout=subprocess.PIPE, text=True) for _ in range(2)]


def finish_producers(procs):
    out = []
    for p in procs:
        o, _ = p.communicate()
        if p.returncode != 0:
            raise RuntimeError(f"producer failed with status {p.returncode}")
        out.append(parse_kv(o))
    return out


def bench_throughput(cfg, conds, seconds):
    """Two shm_cycle producers as fast as they go for a fixed time, default ring."""
    results = {}
    for c in conds:
        tracer = None
        if c != "untraced":
            tracer = Tracer(c, cfg)
            tracer.wait_ready()
            cpu0 = tracer.cpu_s()
        t0 = time.monotonic()
        outs = finish_producers(start_producers(cfg, "shm_cycle", ["-t", str(seconds), "-w", "0"]))
        wall = time.monotonic() - t0
        cycles = sum(o["ops"] for o in outs)
        rec = {"cycles": cycles, "cycles_per_s": cycles / wall, "produced_events": 3 * cycles}
        if tracer:
            time.sleep(0.5)  # let the consumer drain
            cpu1 = tracer.cpu_s()
            rec.update(tracer.stop())
            rec["consumer_cpu_s"] = cpu1 - cpu0
            ev = rec.get("events") or rec["produced_events"]
            rec["events_per_s"] = ev / wall
            rec["consumer_cpu_ns_per_event"] = rec["consumer_cpu_s"] * 1e9 / ev if ev else None
        results[c] = rec
        log(f"  throughput {c:9s} {rec['cycles_per_s']:10.0f} cycles/s"
            + (f"  events={rec.get('events')} lost={rec.get('lost')}"
               f" consumer={rec.get('consumer_cpu_ns_per_event') or 0:.0f} ns/event" if tracer else ""))
    return results


def bench_consumer(cfg, rounds, seconds):
    """trace's consumer against base's, side by side: both attached at once, sharing one CPU, with the
    two producers on the other. Both handle the same events at the same speed of the CPU (this VM's
    vCPUs change speed by half for seconds at a time), so their ratio holds from round to round where
    the throughput section's runs, one tracer after the other, spread by a third (finding 42)."""
    if not cfg.base_shmbpf:
        raise RuntimeError("the consumer section needs a base: --base-shmbpf, or bench/run --base-commit")
    two = (os.cpu_count() or 1) >= 2
    per_round = []
    for r in range(rounds):
        order = ["trace", "base"] if r % 2 == 0 else ["base", "trace"]
        tracers = {}
        try:
            for c in order:  # started in turns: the first attached is the first run per event
                tracers[c] = Tracer(c, cfg, cpus="1" if two else None)
                tracers[c].wait_ready()
            cpu0 = {c: t.cpu_s() for c, t in tracers.items()}
            outs = finish_producers(start_producers(cfg, "shm_cycle", ["-t", str(seconds), "-w", "0"],
                                                    cpus="0" if two else None))
            time.sleep(1.0)  # let both consumers drain
            cpu1 = {c: t.cpu_s() for c, t in tracers.items()}
        finally:
            stopped = {c: t.stop() for c, t in tracers.items()}
        produced = 3 * sum(o["ops"] for o in outs)
        ns = {c: (cpu1[c] - cpu0[c]) * 1e9 / produced if produced else None for c in tracers}
        lost = sum(x.get("lost") or 0 for x in stopped.values())
        ratio = ns["trace"] / ns["base"] if ns["trace"] and ns["base"] else None
        per_round.append({"first": order[0], "events": produced, "trace_ns": ns["trace"],
                          "base_ns": ns["base"], "ratio": ratio, "lost": lost})
        log(f"  round {r + 1}/{rounds} ({order[0]} attached first): {produced} events, trace "
            f"{fmt(ns['trace'], '.0f')} ns/event, base {fmt(ns['base'], '.0f')}, ratio {fmt(ratio, '.3f')}, "
            f"lost {lost}")
    return {"rounds": per_round, "trace_ns": median([x["trace_ns"] for x in per_round]),
            "base_ns": median([x["base_ns"] for x in per_round]),
            "ratio": median([x["ratio"] for x in per_round]), "lost": sum(x["lost"] for x in per_round)}


def bench_loss(cfg, per_producer):
    """A 4 KiB ring buffer: every record is delivered or counted as lost."""
    res = {}
    with tempfile.NamedTemporaryFile(suffix=".ndjson", delete=False) as f:
        path = f.name
    try:
        tracer = Tracer("trace", cfg, ring=4096, out=path)
        tracer.wait_ready()
        procs = start_producers(cfg, "memfd_cycle", ["-n", str(per_producer), "-w", "0"])
        pids = {p.pid for p in procs}
        finish_producers(procs)
        time.sleep(0.5)
        stop = tracer.stop()
        ours = others = 0
        with open(path) as f:
            for line in f:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("pid") in pids:
                    ours += 1
                else:
                    others += 1
        # Per producer: exec, then memfd_create + resize per cycle, then exit.
        expected = 2 * (2 * per_producer + 2)
        res["trace_4k_ring"] = {
            "produced_by_producers": expected,
            "delivered_from_producers": ours,
            "delivered_from_others": others,
            "lost": stop["lost"],
            "delivered_total": stop["events"],
            "exact": ours + stop["lost"] == expected,
        }
        log(f"  loss: produced={expected} delivered={ours} lost={stop['lost']} "
            f"others={others} exact={res['trace_4k_ring']['exact']}")
    finally:
        os.unlink(path)

    # The engine with the same tiny ring: its tables must converge anyway.
    glob_ = "/dev/shm/shmbpf-bench-keep-*"
    tracer = Tracer("engine", cfg, ring=4096, match=glob_)
    tracer.wait_ready()
    n = per_producer // 4
    procs = start_producers(cfg, "shm_cycle", ["-k", "-n", str(n), "-w", "0"])
    pids = [p.pid for p in procs]
    finish_producers(procs)

    def converge(want, timeout=40.0):
        """Polls the engine until its table has `want` files; (report, seconds)."""
        t0 = time.monotonic()
        while True:
            time.sleep(0.25)
            r = tracer.report()
            if r["matching"] == want or time.monotonic() - t0 > timeout:
                return r, time.monotonic() - t0

    after_create, create_s = converge(2 * n)
    for pid in pids:
        for i in range(n):
            try:
                os.unlink(f"/dev/shm/shmbpf-bench-keep-{pid}-{i}")
            except FileNotFoundError:
                pass
    after_unlink, unlink_s = converge(0)
    tracer.stop()
    res["engine_4k_ring"] = {
        "created": 2 * n,
        "tables_after_create": after_create["matching"],
        "lost_after_create": after_create["lost"],
        "loss_reconciles": after_create["loss_reconciles"],
        "seconds_to_create": round(create_s, 2),
        "tables_after_unlink": after_unlink["matching"],
        "seconds_to_unlink": round(unlink_s, 2),
        "recovered": after_create["matching"] == 2 * n and after_unlink["matching"] == 0,
    }
    log(f"  recovery: created={2 * n} engine sees {after_create['matching']} after "
        f"{create_s:.1f} s (lost {after_create['lost']}, {after_create['loss_reconciles']} loss "
        f"reconciles), after unlink {after_unlink['matching']} after {unlink_s:.1f} s")
    return res


# --- BPF cost per hit -------------------------------------------------------


def prog_ids(pid):
    """Ids of the BPF programs a process holds (program and link fds)."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except (OSError, ValueError):
            continue
    return ids


def prog_stats(pid):
    """{prog id: (name, run_cnt, run_time_ns)} of the programs a process holds."""
    ids = prog_ids(pid)
    out = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                                    text=True, check=True).stdout)
    attach = {}
    perf = subprocess.run(["bpftool", "-j", "perf", "show"], capture_output=True, text=True).stdout
    for p in json.loads(perf or "[]"):
        if p.get("pid") == pid and "tracepoint" in p:
            attach[p["prog_id"]] = p["tracepoint"]
    res = {}
    for p in out:
        if p["id"] in ids:
            # Name by attach point: bpftrace's own program names are opaque.
            name = attach.get(p["id"]) or p.get("name", "?")
            res[p["id"]] = (name, p.get("run_cnt", 0), p.get("run_time_ns", 0))
    return res


def bench_bpf_cost(cfg, workloads, kinds):
    """run_time_ns / run_cnt per program while each workload runs once."""
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        prev = f.read().strip()
    results = {}
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        for kind in kinds:
            tracer = Tracer(kind, cfg)
            tracer.wait_ready()
            # bpftrace's programs belong to the bpftrace process.
            per = {}
            for w in workloads:
                s0 = prog_stats(tracer.p.pid)
                res = run_workload(cfg, w)
                s1 = prog_stats(tracer.p.pid)
                progs = {}
                total_ns = 0
                for pid_, (name, cnt, ns) in s1.items():
                    c0, n0 = s0.get(pid_, (name, 0, 0))[1:]
                    dc, dn = cnt - c0, ns - n0
                    if dc > 0:
                        key = name if name not in progs else f"{name}#{pid_}"
                        progs[key] = {"runs": dc, "ns_per_run": dn / dc}
                        total_ns += dn
                per[w] = {"programs": progs, "bpf_ns_per_op": total_ns / res["ops"],
                          "ns_per_op": res["ns_per_op"]}
                log(f"  bpf cost {kind:8s} {w:10s} {total_ns / res['ops']:8.1f} BPF ns per op")
            tracer.stop()
            results[kind] = per
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(prev)
    return results


# --- memory, engine CPU, top ------------------------------------------------


def bench_memory(cfg, sizes):
    res = {}
    for n in sizes:
        r = subprocess.run([cfg.bin("engine_memory"), str(n)], capture_output=True, text=True, check=True)
        res[str(n)] = parse_kv(r.stdout)
        log(f"  memory {n:8d} segments: {res[str(n)]['bytes_per_segment_held']:.0f} B/segment held, "
            f"{res[str(n)]['bytes_per_segment_orphaned']:.0f} B/segment orphaned")
    return res


def bench_engine_cpu(cfg):
    if not cfg.has("engine_bench"):
        return None
    r = subprocess.run([cfg.bin("engine_bench"), "--benchmark_format=json", "--benchmark_min_time=0.5"],
                       capture_output=True, text=True, check=True)
    res = {}
    for b in json.loads(r.stdout)["benchmarks"]:
        res[b["name"]] = {"ns_per_event": 1e9 / b["items_per_second"]}
        log(f"  engine {b['name']:28s} {res[b['name']]['ns_per_event']:8.0f} ns/event")
    return res


def bench_top(cfg, n):
    r = subprocess.run([cfg.bin("top_render"), str(n)], capture_output=True, text=True, check=True)
    res = {}
    for line in r.stdout.splitlines():
        kv = parse_kv(line)
        if "view" in kv:
            res[kv["view"]] = kv
            log(f"  top {kv['view']:10s} snapshot {kv['snapshot_ms']:.1f} ms + frame {kv['frame_ms']:.1f} ms")
    return res


# --- serve with many segments ---------------------------------------------


def rss_fields(pid):
    """VmRSS and its parts: RssAnon (the heap, stacks) and RssFile (mapped files, and the BPF maps the
    process maps: the kernel's name table, the ring buffer's pages once read)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) * 1024
    return out


def thread_cpu_s(pid):
    """utime + stime of each of a process's threads, by thread name."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
            name = head.split("(", 1)[1]
            fields = rest.split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
        out[f"{name}/{tid}"] = cpu
    return out


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path, timeout=30):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def segments_in_metrics(text, mountpoint=None):
    """Sum of shmbpf_segments (on one mountpoint, or all)."""
    n = 0
    for line in text.splitlines():
        if not line.startswith("shmbpf_segments{"):
            continue
        if mountpoint and f'mountpoint="{mountpoint}"' not in line:
            continue
        n += int(float(line.rsplit(" ", 1)[1]))
    return n


class Serve:
    """shmbpf serve on a free loopback port, its state and socket in a directory of its own."""

    def __init__(self, cfg):
        self.port = free_port()
        self.errf = tempfile.TemporaryFile(mode="w+")
        self.t0 = time.monotonic()
        # As deployed (state kept, socket served), in directories of its own.
        self.dir = tempfile.mkdtemp(prefix="shmbpf-bench-serve-state-")
        self.p = subprocess.Popen([cfg.shmbpf, "serve", "--state-dir", self.dir, "--socket", f"{self.dir}/s.sock",
                                   "--listen", f"127.0.0.1:{self.port}"],
                                  stdout=subprocess.DEVNULL, stderr=self.errf)

    def wait_ready(self, timeout=300):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.p.poll() is not None:
                self.errf.seek(0)
                raise RuntimeError(f"shmbpf serve exited: {self.errf.read()}")
            try:
                if http_get(self.port, "/readyz", timeout=5)[0] == 200:
                    self.ready_s = time.monotonic() - self.t0
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"shmbpf serve not ready after {timeout}s")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def serve_round(cfg, scrapes, idle_s, mountpoint):
    """One daemon: time to ready, scrape latencies, idle CPU, RSS."""
    d = Serve(cfg)
    try:
        d.wait_ready()
        # The first scan's leftovers (jemalloc's dirty pages, the first statfs
        # round) settle before anything is measured.
        time.sleep(2)
        lat = []
        body = b""
        for _ in range(scrapes):
            t0 = time.monotonic()
            status, body = http_get(d.port, "/metrics")
            lat.append((time.monotonic() - t0) * 1000)
            if status != 200:
                raise RuntimeError(f"/metrics answered {status}")
        text = body.decode()
        # Idle: nothing scrapes, nothing changes shared memory on purpose.
        threads0, cpu0, t0 = thread_cpu_s(d.p.pid), proc_cpu_s(d.p.pid), time.monotonic()
        time.sleep(idle_s)
        threads1, cpu1, wall = thread_cpu_s(d.p.pid), proc_cpu_s(d.p.pid), time.monotonic() - t0
        rss = rss_fields(d.p.pid)
        lat.sort()
        return {"ready_s": d.ready_s, "scrape_ms_median": median(lat),
                "scrape_ms_p95": lat[min(len(lat) - 1, int(len(lat) * 0.95))],
                "scrape_bytes": len(body), "segments": segments_in_metrics(text),
                "segments_on_mount": segments_in_metrics(text, mountpoint),
                "idle_cpu_pct": 100 * (cpu1 - cpu0) / wall,
                "idle_cpu_pct_by_thread": {k: 100 * (v - threads0.get(k, 0)) / wall for k, v in threads1.items()},
                "rss_bytes": rss["VmRSS"], "rss_anon_bytes": rss["RssAnon"], "rss_file_bytes": rss["RssFile"]}
    finally:
        d.stop()


def make_files(where, n):
    page = b"\0" * 4096
    for i in range(n):
        fd = os.open(f"{where}/seg-{i:07d}", os.O_CREAT | os.O_WRONLY, 0o600)
        if i % 2:
            os.write(fd, page)
        os.close(fd)


def bench_serve(cfg, nfiles, scrapes, idle_s):
    where = tempfile.mkdtemp(prefix="shmbpf-bench-serve-")
    # Room for the files' pages and inodes, and nothing else on it.
    size_mb = 64 + nfiles * 4096 // (1 << 20)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,nr_inodes={nfiles + 1000}",
                    "shmbpf-bench", where], check=True)
    try:
        # The baseline: the same daemon with the mount empty (the host's own
        # segments are in both).
        empty = []
        for r in range(min(cfg.rounds, 2)):
            empty.append(serve_round(cfg, max(3, scrapes // 10), min(idle_s, 5), where))
        log(f"  empty mount: RSS {median([e['rss_bytes'] for e in empty]) / 1e6:.1f} MB, "
            f"{median([e['segments'] for e in empty])} segments on the host")
        log(f"  creating {nfiles} files in {where}")
        t0 = time.monotonic()
        make_files(where, nfiles)
        log(f"  created in {time.monotonic() - t0:.1f} s")
        rounds = []
        for r in range(cfg.rounds):
            x = serve_round(cfg, scrapes, idle_s, where)
            rounds.append(x)
            busiest = sorted(x["idle_cpu_pct_by_thread"].items(), key=lambda kv: -kv[1])[:2]
            log(f"  round {r + 1}: ready {x['ready_s']:.1f} s, scrape median {x['scrape_ms_median']:.1f} ms "
                f"p95 {x['scrape_ms_p95']:.1f} ms, idle CPU {x['idle_cpu_pct']:.2f}% "
                f"({', '.join(f'{k} {v:.2f}%' for k, v in busiest)}), RSS {x['rss_bytes'] / 1e6:.1f} MB, "
                f"{x['segments_on_mount']} segments on the mount")
        rss_empty = median([e["rss_bytes"] for e in empty])
        seg_empty = median([e["segments"] for e in empty])
        res = {"files": nfiles, "rounds": rounds, "empty": empty, "rss_empty_bytes": rss_empty}
        for k in ("ready_s", "scrape_ms_median", "scrape_ms_p95", "idle_cpu_pct", "rss_bytes", "rss_anon_bytes",
                  "rss_file_bytes", "segments", "segments_on_mount", "scrape_bytes"):
            res[k] = median([x[k] for x in rounds])
        added = max(1, res["segments"] - seg_empty)
        res["bytes_per_segment"] = (res["rss_bytes"] - rss_empty) / added
        # The heap apart from the kernel's name table (sized at start from the files on tmpfs), which the
        # daemon maps and RssFile counts.
        for part in ("anon", "file"):
            res[f"{part}_bytes_per_segment"] = (res[f"rss_{part}_bytes"] -
                                                median([e[f"rss_{part}_bytes"] for e in empty])) / added
        log(f"  serve: scrape {res['scrape_ms_median']:.1f} ms (p95 {res['scrape_ms_p95']:.1f}), idle CPU "
            f"{res['idle_cpu_pct']:.2f}%, {res['bytes_per_segment']:.0f} B/segment (heap "
            f"{res['anon_bytes_per_segment']:.0f}, mapped {res['file_bytes_per_segment']:.0f})")
        return res
    finally:
        subprocess.run(["umount", "-l", where], check=False)
        os.rmdir(where)


def bench_serve_render(cfg, n):
    r = subprocess.run([cfg.bin("serve_render"), str(n)], capture_output=True, text=True, check=True)
    res = {}
    for line in r.stdout.splitlines():
        kv = parse_kv(line)
        if "request" in kv:
            res[kv["request"]] = kv
            log(f"  {kv['request']:12s} lock held at most {kv['lock_ms']:.1f} ms, copy {kv['copy_ms']:.1f} ms"
                f" + formatting {kv['format_ms']:.1f} ms")
    return res


# --- start-up with many files ----------------------------------------------


def time_until_output(cmd, shell=False):
    """Seconds from start until the first byte on stdout; the process is then stopped."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, shell=shell)
    p.stdout.read(1)
    t = time.monotonic() - t0
    p.send_signal(signal.SIGINT)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    return t


def time_to_exit(cmd, shell=False):
    t0 = time.monotonic()
    subprocess.run(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - t0


def bench_startup(cfg, nfiles):
    prefix = "/dev/shm/shmbpf-bench-start-"
    log(f"  creating {nfiles} files in /dev/shm")
    for i in range(nfiles):
        os.close(os.open(f"{prefix}{i:07d}", os.O_CREAT | os.O_WRONLY, 0o600))
    try:
        has_top = subprocess.run([cfg.shmbpf, "top", "--help"], capture_output=True).returncode == 0
        cmds = {
            "ls | wc -l": lambda: time_to_exit("ls /dev/shm | wc -l", shell=True),
            "shmbpf ls --json": lambda: time_to_exit(f"{cfg.shmbpf} ls --json > /dev/null", shell=True),
            "shmbpf trace (header)": lambda: time_until_output([cfg.shmbpf, "trace"]),
        }
        if has_top:
            cmds["shmbpf top -b -n 1 (first frame)"] = lambda: time_until_output(
                [cfg.shmbpf, "top", "-b", "-n", "1"])
        rows = {k: [] for k in cmds}
        names = list(cmds)
        for r in range(cfg.rounds):
            for k in names[r % len(names):] + names[: r % len(names)]:
                rows[k].append(cmds[k]())
        base = median(rows["ls | wc -l"])
        res = {}
        for k, v in rows.items():
            res[k] = {"median_s": median(v), "ratio": median(v) / base, "runs": v}
            log(f"  start-up {k:34s} {median(v) * 1000:8.1f} ms  {median(v) / base:5.1f}x")
        return res
    finally:
        for i in range(nfiles):
            try:
                os.unlink(f"{prefix}{i:07d}")
            except FileNotFoundError:
                pass


# --- audit of a host with many containers ----------------------------------


def run_measured(cmd):
    """Wall seconds, CPU seconds (user + system), peak RSS bytes and stdout of a command."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, out


def bench_audit(cfg, containers, segments):
    """shmbpf audit --json (and shmbpf ls --json, the same scan without the
    rules) on a host of simulated containers (bench/audit/audit_fleet)."""
    errf = tempfile.TemporaryFile(mode="w+")
    fleet = subprocess.Popen([cfg.bin("audit_fleet"), str(containers), str(segments)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, text=True)
    try:
        line = fleet.stdout.readline()
        if not line.startswith("ready"):
            errf.seek(0)
            raise RuntimeError(f"audit_fleet did not start: {line} {errf.read()}")
        info = parse_kv(line)
        log(f"  {info['containers']} containers, {info['files']} files and {info['sysv']} SysV segments "
            f"set up in {info['setup_s']} s")
        cmds = {"shmbpf audit --json": [cfg.shmbpf, "audit", "--json", "--fail-on", "none"],
                "shmbpf ls --json": [cfg.shmbpf, "ls", "--json"]}
        rows = {k: [] for k in cmds}
        outs = {}
        names = list(cmds)
        for r in range(cfg.rounds):
            for k in names[r % len(names):] + names[: r % len(names)]:
                wall, cpu, rss, outs[k] = run_measured(cmds[k])
                rows[k].append({"wall_s": wall, "cpu_s": cpu, "rss_bytes": rss})
        # What they saw: every simulated container's segments, and the
        # world-writable file of every tenth container.
        listed = json.loads(outs["shmbpf ls --json"])["segments"]
        seen = sum(1 for s in listed if s.get("container")
                   and (str(s.get("path") or "").startswith("/dev/shm/bench-") or s.get("kind") == "sysv"))
        findings = json.loads(outs["shmbpf audit --json"])["findings"]
        fleet_findings = sum(1 for f in findings
                             if any(p.startswith("/dev/shm/bench-") for p in f["evidence"].get("paths", [])))
        res = {"containers": info["containers"], "segments": info["segments"], "setup_s": info["setup_s"],
               "segments_seen": seen, "findings": len(findings), "fleet_findings": fleet_findings}
        for k, v in rows.items():
            res[k] = {"wall_s": median([x["wall_s"] for x in v]), "cpu_s": median([x["cpu_s"] for x in v]),
                      "rss_bytes": median([x["rss_bytes"] for x in v]), "runs": v}
            log(f"  {k:22s} {res[k]['wall_s']:6.2f} s wall, {res[k]['cpu_s']:6.2f} s CPU, "
                f"{res[k]['rss_bytes'] / 1e6:6.1f} MB")
        log(f"  ls saw {seen} of the containers' segments; audit: {len(findings)} findings, "
            f"{fleet_findings} about the containers' world-writable files")
        return res
    finally:
        fleet.stdin.close()
        try:
            fleet.wait(timeout=300)
        except subprocess.TimeoutExpired:
            fleet.kill()
            fleet.wait()


# --- report -----------------------------------------------------------------


def fmt(x, spec):
    return "n/a" if x is None else format(x, spec)


def md_table(header, align, rows):
    """Lines of a markdown table, after an empty line: the header cells, one
    alignment per column ("l" or "r"), and the rows' cells."""
    line = lambda cells: "| " + " | ".join(str(c) for c in cells) + " |"
    return (["", line(header), "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
            + [line(r) for r in rows])


def ratio_table(section, first, with_targets, titles=None):
    """An overhead-style section as table lines: per workload, the untraced
    ns/op and every other condition's ratio (and losses), with the issue's
    target when asked."""
    titles = {**WORKLOAD_TITLES, **(titles or {})}
    conds = [c for c in next(iter(section.values())).keys() if c != "untraced"]
    rows = []
    for w, s in section.items():
        t = TARGETS.get(w)
        rows.append([titles[w], fmt(s["untraced"]["median_ns_per_op"], ".0f")]
                    + [fmt(s[c]["ratio"], ".2f") + ("" if not s[c].get("lost") else f" ({s[c]['lost']} lost)")
                       for c in conds]
                    + (["≤ %.2f×" % t if t else "—"] if with_targets else []))
    return md_table([first, "untraced ns/op"] + [f"{c} ×" for c in conds] + (["target"] if with_targets else []),
                    "lr" + "r" * len(conds) + ("l" if with_targets else ""), rows)


def report(res):
    lines = ["", "## Results"]
    for name, first, with_targets in (("overhead", "workload", True), ("floor", "floor", False)):
        sec = res.get(name)
        if sec:
            lines += ratio_table(sec, first, with_targets)
    pa = res.get("paired")
    if pa:
        lines += md_table(["paired shm cycle", "median ns/op"], "lr",
                          [["untraced (the same children, no probe loaded)", fmt(pa["untraced_ns_per_op"], ".0f")]]
                          + [[n, fmt(v, ".0f")] for n, v in pa["median_ns_per_op"].items()])
        lo, hi = pa["gap_interval"]
        clo, chi = pa["control_interval"]
        tlo, thi = pa["gap_ctime_interval"]
        lines += ["", f"{len(pa['rounds'])} rounds of {pa['blocks'] // max(1, len(pa['rounds']))} blocks of "
                  f"{pa['cycles_per_block']} cycles per child; \"none\" runs {pa['none_over_untraced']:.3f}x the "
                  "untraced cycle (every probe's test for its process). Per block, as a share of the untraced "
                  f"cycle, mean of the rounds' medians (95% interval): light_count - ctime_record {pa['gap']:.3f} "
                  f"({fmt(lo, '.3f')} to {fmt(hi, '.3f')}); the control, ctime_record_again - ctime_record, "
                  f"{pa['control']:.3f} ({fmt(clo, '.3f')} to {fmt(chi, '.3f')}); against the floor timed by "
                  f"the ctime as the light set is, light_count - ctime_record_ctime {pa['gap_ctime']:.3f} "
                  f"({fmt(tlo, '.3f')} to {fmt(thi, '.3f')}); lost {pa['lost']}"]
    tp = res.get("throughput")
    if tp:
        lines += md_table(["throughput (2 producers)", "cycles/s", "events/s", "lost", "consumer ns/event"], "lrrrr",
                          [[c, f"{r['cycles_per_s']:.0f}", fmt(r.get("events_per_s"), ".0f"), fmt(r.get("lost"), "d"),
                            fmt(r.get("consumer_cpu_ns_per_event"), ".0f")] for c, r in tp.items()])
    co = res.get("consumer")
    if co:
        lines += ["", f"consumer side by side (both attached at once), {len(co['rounds'])} rounds, trace over "
                  "base, CPU per event: "
                  f"median ratio {fmt(co['ratio'], '.3f')}, trace {fmt(co['trace_ns'], '.0f')} ns, "
                  f"base {fmt(co['base_ns'], '.0f')} ns; rounds "
                  + ", ".join(fmt(x["ratio"], ".2f") for x in co["rounds"]) + f"; lost {co['lost']}"]
    ls = res.get("loss")
    if ls:
        t = ls.get("trace_4k_ring")
        if t:
            lines += ["", f"4 KiB ring: produced {t['produced_by_producers']}, delivered "
                      f"{t['delivered_from_producers']}, lost {t['lost']}, exact: {t['exact']}"]
        e = ls.get("engine_4k_ring")
        if e:
            lines += [f"engine, 4 KiB ring: created {e['created']}, tables {e['tables_after_create']} "
                      f"after create ({e['seconds_to_create']} s), {e['tables_after_unlink']} after "
                      f"unlink ({e['seconds_to_unlink']} s), recovered: {e['recovered']}"]
    bc = res.get("bpf_cost")
    if bc:
        rows = []
        for kind, per in bc.items():
            for w, r in per.items():
                progs = ", ".join(f"{k} {v['ns_per_run']:.0f}×{v['runs']}"
                                  for k, v in sorted(r["programs"].items(), key=lambda kv: -kv[1]["runs"])[:6])
                rows.append([kind, w, f"{r['bpf_ns_per_op']:.0f}", progs])
        lines += md_table(["BPF cost", "workload", "BPF ns per op", "per program (ns/run × runs)"], "llrl", rows)
    mem = res.get("memory")
    if mem:
        lines += md_table(["segments", "bytes/segment (held)", "bytes/segment (orphaned)"], "rrr",
                          [[n, f"{r['bytes_per_segment_held']:.0f}", f"{r['bytes_per_segment_orphaned']:.0f}"]
                           for n, r in mem.items()])
    st = res.get("startup")
    if st:
        lines += md_table(["start-up (100,000 files)", "median ms", "× ls \\| wc -l"], "lrr",
                          [[k.replace("|", "\\|"), f"{r['median_s'] * 1000:.1f}", f"{r['ratio']:.2f}"]
                           for k, r in st.items()])
    top = res.get("top")
    if top:
        lines += md_table(["top view (100,000 segments)", "snapshot ms", "frame ms", "total ms"], "lrrr",
                          [[v, f"{r['snapshot_ms']:.1f}", f"{r['frame_ms']:.1f}", f"{r['total_ms']:.1f}"]
                           for v, r in top.items()])
    sr = res.get("serve_render")
    if sr:
        lines += md_table(["serve request (engine, 100,000 segments)", "longest lock hold ms", "copy ms",
                           "formatting ms", "bytes"], "lrrrr",
                          [[k, f"{r['lock_ms']:.1f}", f"{r['copy_ms']:.1f}", f"{r['format_ms']:.1f}", r["bytes"]]
                           for k, r in sr.items()])
    sv = res.get("serve")
    if sv:
        lines += md_table(["shmbpf serve", "measured", "target"], "lrl", [
            ["segments on the bench mount", sv["segments_on_mount"], ""],
            ["/metrics scrape, median (p95) ms", f"{sv['scrape_ms_median']:.1f} ({sv['scrape_ms_p95']:.1f})", "≤ 50"],
            ["idle CPU, % of one CPU", f"{sv['idle_cpu_pct']:.2f}", "≤ 0.5"],
            ["RSS MB (empty mount)", f"{sv['rss_bytes'] / 1e6:.1f} ({sv['rss_empty_bytes'] / 1e6:.1f})", ""],
            ["bytes per segment", f"{sv['bytes_per_segment']:.0f}", "≤ 300"],
            ["of which heap (RssAnon), mapped (RssFile)",
             f"{sv.get('anon_bytes_per_segment', 0):.0f}, {sv.get('file_bytes_per_segment', 0):.0f}", ""],
            ["start to /readyz, s", f"{sv['ready_s']:.1f}", ""]])
    au = res.get("audit")
    if au:
        lines += md_table([f"{au['containers']} containers, {au['segments']} segments", "wall s", "CPU s",
                           "peak RSS MB"], "lrrr",
                          [[k, f"{au[k]['wall_s']:.2f}", f"{au[k]['cpu_s']:.2f}", f"{au[k]['rss_bytes'] / 1e6:.1f}"]
                           for k in ("shmbpf audit --json", "shmbpf ls --json")])
    for v in res.get("vm", []):
        lines += ["", f"In a {v['release']} guest (kernel {v['kernel']}, TCG):"]
        lines += ratio_table(v["overhead"], "workload", False,
                             {"open_close": "open+close on ramfs (unrelated)"})
    ec = res.get("engine_cpu")
    if ec:
        lines += md_table(["engine benchmark", "ns/event"], "lr",
                          [[k, f"{r['ns_per_event']:.0f}"] for k, r in ec.items()])
    return "\n".join(lines) + "\n"


def selfcheck():
    assert median([3, 1, 2]) == 2
    assert parse_kv("ops=10 ns_per_op=2.5 x=y\n") == {"ops": 10, "ns_per_op": 2.5, "x": "y"}
    rounds = {"untraced": [{"ns_per_op": 100.0, "lost": 0}, {"ns_per_op": 300.0, "lost": 0}],
              "light": [{"ns_per_op": 250.0, "lost": 2}, {"ns_per_op": 230.0, "lost": None}]}
    s = summarize(rounds, ["untraced", "light", "full"])
    assert s["light"]["median_ns_per_op"] == 240.0 and s["light"]["ratio"] == 1.2 and s["light"]["lost"] == 2, s
    assert s["full"]["median_ns_per_op"] is None and s["full"]["ratio"] is None and s["full"]["runs"] == [], s
    report({})
    names = PAIRED + ["none"]
    blocks = [[100.0, 105.0, 101.0, 97.0, 100.0], [200.0, 208.0, 200.0, 196.0, 200.0],
              [100.0, 106.0, 99.0, 96.0, 100.0]]
    assert paired_gaps(blocks, names, "ctime_record", "light_count") == [0.05, 0.04, 0.06]
    assert paired_gaps(blocks, names, "ctime_record", "ctime_record_again") == [0.01, 0.0, -0.01]
    assert paired_gaps(blocks, names, "ctime_record_ctime", "light_count") == [0.08, 0.06, 0.1]
    paired = report({"paired": {"blocks": 6, "cycles_per_block": 100, "lost": 0, "untraced_ns_per_op": 80.0,
                                "none_over_untraced": 1.25,
                                "median_ns_per_op": dict(zip(names, [100.0, 106.0, 100.0, 97.0, 100.0])),
                                "gap": 0.05, "gap_interval": (0.04, 0.06), "control": 0.0,
                                "control_interval": (-0.01, 0.01), "gap_ctime": 0.08,
                                "gap_ctime_interval": (0.07, 0.09), "rounds": [{}, {}]}})
    assert "| untraced (the same children, no probe loaded) | 80 |" in paired, paired
    assert "| light_count | 106 |" in paired and "2 rounds of 3 blocks" in paired, paired
    assert "light_count - ctime_record 0.050 (0.040 to 0.060)" in paired and "1.250x" in paired, paired
    assert "light_count - ctime_record_ctime 0.080 (0.070 to 0.090)" in paired, paired
    m, (lo, hi) = mean_interval([0.04, 0.06])
    assert abs(m - 0.05) < 1e-12 and lo < 0.04 and hi > 0.06, (m, lo, hi)
    _, (lo, hi) = mean_interval([0.0, 1.0] * 10)  # 19 degrees of freedom: t = 2.09
    assert abs((hi - lo) / 2 - 2.09 * statistics.stdev([0.0, 1.0] * 10) / 20 ** 0.5) < 1e-12, (lo, hi)
    floor = report({"floor": {"shm": {"untraced": {"median_ns_per_op": 8000.0, "ratio": 1.0},
                                      "floor_record": {"median_ns_per_op": 9360.0, "ratio": 1.17}}}})
    assert "| POSIX shm cycle | 8000 | 1.17 |" in floor, floor
    text = ('shmbpf_segments{mountpoint="/a",state="linked"} 3\n'
            'shmbpf_segment_bytes{mountpoint="/a",state="linked"} 4096\n'
            'shmbpf_segments{mountpoint="/dev/shm",state="unlinked"} 2\n')
    assert segments_in_metrics(text) == 5 and segments_in_metrics(text, "/a") == 3
    serve = report({"serve": {"segments_on_mount": 100000, "scrape_ms_median": 12.34, "scrape_ms_p95": 20.0,
                              "idle_cpu_pct": 0.1, "rss_bytes": 50e6, "rss_empty_bytes": 20e6,
                              "bytes_per_segment": 300.0, "anon_bytes_per_segment": 210.0,
                              "file_bytes_per_segment": 90.0, "ready_s": 3.0}})
    assert "| /metrics scrape, median (p95) ms | 12.3 (20.0) | ≤ 50 |" in serve, serve
    assert "| of which heap (RssAnon), mapped (RssFile) | 210, 90 |  |" in serve, serve
    run = {"wall_s": 1.5, "cpu_s": 1.2, "rss_bytes": 80e6}
    audit = report({"audit": {"containers": 200, "segments": 100000, "shmbpf audit --json": run,
                              "shmbpf ls --json": run}})
    assert "| shmbpf audit --json | 1.50 | 1.20 | 80.0 |" in audit, audit
    print("bench.py selfcheck ok")


SECTIONS = ["overhead", "floor", "paired", "throughput", "loss", "bpf_cost", "memory", "engine_cpu", "startup", "top",
            "serve", "audit", "vm", "consumer"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--only", action="append", choices=SECTIONS, help="run only these sections")
    ap.add_argument("--workload", action="append", choices=list(WORKLOADS), help="only these workloads")
    ap.add_argument("--condition", action="append",
                    choices=["untraced", "trace", "light", "base", *ENGINES, "bpftrace", *FLOOR_MODES])
    ap.add_argument("--shmbpf", help="the shmbpf binary to measure (default: BUILD_DIR/shmbpf)")
    ap.add_argument("--base-shmbpf", help="another shmbpf binary, measured as condition 'base'")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply workload iterations")
    ap.add_argument("--seconds", type=float, default=5.0, help="throughput run length")
    ap.add_argument("--files", type=int, default=100000, help="files for the start-up test")
    ap.add_argument("--segments", type=int, default=100000, help="segments for the top frame")
    ap.add_argument("--containers", type=int, default=200, help="simulated containers for the audit")
    ap.add_argument("--audit-segments", type=int, default=100000, help="segments they hold, for the audit")
    ap.add_argument("--scrapes", type=int, default=50, help="scrapes of /metrics per serve round")
    # Long enough to hold a rescan: with 100,000 files the live loop rescans
    # every 2-3 minutes (its period grows with a rescan's cost), not 30 s.
    ap.add_argument("--idle-seconds", type=float, default=240.0, help="serve's idle CPU measurement")
    ap.add_argument("--vm", action="append", choices=["bullseye", "bookworm", "trixie"],
                    help="the guests of the vm section (default: bookworm and trixie)")
    ap.add_argument("--quick", action="store_true", help="2 rounds, smaller runs (development)")
    ap.add_argument("--output", help="write all results as JSON here")
    ap.add_argument("--selfcheck", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.selfcheck:
        return selfcheck()
    if args.quick:
        args.rounds, args.scale, args.seconds = 2, 0.3, 2.0
    if os.geteuid() != 0:
        sys.exit("bench: run as root (sudo bench/run): the tracers load BPF programs")
    cfg = Config(args)
    sections = args.only or SECTIONS
    workloads = args.workload or list(WORKLOADS)
    conds = conditions(cfg, args.condition)
    la = loadavg()
    if la > 0.5:
        log(f"bench: warning: load average is {la:.2f}; numbers taken on a busy machine are noise")
    res = {"meta": {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "kernel": os.uname().release,
                    "cpus": os.cpu_count(), "load_at_start": la, "rounds": cfg.rounds, "scale": cfg.scale}}
    if "overhead" in sections:
        log("overhead (ns per operation, interleaved rounds):")
        res["overhead"] = bench_overhead(cfg, workloads, conds)
    if "floor" in sections:
        log("floor (programs that do nothing, count, or emit one small record, on the shm cycle's "
            "syscall hooks and on the inode timestamp hooks):")
        conds_floor = ["untraced", *FLOOR_MODES, "trace", "light"] + (["base"] if cfg.base_shmbpf else [])
        # The engines (what top and serve run, without a screen) when asked for.
        conds_floor += [c for c in ENGINES if args.condition and c in args.condition]
        conds_floor = [c for c in conds_floor if not args.condition or c in args.condition]
        floor_workloads = args.workload or FLOOR_WORKLOADS
        res["floor"] = bench_overhead(cfg, floor_workloads, conds_floor)
    if "paired" in sections:
        log("paired (the shm cycle in one child per probe, taking turns on one CPU; each probe looks at "
            "its own child alone):")
        res["paired"] = bench_paired(cfg, cfg.rounds, max(20, int(600 * cfg.scale)), 100)
    if "throughput" in sections:
        log("throughput (two producers, default ring buffer):")
        res["throughput"] = bench_throughput(cfg, [c for c in conds], args.seconds)
    if "consumer" in (args.only or []):
        log("consumer, side by side with base (both attached at once on one CPU, two producers on the other):")
        res["consumer"] = bench_consumer(cfg, cfg.rounds, args.seconds)
    if "loss" in sections:
        log("loss (4 KiB ring buffer):")
        res["loss"] = bench_loss(cfg, int(20000 * cfg.scale) or 100)
    if "bpf_cost" in sections:
        log("BPF cost per hit (kernel.bpf_stats_enabled=1):")
        res["bpf_cost"] = bench_bpf_cost(cfg, workloads,
                                         [c for c in conds if c in ("trace", "light", "base", "bpftrace")])
    if "memory" in sections:
        log("engine memory per segment:")
        res["memory"] = bench_memory(cfg, [100000, 1000000])
    if "engine_cpu" in sections:
        log("engine CPU per event (Google Benchmark):")
        res["engine_cpu"] = bench_engine_cpu(cfg)
    if "startup" in sections:
        log(f"start-up with {args.files} files in /dev/shm:")
        res["startup"] = bench_startup(cfg, args.files)
    if "top" in sections:
        log(f"top frame with {args.segments} segments:")
        res["top"] = bench_top(cfg, args.segments)
    if "serve" in sections:
        log(f"serve with {args.segments} segments: one request in the engine, then the daemon:")
        res["serve_render"] = bench_serve_render(cfg, args.segments)
        res["serve"] = bench_serve(cfg, args.segments, args.scrapes, args.idle_seconds)
    if "audit" in sections:
        log(f"audit of {args.containers} simulated containers holding {args.audit_segments} segments:")
        res["audit"] = bench_audit(cfg, args.containers, args.audit_segments)
    if "vm" in sections and (args.only or args.vm):
        res["vm"] = []
        for release in args.vm or ["bookworm", "trixie"]:
            log(f"overhead in a {release} guest (untraced, full and light hook sets, interleaved rounds):")
            res["vm"].append(bench_vm(cfg, release, args.workload or []))
    res["meta"]["load_at_end"] = loadavg()
    out = args.output or os.path.join(cfg.build, "bench", "results.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(report(res))
    log(f"bench: all results in {out}")


if __name__ == "__main__":
    main()
