#!/usr/bin/env bash
# The harness on its own, without shmbpf: a guest's output and exit status
# come back, it has the mounts check.sh relies on (and no tracefs: shmbpf
# mounts that itself), a guest that hangs ends at --timeout with 124, and
# one whose kernel dies while booting is booted once more, then ends with
# 123; and a guest's death is told apart by its console.
set -uo pipefail
vm="$(dirname "$0")/vm.sh"
release=${1:-bookworm}
failed=0

expect() { # WHAT WANT GOT
  if [ "$2" = "$3" ]; then
    echo "ok   $1"
  else
    echo "FAIL $1: want $2, got $3"
    failed=1
  fi
}

probe='
for m in /proc:proc /sys:sysfs /dev:devtmpfs /dev/shm:tmpfs /sys/fs/cgroup:cgroup2; do
  grep -q " ${m%%:*} ${m#*:} " /proc/mounts || echo "no ${m#*:} on ${m%%:*}"
done
test -e /sys/kernel/btf/vmlinux || echo "no /sys/kernel/btf/vmlinux"
test -d /sys/kernel/tracing/events && echo "tracefs already mounted"
echo "env ${SELFTEST_VALUE:-unset}"
exit 3'
out=$(bash "$vm" --env SELFTEST_VALUE="a b'c" --timeout 120 "$release" sh -c "$probe")
rc=$?
[ "$rc" = 77 ] && exit 77
echo "$out"
expect "exit status comes back" 3 "$rc"
expect "output and --env come back" "env a b'c" "$(echo "$out" | tail -n 1)"
expect "the guest has what check.sh needs" 1 "$(echo "$out" | wc -l)"

bash "$vm" --timeout 15 "$release" sleep 600
expect "a guest that hangs ends at --timeout" 124 "$?"
# No init to run: the kernel panics before anything of ours runs.
# Its console goes to SHMBPF_VM_LOCKUPS first: a console with no test's
# name on it must not end vm.sh (set -e) before the second boot.
lockups=$(mktemp)
log=$(SHMBPF_VM_LOCKUPS=$lockups bash "$vm" --append rdinit=/no-such-init --timeout 60 "$release" true 2>&1)
expect "a guest whose kernel dies while booting ends with 123" 123 "$?"
expect "and was booted once more" 1 "$(echo "$log" | grep -c 'died while booting.*once more')"
if [ "$(echo "$log" | grep -c 'booting .*(tcg,')" = 1 ]; then
  expect "its vCPUs on one host thread (TCG)" 1 "$(echo "$log" | grep -c 'once more, its vCPUs on one host thread')"
fi
expect "its console went to SHMBPF_VM_LOCKUPS" 1 "$(grep -c -m 1 'Kernel panic' "$lockups")"
rm -f "$lockups"

# How a guest that ended without a status is told apart, from consoles as
# the kernels wrote them.
# shellcheck source=lib/qemu.sh
. "$(dirname "$0")/lib/qemu.sh"
console=$(mktemp)
death() { # CONSOLE-TEXT BEGUN
  printf '%s\n' "$1" >"$console"
  vm_death_status "$console" "$2"
  echo $?
}
expect "an int3 oops while tests ran is told apart" 122 \
  "$(death $'[  285.438038] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n[  285.446287] Kernel panic - not syncing: Fatal exception in interrupt' 1)"
expect "a panic before init began is a death while booting" 123 \
  "$(death $'[    1.8] Oops: int3: 0000 [#1]\n[    1.9] Kernel panic - not syncing: Attempted to kill init!' 0)"
expect "a soft lockup is one" 126 "$(death '[ 300.1] watchdog: BUG: soft lockup - CPU#1 stuck for 22s!' 1)"
expect "another death is none of them" 125 \
  "$(death $'[ 10.0] Oops: general protection fault\n[ 10.1] Kernel panic - not syncing: Fatal exception' 1)"
rm -f "$console"
exit "$failed"
