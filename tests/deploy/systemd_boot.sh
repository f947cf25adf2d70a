#!/usr/bin/env bash
# The unit starts as shipped: the .deb installed in a Debian 12 root that
# systemd-nspawn boots with systemd as its init, whose shmbpf.service runs
# under the unit's whole sandbox and serves what a container writes to its
# /dev/shm. Then the package's scripts against that systemd.
#   systemd_boot.sh <source dir> <build dir> <shmbpf binary>
# Needs root and Debian's archive (the mirror apt uses), the first time.
#
# 1. The root: minbase Debian 12 with systemd-sysv and the .deb's Depends
#    (mmdebstrap), cached under ~/.cache/shmbpf/boot by its package list;
#    the cpack'd .deb installed in it by dpkg in a chroot (its postinst
#    where systemd does not run), the unit enabled, /etc/default/shmbpf
#    given --socket-group shmbpf and an --export-file. tracefs and debugfs
#    are masked there, so that shmbpf mounts tracefs itself, in a mount
#    namespace of its own: the hardest case for the sandbox.
# 2. systemd-nspawn boots it: every capability, the host's user namespace,
#    a network of its own (loopback: port 19746 is free there), bpf and
#    perf_event_open allowed (nspawn's own filter refuses them). No machined
#    or bus of the host's is needed (--register=no --keep-unit), and its
#    /run is a tmpfs of the test's mount namespace.
# 3. In the container: shmbpf.service active, /readyz 200, a 64 KiB file
#    in /dev/shm counted in /metrics and listed through the socket for a
#    member of the group shmbpf (not for anyone else), in the export file
#    too; the service's capabilities the unit's, no_new_privs, seccomp; no
#    tracefs mount left in the container or added on the host; SIGTERM
#    (systemctl stop) ends it with status 0.
# 4. dpkg in the container: an upgrade restarts the running service (a new
#    pid), a removal stops it, a purge takes its directories, its conffile
#    and the enable's link; a new install enables and starts nothing.
# Each step's time is printed ("time: ..."). Everything started goes on any
# exit (the container, its root, the temp dir).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/deploy/lib.sh
. "$here/lib.sh"
src=$1 build=$2 binary=$3

[ "$(id -u)" = 0 ] || unable "needs root (chroot, systemd-nspawn, BPF)"
need cpack cmake
need dpkg-deb dpkg
need apt-config apt
need mmdebstrap mmdebstrap
need systemd-nspawn systemd-container
need nsenter util-linux
need unshare util-linux
need setpriv util-linux
need flock util-linux
need python3 python3


