#!/usr/bin/env bash
# The harness on its own, without shmbpf: a guest's output and exit status
# come back, it has the mounts check.sh relies on (and no tracefs: shmbpf
# mounts that itself) and the architecture asked for, a library given with
# --file brings its own and ld.so finds them, a guest that hangs ends at
# --timeout with 124, and one whose kernel dies while booting is booted once
# more, then ends with 123; and a guest's death is told apart by its console.
#
#   selftest.sh [--arch amd64|arm64] [RELEASE]    (default: bookworm)
set -uo pipefail
vm="$(dirname "$0")/vm.sh"
if [ "${1:-}" = --arch ]; then
  export SHMBPF_VM_ARCH=$2
  shift 2
fi
release=${1:-bookworm}
failed=0

# The guest's machine, its ld.so and a library of its architecture.
case "${SHMBPF_VM_ARCH:-amd64}" in
arm64) machine=aarch64 ldso=/lib/ld-linux-aarch64.so.1 ;;
*) machine=x86_64 ldso=/lib64/ld-linux-x86-64.so.2 ;;
esac
lib=/usr/lib/$machine-linux-gnu/libz.so.1

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
test "$(uname -m)" = "$SELFTEST_MACHINE" || echo "machine $(uname -m)"
libs=$("$SELFTEST_LDSO" --list "$SELFTEST_LIB" 2>&1)
case "$?:$libs" in 0:*libc.so.6*) ;; *) echo "ld.so --list $SELFTEST_LIB: $libs" ;; esac
echo "env ${SELFTEST_VALUE:-unset}"
exit 3'
out=$(bash "$vm" --env SELFTEST_VALUE="a b'c" --env SELFTEST_MACHINE=$machine \
  --env SELFTEST_LDSO=$ldso --env SELFTEST_LIB="$lib" --file "$ldso" --file "$lib" \
  --timeout 120 "$release" sh -c "$probe")
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
expect "arm64's analogue, a BRK no handler claims (6.1), is told apart" 122 \
  "$(death $'[   80.1] Unexpected kernel BRK exception at EL1\n[   80.1] Internal error: BRK handler: 00000000f2000100 [#1] SMP' 1)"
expect "and as 6.12 words it" 122 "$(death '[   80.1] Internal error: Oops - BRK: 00000000f2000100 [#1]  SMP' 1)"
expect "a BUG() on arm64 is none of them" 125 "$(death '[   80.1] Internal error: Oops - BUG: 00000000f2000800 [#1]  SMP' 1)"
expect "a soft lockup is one" 126 "$(death '[ 300.1] watchdog: BUG: soft lockup - CPU#1 stuck for 22s!' 1)"
expect "another death is none of them" 125 \
  "$(death $'[ 10.0] Oops: general protection fault\n[ 10.1] Kernel panic - not syncing: Fatal exception' 1)"
rm -f "$console"
exit "$failed"
