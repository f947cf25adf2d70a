#!/usr/bin/env bash
# Boots one of Debian's kernels under QEMU with an initramfs only (no disk)
# and runs a command inside, as root in a busybox system. The command's
# output comes back on stdout and its exit status is this script's.
#
#   tests/vm/vm.sh [OPTIONS] RELEASE COMMAND [ARG...]
#   tests/vm/vm.sh [--arch ARCH] fetch RELEASE...   fetch and cache kernels only
#
# RELEASE is bullseye (5.10), bookworm (6.1) or trixie (6.12); the
# unsigned build of the newest kernel of the release's linux-image-ARCH is
# used.
#
#   --arch ARCH      amd64 (default; SHMBPF_VM_ARCH) or arm64, emulated by
#                    qemu-system-aarch64 (kernels and busybox from Debian's
#                    arm64 archive; programs from a cross build)
#   --file PATH      put PATH in the guest at the same path (repeatable); ELF
#                    files (of ARCH) bring the shared libraries they need
#   --timeout SECS   power the guest off after SECS (default 900)
#   --mem MIB        guest memory (default 2048)
#   --cpus N         guest CPUs (default 2)
#   --env NAME=VAL   set in the guest (repeatable); CI is passed on as it is
#   --append ARGS    add ARGS to the guest kernel's command line
#
# Environment: SHMBPF_VM_CACHE (default ~/.cache/shmbpf/vm) holds the
# kernels and their private apt state; SHMBPF_VM_ACCEL=kvm|tcg skips the
# KVM probe; SHMBPF_VM_REFRESH_DAYS (default 7) is how old the package lists
# may get before apt-get update runs again; SHMBPF_VM_ARM64_CPU is the
# arm64 guest's QEMU CPU model (default neoverse-n1, lib/qemu.sh says why).
#
# Exit status: the command's; 124 when the guest timed out; 125 when the
# guest ended without reporting; 126 when its kernel locked up twice; 123
# when it died twice while booting; 122 when its kernel twice hit an int3
# (arm64: BRK) oops in code it was patching; 77 when no guest can be had here (no qemu,
# no kernel) unless CI=true, where that is a failure (1).
set -euo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_CACHE=${SHMBPF_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shmbpf/vm}

vm_log() { echo "vm: $*" >&2; }
vm_die() {
  vm_log "error: $*"
  exit 125
}
# No guest can be had: a failure under CI=true, a skip elsewhere.
vm_cannot() {
  if [ "${CI:-}" = true ]; then
    vm_log "error: $* (CI=true: failing instead of skipping)"
    exit 1
  fi
  vm_log "skipped: $*"
  exit 77
}

# shellcheck source-path=SCRIPTDIR
. "$VM_DIR/lib/kernels.sh"
. "$VM_DIR/lib/initramfs.sh"
. "$VM_DIR/lib/qemu.sh"

VM_ARCH=${SHMBPF_VM_ARCH:-amd64}
files=() envs=() timeout=900 mem=2048 cpus=2
while (($#)); do
  case "$1" in
  --arch) VM_ARCH=$2 && shift 2 ;;
  --file) files+=("$2") && shift 2 ;;
  --timeout) timeout=$2 && shift 2 ;;
  --mem) mem=$2 && shift 2 ;;
  --cpus) cpus=$2 && shift 2 ;;
  --env) envs+=("$2") && shift 2 ;;
  --append) VM_APPEND+=" $2" && shift 2 ;;
  --) shift && break ;;
  -*) vm_die "unknown option $1" ;;
  *) break ;;
  esac
done
case "$VM_ARCH" in
amd64 | arm64) ;;
*) vm_die "unknown architecture '$VM_ARCH' (amd64 or arm64)" ;;
esac

if [ "${1:-}" = fetch ]; then
  shift
  for rel in "$@"; do
    vm_kernel "$rel"
    echo "$rel $VM_KERNEL_PKG $VM_KERNEL_VERSION $VM_KERNEL"
  done
  exit 0
fi