tmp=$(mktemp -d /tmp/shmbpf-boot-XXXXXX)
root=$tmp/root
nspawn_pid=
bootstrap_pid=
partial=
tracefs_before=$(grep -c ' - tracefs ' /proc/self/mountinfo || true)
cleanup() {
  local rc=$? n
  set +e
  trap - EXIT INT TERM
  last=${EPOCHREALTIME/./}
  if [ -n "$bootstrap_pid" ]; then
    kill -TERM -- "-$bootstrap_pid" 2>/dev/null
    wait "$bootstrap_pid" 2>/dev/null
  fi
  if [ -n "$nspawn_pid" ]; then
    # nspawn asks the container's systemd to power off (SIGRTMIN+3).
    kill -TERM "$nspawn_pid" 2>/dev/null
    for ((n = 0; n < 300; n++)); do
      kill -0 "$nspawn_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$nspawn_pid" 2>/dev/null
    wait "$nspawn_pid" 2>/dev/null
  fi
  rm -rf --one-file-system "$tmp"
  [ -n "$partial" ] && rm -rf --one-file-system "$partial"
  took "cleanup"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The .deb, as package.deb makes it.
version=$("$binary" --version | awk '{print $2}')
make_deb "$build" "$tmp/deb" "$version"

# 1. The base root, cached by its recipe as tests/deploy/image.sh caches
# its own (delete the directory for newer packages).
suite=bookworm
include=(systemd-sysv)
debian_root_inputs "$suite" "$deb"
slim=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-exclude=/usr/share/locale/*')
recipe=$(printf '%s\n' "recipe 1" "mmdebstrap --variant=minbase $suite" "${include[@]}" \
  "$sources" "${aptopts[@]}" "${slim[@]}")
key=$(sha256sum <<<"$recipe" | cut -c1-16)
cache=${XDG_CACHE_HOME:-${HOME:?}/.cache}/shmbpf/boot
mkdir -p "$cache"
base=$cache/base-$suite-$key.tar
exec {lock}>"$cache/.lock"
flock "$lock"
if [ -f "$base" ]; then
  touch "$base"
  echo "base root: $base"
  took "base root: cached"
else
  echo "building $base: minbase $suite + ${include[*]}"
  printf '%s\n' "$sources" >"$tmp/sources.list"
  printf '%s\n' "$recipe" >"$cache/base-$suite-$key.recipe"
  partial=$cache/.partial-$$.tar
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
  find "$cache" -maxdepth 1 -name 'base-*.tar' -mtime +30 -delete
  took "base root: mmdebstrap (cached now)"
fi
exec {lock}>&-

mkdir "$root"
tar --numeric-owner -xpf "$base" -C "$root"
cp "$deb" "$root/var/tmp/shmbpf.deb"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
in_root dpkg -i /var/tmp/shmbpf.deb >"$tmp/dpkg.log" 2>&1 || {
  cat "$tmp/dpkg.log" >&2
  fail "dpkg -i of the .deb in the chroot failed"
}
in_root systemctl enable shmbpf.service >/dev/null 2>&1 || fail "systemctl enable shmbpf in the root failed"
sed -i 's|^SHMBPF_ARGS=.*|SHMBPF_ARGS="--listen 127.0.0.1:19746 --socket-group shmbpf --export-file /var/log/shmbpf/events.ndjson"|' \
  "$root/etc/default/shmbpf"
for mount in sys-kernel-tracing.mount sys-kernel-debug.mount; do
  ln -s /dev/null "$root/etc/systemd/system/$mount"
done
echo shmbpf-boot >"$root/etc/hostname"
took "root: extract, dpkg -i, enable"

# 2. Boot.
unshare --mount --propagation private -- sh -c 'mount -t tmpfs tmpfs /run && exec "$@"' _ \
  systemd-nspawn --quiet --directory="$root" --boot --machine=shmbpf-boot \
  --capability=all --private-users=no --private-network --register=no --keep-unit \
  --system-call-filter='bpf perf_event_open' --console=passive >"$tmp/nspawn.log" 2>&1 &
nspawn_pid=$!
leader=
for ((n = 0; n < 100; n++)); do
  leader=$(pgrep -P "$nspawn_pid" -x systemd || true)
  [ -n "$leader" ] && break
  kill -0 "$nspawn_pid" 2>/dev/null || {
    cat "$tmp/nspawn.log" >&2
    unable "systemd-nspawn did not boot the root"
  }
  sleep 0.1
done
[ -n "$leader" ] || unable "systemd-nspawn started no systemd within 10 s: $(cat "$tmp/nspawn.log")"
inside() { nsenter -t "$leader" -m -u -i -n -p -C -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
# Until its manager answers (its private socket is there) and has started
# everything it will: running, or degraded (then the failed units show).
deadline=$((${EPOCHREALTIME/./} + 90000000))
until state=$(inside systemctl is-system-running 2>/dev/null) || [ "$state" = degraded ]; do
  ((${EPOCHREALTIME/./} < deadline)) || fail "the container's systemd is '$state' after 90 s"
  sleep 0.2
done
[ "$state" = running ] || inside systemctl --failed --no-pager >&2 || true
took "boot: systemd is $state"
journal() {
  echo "=== journalctl -u shmbpf" >&2
  inside journalctl -u shmbpf --no-pager -o short-precise 2>&1 | tail -40 >&2 || true
}
unit_fail() {
  journal
  fail "$*"
}
show() { inside systemctl show -P "$1" shmbpf.service; }

# 3. The agent under the unit.
get() {
  nsenter -t "$leader" -n -- python3 - "http://127.0.0.1:19746$1" "${2:-/dev/null}" <<'EOF' 2>/dev/null || echo 0
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
deadline=$((${EPOCHREALTIME/./} + 60000000))
until [ "$(get /readyz)" = 200 ]; do
  # Restart=on-failure: a start that fails is tried again, never "failed".
  [ "$(show NRestarts)" = 0 ] || unit_fail "shmbpf.service failed (and was restarted) before /readyz answered 200"
  ((${EPOCHREALTIME/./} < deadline)) || unit_fail "/readyz did not answer 200 within 60 s"
  sleep 0.5
done
[ "$(show ActiveState)/$(show SubState)" = active/running ] ||
  unit_fail "shmbpf.service is $(show ActiveState)/$(show SubState)"
[ "$(show NRestarts)" = 0 ] || unit_fail "shmbpf.service restarted $(show NRestarts) times"
took "shmbpf.service: active, /readyz 200"

inside dd if=/dev/zero of=/dev/shm/shmbpf-boot bs=4096 count=16 status=none ||
  fail "writing /dev/shm/shmbpf-boot in the container failed"
deadline=$((${EPOCHREALTIME/./} + 30000000))
until [ "$(get /metrics "$tmp/metrics")" = 200 ] &&
  seen=$(awk '/^shmbpf_segments\{/ && index($0, "mountpoint=\"/dev/shm\"") && $NF + 0 > 0' "$tmp/metrics") &&
  [ -n "$seen" ]; do
  ((${EPOCHREALTIME/./} < deadline)) ||
    unit_fail "no shmbpf_segments{mountpoint=\"/dev/shm\"} > 0 within 30 s"
  sleep 0.5
done
echo "$seen"
gid=$(inside getent group shmbpf | cut -d: -f3)
listed=$(inside setpriv --reuid=65534 --regid=65534 --groups="$gid" shmbpf ls --server /run/shmbpf/shmbpf.sock 2>&1) ||
  unit_fail "shmbpf ls --server as a member of the group shmbpf failed: $listed"
grep -q '^/dev/shm/shmbpf-boot ' <<<"$listed" || unit_fail "the socket does not list /dev/shm/shmbpf-boot:
$listed"
if inside setpriv --reuid=65534 --regid=65534 --clear-groups shmbpf ls --server /run/shmbpf/shmbpf.sock >/dev/null 2>&1; then
  unit_fail "the socket admits a user not in the group shmbpf"
fi
grep -q 'shmbpf-boot' "$root/var/log/shmbpf/events.ndjson" 2>/dev/null ||
  unit_fail "/var/log/shmbpf/events.ndjson has no record of /dev/shm/shmbpf-boot"
[ "$(stat -c %a "$root/var/log/shmbpf/events.ndjson")" = 600 ] || unit_fail "the export file is not 0600"
took "/dev/shm/shmbpf-boot: metrics, socket, export"

# What it runs with: exactly the unit's capabilities (from the kernel's
# numbering in linux/capability.h), no_new_privs, a seccomp filter. Its
# pid is the container's.
pid=$(show MainPID)
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$src/deploy/systemd/shmbpf.service")
want=$(python3 - "$caps" <<'EOF'
import re, sys
bits = {m[0]: int(m[1]) for m in re.findall(r"#define (CAP_[A-Z_]+)\s+(\d+)\b",
                                             open("/usr/include/linux/capability.h").read())}
print(format(sum(1 << bits[c] for c in sys.argv[1].split()), "016x"))
EOF
)
status=$(inside cat "/proc/$pid/status")
confinement=$(grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' <<<"$status" | tr -s '\t\n' '  ')
echo "shmbpf.service: $confinement"
grep -qx "CapEff:	$want" <<<"$status" || unit_fail "its capabilities are not the unit's ($want): $confinement"
grep -qx "CapBnd:	$want" <<<"$status" || unit_fail "its bounding set is not the unit's ($want): $confinement"
grep -qx 'NoNewPrivs:	1' <<<"$status" || unit_fail "it may gain privileges: $confinement"
grep -qx 'Seccomp:	2' <<<"$status" || unit_fail "it has no seccomp filter: $confinement"
# The tracefs it mounted was its own, and it unmounts it once attached.
if inside grep -q ' - tracefs ' /proc/self/mountinfo; then
  unit_fail "the container has a tracefs mount (it masks tracefs: shmbpf's own must not show)"
fi
tracefs_now=$(grep -c ' - tracefs ' /proc/self/mountinfo || true)
[ "$tracefs_now" = "$tracefs_before" ] ||
  unit_fail "the host has $tracefs_now tracefs mounts, $tracefs_before before"
inside systemctl stop shmbpf.service
[ "$(show Result)/$(show ExecMainStatus)" = success/0 ] ||
  unit_fail "systemctl stop: $(show Result), status $(show ExecMainStatus)"
took "confinement; systemctl stop: status 0"

# 4. The package's scripts against this systemd.
inside systemctl start shmbpf.service
before=$(show MainPID)
inside dpkg -i /var/tmp/shmbpf.deb >"$tmp/dpkg.log" 2>&1 || {
  cat "$tmp/dpkg.log" >&2
  fail "dpkg -i (an upgrade) in the container failed"
}
after=$(show MainPID)
if [ "$(show ActiveState)" != active ] || [ "$after" = 0 ] || [ "$after" = "$before" ]; then
  unit_fail "the upgrade did not restart shmbpf ($(show ActiveState), pid $before, then $after)"
fi
inside dpkg -r shmbpf >>"$tmp/dpkg.log" 2>&1 || fail "dpkg -r in the container failed"
if inside test -d "/proc/$after"; then unit_fail "the removal left shmbpf running (pid $after)"; fi
inside dpkg -P shmbpf >>"$tmp/dpkg.log" 2>&1 || fail "dpkg -P in the container failed"
for left in /etc/default/shmbpf /var/lib/shmbpf /var/log/shmbpf \
  /etc/systemd/system/multi-user.target.wants/shmbpf.service; do
  if [ -e "$root$left" ] || [ -L "$root$left" ]; then fail "the purge left $left"; fi
done
inside dpkg -i /var/tmp/shmbpf.deb >>"$tmp/dpkg.log" 2>&1 || fail "dpkg -i (a new install) failed"
[ "$(inside systemctl is-enabled shmbpf.service || true)" = disabled ] ||
  fail "a new install left shmbpf.service $(inside systemctl is-enabled shmbpf.service)"
[ "$(show ActiveState)" = inactive ] || fail "a new install started shmbpf.service"
took "dpkg: upgrade restarts, remove stops, purge, install"

echo "ok: shmbpf.service runs under its sandbox in a booted Debian 12 and serves its /dev/shm; the package's scripts drive systemd"
last=$start
took "total" >/dev/null
printf '%s\n' "${timings[@]}"
