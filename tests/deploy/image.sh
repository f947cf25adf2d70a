#!/usr/bin/env bash
# The DaemonSet starts as shipped: the pod of `kubectl kustomize
# deploy/kubernetes` (the base an operator applies), run
# by a real Docker from a real image, names another container's /dev/shm.
#   image.sh <source dir> <build dir> <shmbpf binary>
# Needs root and Debian's archive (the mirror apt uses), the first time.
#
# 1. The image, offline but for Debian's packages: a minbase Debian 12 root
#    (mmdebstrap, slimmed as Debian's -slim images are) with the .deb's
#    Depends, cached under ~/.cache/shmbpf/image by its package list; the
#    cpack'd .deb installed into it by apt in a chroot, which resolves its
#    Depends for real; imported with the Dockerfile's ENTRYPOINT and CMD.
#    What deploy/kubernetes/Dockerfile does, without a registry for its FROM.
# 2. A dockerd of the test's own (as tests/e2e/dockerd.hpp starts one): own
#    data root, exec root and socket, no iptables, no bridge, vfs.
# 3. The pod: daemonset_run.py turns the DaemonSet into a `docker run` (what
#    it substitutes, it says), plus the test dockerd's containers directory
#    read-only at /var/lib/docker/containers, where shmbpf's default
#    --runtime-root docker=/var/lib/docker finds their names (README,
#    Containers): no argument of the manifest's is added.
# 4. An ordinary container, web-1 (busybox), writes 64 KiB to its /dev/shm.
# 5. Through the pod's network namespace (nsenter -n): the readiness probe's
#    path answers 200 within 90 s, the metrics path then has
#    shmbpf_segments{container="web-1",mountpoint="/dev/shm"} > 0, the
#    liveness path 200; the node has no tracefs mount it did not have. What
#    the pod runs with (capabilities, no_new_privs, seccomp, memory) is
#    printed. Then docker stop, as a kubelet stops it: exit status 0.
#    Any failure shows the pod's log.
# Each step's time is printed ("time: ..."). Everything started goes on any
# exit (containers, dockerd, their mounts, the temp dir); a signal stops a
# bootstrap under way.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/deploy/lib.sh
. "$here/lib.sh"
src=$1 build=$2 binary=$3

[ "$(id -u)" = 0 ] || unable "needs root (chroot, dockerd, BPF)"
need cpack cmake
need dpkg-deb dpkg
need apt-config apt
need mmdebstrap mmdebstrap
need dockerd docker.io
need docker docker.io
need busybox busybox-static
need nsenter util-linux
need unshare util-linux
need flock util-linux
need python3 python3
need kubectl kubernetes-client
python3 -c 'import yaml' 2>/dev/null ||
  unable "python3's yaml is missing (Debian package python3-yaml; bash scripts/deps.sh --tests)"
# Debian's docker.io first, as tests/e2e/dockerd.hpp: its CLI is the one of
# the daemon.
pick() {
  local p
  for p in "$@"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  command -v "$(basename "$1")"
}
dockerd_bin=$(pick /usr/sbin/dockerd /usr/bin/dockerd)
docker_bin=$(pick /usr/bin/docker /usr/local/bin/docker)
busybox_bin=$(pick /bin/busybox /usr/bin/busybox)
python=$(command -v python3)


