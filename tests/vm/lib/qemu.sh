# shellcheck shell=bash
# Booting a guest under qemu-system-x86_64 or, for VM_ARCH=arm64,
# qemu-system-aarch64. Sourced by tests/vm/vm.sh.

# One word for the guest's sh, in single quotes.
vm_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# The first serial port carries the kernel's messages (vm_console_dev),
# another one the command's output (guest/init); panic=-1 with -no-reboot
# turns a guest that died into a QEMU that exits, and softlockup_panic=1 a
# CPU stuck in the kernel into a guest that died (vm_run then says so).
# loglevel=5: a report's stack too. trust_cpu: QEMU's x86 CPU model has
# RDRAND, and a 5.10 guest without an entropy source would otherwise stall
# on getrandom() (an arm64 guest is seeded by the rng-seed of QEMU's
# device tree).
VM_APPEND="panic=-1 quiet loglevel=5 softlockup_panic=1 random.trust_cpu=on"

# The guest's serial ports. x86: the two legacy UARTs, ttyS0 and ttyS1.
# arm64 (QEMU's virt board): the PL011 (ttyAMA0) for the console, and for
# the output a PCI 16550 (pci-serial), which the 8250 driver names ttyS0.
vm_console_dev() { if [ "$VM_ARCH" = arm64 ]; then echo ttyAMA0; else echo ttyS0; fi; }
vm_out_dev() { if [ "$VM_ARCH" = arm64 ]; then echo /dev/ttyS0; else echo /dev/ttyS1; fi; }

# The guest's vm-env lines that belong to the architecture: where
# guest/init writes the command's output.
vm_arch_env() { printf 'export SHMBPF_VM_OUT=%s\n' "$(vm_out_dev)"; }

# arm64 CPU under TCG: neoverse-n1 (Graviton2's and Ampere Altra's core),
# booted with kpti=0. QEMU's models before v8.5 lack E0PD, and a Debian
# kernel then unmaps itself from user space (KASLR forces KPTI on), which
# TCG makes every syscall pay for many times over. max has E0PD, but signs
# return addresses (PAC, which Debian's kernels use), dear to emulate even
# with the implementation-defined algorithm (max,pauth-impdef=on). The
# figures are in README.md; SHMBPF_VM_ARM64_CPU names another model.
VM_ARM64_CPU=${SHMBPF_VM_ARM64_CPU:-neoverse-n1}

# TCG runs each vCPU on a host thread of its own (multi), or all of them in
# turns on one (single: slower, but a vCPU never runs code another one is
# rewriting; vm.sh boots a guest that died while booting, or on such an
# oops, once more that way).
VM_TCG_THREAD=multi

# Sets VM_QEMU to the command line of a guest.
vm_qemu() { # ACCEL INITRD MEM CPUS CONSOLE OUT
  local qemu=(qemu-system-x86_64) cpu=max append port=(-serial "file:$6")
  append="console=$(vm_console_dev) $VM_APPEND"
  if [ "$VM_ARCH" = arm64 ]; then
    qemu=(qemu-system-aarch64 -M virt) cpu=$VM_ARM64_CPU
    append="console=$(vm_console_dev) kpti=0 $VM_APPEND"
    port=(-chardev "file,id=out,path=$6" -device "pci-serial,chardev=out")
  fi
  local run=(-accel "tcg,thread=$VM_TCG_THREAD" -cpu "$cpu")
  if [ "$1" = kvm ]; then
    run=(-accel kvm -cpu host)
    [ "$VM_ARCH" = arm64 ] && qemu=(qemu-system-aarch64 -M "virt,gic-version=host")
  fi
  VM_QEMU=("${qemu[@]}" -nodefaults -display none -no-reboot "${run[@]}"
    -m "$3" -smp "$4" -kernel "$VM_KERNEL" -initrd "$2"
    -append "$append" -serial "file:$5" "${port[@]}")
}