(($# >= 2)) || vm_die "usage: vm.sh [OPTIONS] RELEASE COMMAND [ARG...]"
release=$1
shift
[ -z "${CI:-}" ] || envs+=("CI=$CI")

if [ "$VM_ARCH" = arm64 ]; then
  command -v qemu-system-aarch64 >/dev/null ||
    vm_cannot "qemu-system-aarch64 is not installed (apt-get install qemu-system-arm)"
  command -v aarch64-linux-gnu-readelf >/dev/null ||
    vm_cannot "aarch64-linux-gnu-readelf is not installed (apt-get install binutils-aarch64-linux-gnu)"
else
  command -v qemu-system-x86_64 >/dev/null ||
    vm_cannot "qemu-system-x86_64 is not installed (bash scripts/deps.sh)"
  [ -x /bin/busybox ] || vm_cannot "/bin/busybox is missing (bash scripts/deps.sh)"
fi

vm_kernel "$release"
vm_check_config "$(dirname "$VM_KERNEL")/config"
vm_busybox "$release"
tag=$(vm_tag "$release")

work=$(mktemp -d "${TMPDIR:-/tmp}/shmbpf-vm.XXXXXX")
# SHMBPF_VM_KEEP=1 keeps the initramfs and both serial logs for a look.
if [ "${SHMBPF_VM_KEEP:-}" = 1 ]; then
  trap 'vm_log "kept $work"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
top="$work/top"
mkdir "$top"
install -m 0755 "$VM_DIR/guest/init" "$top/init"
{
  vm_arch_env
  for kv in "${envs[@]}"; do
    printf 'export %s\n' "$(vm_quote "$kv")"
  done
} >"$top/vm-env"
{
  printf '%s' "$(vm_quote "$1")"
  shift
  for a in "$@"; do printf ' %s' "$(vm_quote "$a")"; done
  echo
} >"$top/vm-command"

t0=$SECONDS
vm_initramfs "$work/initramfs.cpio" "$top" "${files[@]}"
vm_log "$tag: initramfs $(($(stat -c %s "$work/initramfs.cpio") / 1048576)) MiB in $((SECONDS - t0)) s"

accel=$(vm_accel "$work")
vm_log "$tag: booting $VM_KERNEL_PKG $VM_KERNEL_VERSION ($accel, $cpus CPUs, $mem MiB, timeout ${timeout}s)"
rc=0
vm_run "$accel" "$work/initramfs.cpio" "$timeout" "$mem" "$cpus" "$work" || rc=$?
# A guest kernel that locked up a CPU (seen twice in the 6.1 and 5.10
# guests under TCG, in different tests, with the host busy), or that died
# while booting, before anything of ours ran, is booted once more; its
# report goes to SHMBPF_VM_LOCKUPS, which scripts/test.sh shows. The death
# while booting is an int3 oops inside code the kernel was patching (a
# static key flipped), seen in the 6.12 guest under TCG, twice in a row in
# one CI run: one vCPU ran the code another was rewriting. Its second boot
# runs the vCPUs in turns on one host thread, where that cannot happen. So
# does that of a guest whose kernel hit the same oops later, while tests
# attached programs (seen in the 6.12 guest, eight probes attaching at once).
if [ "$rc" = 126 ] || [ "$rc" = 123 ] || [ "$rc" = 122 ]; then
  if [ -n "${SHMBPF_VM_LOCKUPS:-}" ]; then
    {
      echo "=== $(date -u +%FT%TZ) $tag ($VM_KERNEL_VERSION): $(cat "$top/vm-command")"
      vm_console "$work/console" 2>&1
    } >>"$SHMBPF_VM_LOCKUPS"
  fi
  what="locked up" how=""
  if [ "$rc" = 123 ] || [ "$rc" = 122 ]; then
    what="died while booting"
    [ "$rc" = 122 ] && what="hit a breakpoint in code it was patching"
    [ "$accel" = tcg ] && VM_TCG_THREAD=single how=", its vCPUs on one host thread"
  fi
  vm_log "$tag: the guest's kernel $what (above); booting it once more$how"
  rc=0
  vm_run "$accel" "$work/initramfs.cpio" "$timeout" "$mem" "$cpus" "$work" || rc=$?
fi
exit "$rc"