tmp=$(mktemp -d /tmp/shmbpf-image-XXXXXX)
dk=$tmp/docker # the test dockerd's: data root, exec root, socket, log
dockerd_pid=
bootstrap_pid=
partial=
tracefs_before=$(grep -c ' - tracefs ' /proc/self/mountinfo || true)
docker() { "$docker_bin" -H "unix://$dk/docker.sock" "$@"; }
# Everything the test started goes, whatever the exit: containers, the
# daemon (which stops its containerd), what they mounted below $tmp, $tmp.
cleanup() {
  local rc=$? ids n points
  set +e
  trap - EXIT INT TERM
  last=${EPOCHREALTIME/./}
  if [ -n "$bootstrap_pid" ]; then
    kill -TERM -- "-$bootstrap_pid" 2>/dev/null
    wait "$bootstrap_pid" 2>/dev/null
  fi
  if [ -n "$dockerd_pid" ]; then
    ids=$(docker ps -aq 2>/dev/null)
    # shellcheck disable=SC2086 # ids, one a word
    [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
    kill -TERM "$dockerd_pid" 2>/dev/null
    for ((n = 0; n < 150; n++)); do
      kill -0 "$dockerd_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$dockerd_pid" 2>/dev/null
    wait "$dockerd_pid" 2>/dev/null
  fi
  points=$(awk -v d="$tmp/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  for p in $points; do umount -l "$p"; done
  if awk -v d="$tmp/" 'index($5, d) == 1 {f = 1} END {exit !f}' /proc/self/mountinfo; then
    echo "FAIL: mounts are left below $tmp; it is kept" >&2
    rc=1
  else
    rm -rf --one-file-system "$tmp"
  fi
  [ -n "$partial" ] && rm -rf --one-file-system "$partial"
  took "cleanup"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The pod, first: a manifest this cannot run fails before the image is
# built. The facts: the image, the container's name, the probes' paths.
# The manifest is what kustomize makes of the base, with no kubeconfig (no
# cluster's to ask: kubectl kustomize needs none).
KUBECONFIG=$tmp/no-kubeconfig kubectl kustomize "$src/deploy/kubernetes" >"$tmp/shmbpf.yaml" ||
  fail "kubectl kustomize deploy/kubernetes failed"
"$python" "$here/daemonset_run.py" "$tmp/shmbpf.yaml" "$tmp" \
  --volume "$dk/data/containers:/var/lib/docker/containers:ro" \
  --facts "$tmp/facts" >"$tmp/run.argv"
mapfile -d '' -t run_argv <"$tmp/run.argv"
fact() { awk -v k="$1" '$1 == k {print $2; found = 1} END {exit !found}' "$tmp/facts"; }
image=$(fact image) agent=$(fact name) grace=$(fact grace)

# The .deb, as package.deb makes it.
# "shmbpf 0.1.0 (revision …, built …)": the packaged binary must say it all.
says=$("$binary" --version)
version=$(awk '{print $2}' <<<"$says")
[ "${image##*:}" = "$version" ] ||
  fail "the DaemonSet runs $image, the package is $version: daemonset.yaml's tag is stale"
make_deb "$build" "$tmp/deb" "$version"

# 1. The base root: minbase, the .deb's Depends (their first alternatives)
# and util-linux for the DaemonSet's nsenter (essential: in minbase
# anyway). From the mirrors apt uses for Debian 12 here, with apt's own
# settings for them. Kept by its recipe's hash: delete the directory for
# newer packages.
suite=bookworm
include=(util-linux)
debian_root_inputs "$suite" "$deb"
# As Debian's -slim images (debuerreotype): merged /usr by symlinks and
# usr-is-merged, not usrmerge (which brings perl); no manuals, docs but
# copyrights, no translations.
slim=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/groff/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*')
recipe=$(printf '%s\n' "recipe 1" "mmdebstrap --variant=minbase $suite" "${include[@]}" \
  "$sources" "${aptopts[@]}" "${slim[@]}")
key=$(sha256sum <<<"$recipe" | cut -c1-16)
cache=${XDG_CACHE_HOME:-${HOME:?}/.cache}/shmbpf/image
mkdir -p "$cache"
base=$cache/base-$suite-$key.tar
exec {lock}>"$cache/.lock"
flock "$lock" # one bootstrap at a time; a second waits, then uses it
if [ -f "$base" ]; then
  touch "$base"
  echo "base root: $base"
  took "base root: cached"
else
  echo "building $base: minbase $suite + ${include[*]}"
  printf '%s\n' "$sources" >"$tmp/sources.list"
  printf '%s\n' "$recipe" >"$cache/base-$suite-$key.recipe"
  partial=$cache/.partial-$$.tar # mmdebstrap's format is its name's extension
  # In a mount namespace of its own: whatever it mounts goes with it. In
  # the background and a process group of its own (setsid execs, the pid
  # stays), so that a signal reaches the trap at once, which stops it and
  # its apt and dpkg.
  TMPDIR=$tmp setsid unshare --mount --propagation private -- mmdebstrap --quiet --variant=minbase \
    --include="$(IFS=,; echo "${include[*]}")" "${aptopts[@]}" "${slim[@]}" \
    "$suite" "$partial" "$tmp/sources.list" >"$tmp/mmdebstrap.log" 2>&1 &
  bootstrap_pid=$!
  wait "$bootstrap_pid" || {
    bootstrap_pid=
    tail -40 "$tmp/mmdebstrap.log" >&2
    fail "mmdebstrap failed"
  }
  bootstrap_pid=
  mv "$partial" "$base"
  partial=
  # Other recipes' (the .deb's Depends were others), unused for a month.
  find "$cache" -maxdepth 1 -name 'base-*.tar' -mtime +30 -delete
  took "base root: mmdebstrap (cached now)"
fi
exec {lock}>&-

# The .deb into a copy of it, by apt in a chroot: no download when its
# Depends are there, a failure when they are not what it needs.
root=$tmp/root
mkdir "$root"
tar --numeric-owner -xpf "$base" -C "$root"
cp "$deb" "$root/tmp/"
unshare --mount --propagation private -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  DEBIAN_FRONTEND=noninteractive LC_ALL=C chroot "$root" apt-get install -y -q \
  --no-install-recommends -o Dpkg::Use-Pty=0 "/tmp/$(basename "$deb")" \
  >"$tmp/apt.log" 2>&1 || {
  cat "$tmp/apt.log" >&2
  fail "apt-get install of the .deb in the chroot failed"
}
rm -rf "$root/tmp/$(basename "$deb")" "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
got=$(chroot "$root" /usr/sbin/shmbpf --version) || fail "shmbpf does not run in the root"
[ "$got" = "$says" ] || fail "the root's shmbpf says '$got', not '$says'"
took "root: extract, apt-get install the .deb"

# 2. The test's dockerd.
mkdir -p "$dk"
"$dockerd_bin" --iptables=false --ip6tables=false --bridge=none --storage-driver=vfs \
  --data-root "$dk/data" --exec-root "$dk/exec" --host "unix://$dk/docker.sock" \
  --pidfile "$dk/docker.pid" >"$dk/dockerd.log" 2>&1 &
dockerd_pid=$!
for ((n = 0; ; n++)); do
  docker version >/dev/null 2>&1 && break
  if ! kill -0 "$dockerd_pid" 2>/dev/null || ((n >= 300)); then
    tail -30 "$dk/dockerd.log" >&2
    fail "dockerd did not start"
  fi
  sleep 0.1
done
took "dockerd: started"

# The image, as the Dockerfile's: its ENTRYPOINT and CMD.
changes=()
while IFS= read -r line; do
  changes+=(--change "$line")
done < <(grep -E '^(ENTRYPOINT|CMD) ' "$src/deploy/kubernetes/Dockerfile")
grep -q '^ENTRYPOINT ' "$src/deploy/kubernetes/Dockerfile" || fail "the Dockerfile has no ENTRYPOINT"
tar --numeric-owner -C "$root" -c . | docker import "${changes[@]}" - "$image" >/dev/null
rm -rf --one-file-system "$root"
got=$(docker run --rm --network none "$image" --version 2>&1) ||
  fail "docker run $image --version (the ENTRYPOINT): $got"
[ "$got" = "$says" ] || fail "docker run $image --version says '$got', not '$says'"
took "image: docker import $image"

# The ordinary container's image: busybox, statically linked.
mkdir -p "$tmp/busybox/bin" "$tmp/busybox/dev/shm"
cp "$busybox_bin" "$tmp/busybox/bin/busybox"
for applet in sh dd sleep; do ln -s busybox "$tmp/busybox/bin/$applet"; done
tar -C "$tmp/busybox" -c . | docker import - shmbpf-e2e-busybox:1 >/dev/null

# 3. The pod.
diagnose() {
  echo "=== docker ps -a" >&2
  docker ps -a >&2 || true
  echo "=== docker logs $agent" >&2
  docker logs "$agent" 2>&1 | tail -80 >&2 || true
  echo "=== docker run $(printf '%q ' "${run_argv[@]}")" >&2
}
pod_fail() {
  diagnose
  fail "$*"
}
echo "docker run $(printf '%q ' "${run_argv[@]}")"
docker run "${run_argv[@]}" >/dev/null || pod_fail "docker run of the DaemonSet's pod failed"
took "pod: docker run"

# 5. Its endpoints, through its network namespace: nsenter -n, then the
# host's python (its urllib, no proxy) to 127.0.0.1.
#   get PATH PORT [FILE]: prints the status (0: no answer), the body to FILE.
get() {
  local pid
  pid=$(docker inspect -f '{{.State.Pid}}' "$agent") || pid=0
  if [ "$pid" -le 0 ]; then
    echo 0
    return
  fi
  nsenter -t "$pid" -n -- "$python" - "http://127.0.0.1:$2$1" "${3:-/dev/null}" <<'EOF' 2>/dev/null || echo 0
import sys, urllib.error, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(sys.argv[1], timeout=5) as r:
        code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
except OSError as e:
    code, body = 0, str(e).encode()
with open(sys.argv[2], "wb") as f:
    f.write(body)
print(code)
EOF
}
endpoint() { awk -v k="$1" '$1 == k {print $2, $3; found = 1} END {exit !found}' "$tmp/facts"; }
read -r ready_path ready_port < <(endpoint readiness) || fail "the DaemonSet has no readinessProbe"
read -r live_path live_port < <(endpoint liveness) || fail "the DaemonSet has no livenessProbe"
read -r metrics_path metrics_port < <(endpoint metrics) || fail "the pod has no prometheus.io annotations"
deadline=$((${EPOCHREALTIME/./} + 90000000))
until [ "$(get "$ready_path" "$ready_port" "$tmp/readyz")" = 200 ]; do
  [ "$(docker inspect -f '{{.State.Running}}' "$agent")" = true ] ||
    pod_fail "the pod stopped before $ready_path answered 200"
  ((${EPOCHREALTIME/./} < deadline)) ||
    pod_fail "$ready_path did not answer 200 within 90 s: $(head -c 300 "$tmp/readyz")"
  sleep 0.5
done
took "pod: $ready_path 200"

# 4. The ordinary container, started once the pod is ready: its /dev/shm
# file comes to the agent by its programs' events.
docker run --detach --name web-1 --network none shmbpf-e2e-busybox:1 \
  sh -c 'dd if=/dev/zero of=/dev/shm/e2e-image bs=4096 count=16 && exec sleep 3600' >/dev/null ||
  pod_fail "docker run web-1 failed"
segments() {
  [ "$(get "$metrics_path" "$metrics_port" "$tmp/metrics")" = 200 ] || return 1
  awk '/^shmbpf_segments\{/ && index($0, "container=\"web-1\"") &&
    index($0, "mountpoint=\"/dev/shm\"") && $NF + 0 > 0 {print; found = 1}
    END {exit !found}' "$tmp/metrics"
}
deadline=$((${EPOCHREALTIME/./} + 30000000))
until seen=$(segments); do
  ((${EPOCHREALTIME/./} < deadline)) || {
    echo "=== $metrics_path, its shmbpf_segments" >&2
    grep '^shmbpf_segments' "$tmp/metrics" >&2 || head -c 300 "$tmp/metrics" >&2 || true
    pod_fail "no shmbpf_segments{container=\"web-1\",mountpoint=\"/dev/shm\"} > 0 within 30 s"
  }
  sleep 0.5
done
echo "$seen"
took "pod: web-1's /dev/shm in $metrics_path"
code=$(get "$live_path" "$live_port")
[ "$code" = 200 ] || pod_fail "$live_path answered $code"
[ "$(docker inspect -f '{{.State.Running}}' "$agent")" = true ] || pod_fail "the pod stopped"
tracefs_now=$(grep -c ' - tracefs ' /proc/self/mountinfo || true)
[ "$tracefs_now" = "$tracefs_before" ] ||
  pod_fail "the host has $tracefs_now tracefs mounts, $tracefs_before before: the pod mounted one on the node"
# What it ran with: the capabilities, no_new_privs, seccomp (2: the
# runtime's default profile, a filter), and the memory it uses of its limit.
pid=$(docker inspect -f '{{.State.Pid}}' "$agent")
confinement=$(grep -E '^(CapEff|NoNewPrivs|Seccomp):' "/proc/$pid/status" | tr -s '\t\n' '  ')
echo "pod: ${confinement}memory $(docker stats --no-stream --format '{{.MemUsage}}' "$agent")"
grep -q 'NoNewPrivs: 1' <<<"$confinement" || pod_fail "the pod may gain privileges: $confinement"
echo "=== the pod's log"
docker logs "$agent" 2>&1 | tail -20

# As the kubelet stops it (a rolling update): SIGTERM, then SIGKILL after
# the grace period; serve stops cleanly on SIGTERM.
docker stop --time "$grace" "$agent" >/dev/null || pod_fail "docker stop failed"
status=$(docker inspect -f '{{.State.ExitCode}}' "$agent")
[ "$status" = 0 ] || pod_fail "the pod exited with status $status on SIGTERM"
took "pod: docker stop, exit status 0"

echo "ok: the DaemonSet's pod ($image) serves web-1's /dev/shm; $live_path 200; stops cleanly"
last=$start
took "total" >/dev/null
printf '%s\n' "${timings[@]}"