# Whether KVM works here: /dev/kvm can exist while a KVM guest hangs before
# its kernel prints a line (as on nested virtualisation that does not
# deliver). A guest that only powers off must report within the probe's
# time; the answer is kept for the host's current boot.
vm_accel() { # WORK
  case "${SHMBPF_VM_ACCEL:-}" in
  kvm | tcg)
    echo "$SHMBPF_VM_ACCEL"
    return
    ;;
  esac
  # KVM runs guests of this machine's own architecture only.
  local machine=x86_64
  [ "$VM_ARCH" = arm64 ] && machine=aarch64
  if [ ! -w /dev/kvm ] || [ "$(uname -m)" != "$machine" ]; then
    echo tcg
    return
  fi
  local boot answer dir="$1/probe" cache="$VM_CACHE/kvm-probe"
  boot=$(cat /proc/sys/kernel/random/boot_id)
  exec 9>"$VM_CACHE/.kvm-probe.lock"
  flock 9
  if [ -f "$cache" ] && [ "$(cut -d' ' -f1 "$cache")" = "$boot" ]; then
    cut -d' ' -f2 "$cache"
    exec 9>&-
    return
  fi
  mkdir -p "$dir/top"
  install -m 0755 "$VM_DIR/guest/init" "$dir/top/init"
  vm_arch_env >"$dir/top/vm-env"
  echo true >"$dir/top/vm-command"
  vm_initramfs "$dir/initramfs.cpio" "$dir/top"
  local t0=$SECONDS
  answer=tcg
  vm_qemu kvm "$dir/initramfs.cpio" 256 1 "$dir/console" "$dir/out"
  if timeout --kill-after=5 "${SHMBPF_VM_KVM_PROBE_SECS:-20}" "${VM_QEMU[@]}" \
    </dev/null >/dev/null 2>&1 &&
    grep -q '^@@vm-status 0' "$dir/out" 2>/dev/null; then
    answer=kvm
  fi
  vm_log "KVM probe: $answer ($((SECONDS - t0)) s; cached for this boot in $cache)"
  echo "$boot $answer" >"$cache"
  exec 9>&-
  echo "$answer"
}

# What a guest that hung or died left on its console: the last test it
# started (check.sh names them there), the first kernel report of trouble
# (a soft lockup, an oops, a panic) with its stack, and the last lines.
# Callers run under set -e and pipefail: a console without a test's name or
# a report (a guest that died before check.sh began) is no error.
vm_console() { # CONSOLE
  local run first
  run=$(grep -a '^shmbpf-test: ' "$1" | tail -n 1 || true)
  [ -n "$run" ] && vm_log "the last test it started: ${run#shmbpf-test: }"
  first=$(grep -a -n -m 1 -E 'BUG:|Oops|Kernel panic|WARNING:|INFO: task' "$1" | cut -d: -f1 || true)
  if [ -n "$first" ]; then
    vm_log "its console's first report of trouble:"
    sed -n "${first},$((first + 45))p" "$1" >&2
  fi
  vm_log "its console's last lines:"
  tail -n 20 "$1" >&2
}

# Why a guest ended without a status, from its console and whether its
# init began: 126 when its kernel reported a soft lockup (and panicked), 123
# when its kernel died before the guest's init began (nothing of ours had
# run), 122 when its kernel hit an int3 breakpoint it had not set, inside
# code it was patching (a static key flipped, as attaching a program does;
# TCG lets another vCPU run the half-patched code), 125 otherwise. arm64's
# analogue is a BRK no handler claims (a kprobe's, just removed): "Oops -
# BRK" from 6.12's later releases on, "BRK handler" (after "Unexpected
# kernel BRK exception at EL1") before; BUG() is "Oops - BUG", not this.
vm_death_status() { # CONSOLE BEGUN(0|1)
  grep -a -q 'soft lockup' "$1" && return 126
  [ "$2" = 0 ] && grep -a -q 'Kernel panic' "$1" && return 123
  grep -a -q -E 'Oops: int3|Internal error: (Oops - BRK|BRK handler):' "$1" && return 122
  return 125
}

# Boots the guest, streams its command's output to stdout and returns the
# status it reported; 124 when it timed out; when it ended without a
# status, vm_death_status's.
vm_run() { # ACCEL INITRD TIMEOUT MEM CPUS WORK
  local accel=$1 initrd=$2 limit=$3 mem=$4 cpus=$5 work=$6
  local console="$work/console" out="$work/out" t0=$SECONDS qrc=0
  : >"$out"
  vm_qemu "$accel" "$initrd" "$mem" "$cpus" "$console" "$out"
  timeout --kill-after=10 "$limit" "${VM_QEMU[@]}" </dev/null &
  local qpid=$!
  tail -n +1 -f --pid="$qpid" "$out" | grep --line-buffered -v '^@@vm-' || true
  wait "$qpid" || qrc=$?
  local wall=$((SECONDS - t0)) begin status
  begin=$(sed -n 's/^@@vm-begin //p' "$out" | head -n 1)
  status=$(sed -n 's/^@@vm-status \([0-9]*\).*/\1/p' "$out" | tail -n 1)
  if [ -n "$begin" ]; then
    vm_log "guest up: kernel ${begin% *}, ${begin##* } s after its boot; $wall s in QEMU"
  fi
  if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
    vm_log "error: the guest did not finish within $limit s"
    vm_console "$console"
    return 124
  fi
  if [ -z "$status" ]; then
    vm_log "error: the guest ended without reporting a status (QEMU status $qrc)"
    vm_console "$console"
    local rc=0
    vm_death_status "$console" "$([ -n "$begin" ] && echo 1 || echo 0)" || rc=$?
    return "$rc"
  fi
  return "$status"
}
