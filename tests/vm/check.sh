#!/bin/sh
# What a VM-layer guest runs, and the host natively: the real binary's
# trace check (every event of a known workload, by pid, path and inode),
# `top -b -n 1`, `leaks`, `ls` and `doctor` (of each hook set), the kernel's
# share of shmbpf's hooks and, with --kernel-tests, the kernel test binary
# (the tests of the model once more with the light set). Every step runs even when
# one before it failed, so that one run lists everything this kernel lacks.
# POSIX sh: the guest has busybox only.
#
#   check.sh BUILD_DIR [--kernel-tests [FILTER [LIGHT_FILTER]]]
# FILTER and LIGHT_FILTER choose the kernel tests (gtest filters) of each
# set where the whole suite takes too long (the arm64 guests, emulated).
# Exit status: the number of failed steps.
build=$1
kernel_tests=${2:-}
filter=${3:-"-AuditMemoryLimit.*"}
light_filter=${4:-"Monitor.*:EndedFilesystems.*-Monitor.NameTable*:Monitor.UnlinkedNamesLeaveTheKernelsNameMap"}
# --hooks-only: the hook list alone (what hooks() re-runs itself as, in a
# mount namespace of its own).
hooks_only=false
[ "$kernel_tests" = --hooks-only ] && hooks_only=true
failed=0
log=$(mktemp)

# step NAME OK_STATUSES COMMAND...: runs it, shows its output (cut past
# $cut_at lines), passes when the status is one of OK_STATUSES.
cut_at=60
step() {
  name=$1 ok=$2
  shift 2
  echo "=== $name: $*"
  start=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  lines=$(wc -l <"$log")
  if [ "$lines" -gt "$cut_at" ]; then
    head -n 40 "$log"
    echo "... ($((lines - 50)) lines left out)"
    tail -n 10 "$log"
  else
    cat "$log"
  fi
  case " $ok " in
  *" $rc "*) echo "=== $name: PASS (status $rc, $(($(date +%s) - start)) s)" ;;
  *)
    # A failed test's message is in the part left out: shown, with what
    # came just before it.
    if [ "$lines" -gt "$cut_at" ] && grep -q -E ': Failure$|^Failure$' "$log"; then
      echo "=== $name: the failures"
      grep -n -B 2 -A 14 -E ': Failure$|^Failure$' "$log" | head -n 150
    fi
    echo "=== $name: FAIL (status $rc, $(($(date +%s) - start)) s)"
    failed=$((failed + 1))
    ;;
  esac
}

# named CMD...: runs a gtest binary with each test's name on the kernel's
# console as it starts, so that a guest that hangs shows in which test (the
# harness prints the console then), and its output without the per-test
# lines (RUN, OK, each suite's count).
named() {
  status=$(mktemp)
  { "$@" 2>&1; echo $? >"$status"; } | while IFS= read -r line; do
    case $line in
    "[ RUN      ]"*) echo "shmbpf-test: $line" >/dev/console ;;
    "[       OK ]"* | "[----------]"*) ;;
    *) printf '%s\n' "$line" ;;
    esac
  done
  rc=$(cat "$status")
  rm -f "$status"
  return "$rc"
}

# Which of shmbpf's hooks this kernel has: tracefs lists tracepoints (a
# tp_btf hook also needs the tracepoint's BTF, which comes with it) and the
# functions fentry and fexit can attach to. The light set needs either the
# timestamp tracepoints or the functions, not both.
hooks() {
  t=/sys/kernel/tracing
  if [ ! -d "$t/events" ]; then
    # Mounted where nobody else sees it, as shmbpf does: run natively, the
    # check must leave the machine's mount table as it found it.
    if ! $hooks_only && unshare --mount --propagation private true 2>/dev/null; then
      unshare --mount --propagation private sh "$0" "$build" --hooks-only
      return $?
    fi
    mount -t tracefs nodev "$t" || return 1
  fi
  missing=0
  while read -r sec; do
    case $sec in
    tracepoint/*) tp=${sec#tracepoint/} && test -d "$t/events/$tp" ;;
    tp_btf/*) tp=${sec#tp_btf/} && grep -q ":$tp\$" "$t/available_events" ;;
    fentry/* | fexit/*) grep -q -E "^${sec#*/}( |\$)" "$t/available_filter_functions" 2>/dev/null ;;
    esac
    if [ $? -eq 0 ]; then
      echo "present  $sec"
    else
      echo "MISSING  $sec"
      missing=$((missing + 1))
    fi
  done <"$build/tests/vm/hooks.txt"
  echo "$missing of $(wc -l <"$build/tests/vm/hooks.txt") hooks missing"
}

if $hooks_only; then
  rm -f "$log"
  hooks
  exit $?
fi

echo "=== kernel $(uname -r)"
# Whole: when the programs do not load, this is libbpf's account of why.
cut_at=100000
step trace 0 "$build/tests/vm/shmbpf_vm_trace_check" "$build/shmbpf"
cut_at=60
step top 0 "$build/shmbpf" top -b -n 1
step leaks "0 1" "$build/shmbpf" leaks
step ls 0 "$build/shmbpf" ls
step doctor 0 "$build/shmbpf" doctor
# The light set: the timestamp tracepoints from 6.13, shmem's calls before.
# arm64 attaches programs to kernel functions from 6.4 on (BPF
# trampolines): before, doctor must refuse the set and say why.
light=true
if [ "$(uname -m)" = aarch64 ]; then
  release=$(uname -r)
  major=${release%%.*} minor=${release#*.}
  minor=${minor%%[!0-9]*}
  [ "$major" -lt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -lt 4 ]; } && light=false
fi
# light_refused: doctor refuses the light set (status 2) for that reason.
light_refused() {
  out=$("$build/shmbpf" doctor --hooks light 2>&1)
  rc=$?
  echo "$out"
  [ "$rc" = 2 ] && echo "$out" | grep -q 'no BPF trampolines for kernel functions'
}
if $light; then
  step doctor-light 0 "$build/shmbpf" doctor --hooks light
else
  step doctor-light-refused 0 light_refused
fi
# Informational: a missing hook is what shmbpf must cope with, not a failure.
step hooks "0 1" hooks
if [ "$kernel_tests" = --kernel-tests ]; then
  # Not the memory-limit reader's test: it needs a memory controller below
  # the cgroup root, which this bare init does not set up (and turning it on
  # under TCG made the 6.1 guest's reclaim lock a CPU up for minutes). It
  # runs natively, where the limits are the host's own cgroups.
  cut_at=400
  # LightHooks.* ask for the light set: not where it cannot load.
  if ! $light; then
    case $filter in
    *-*) filter="$filter:LightHooks.*" ;;
    *) filter="$filter-LightHooks.*" ;;
    esac
  fi
  step kernel-tests 0 named "$build/tests/shmbpf_kernel_tests" "--gtest_filter=$filter"
  # The live model's tests once more with the light set (LightHooks.* ran
  # above: they ask for it), ended filesystems included. Not the rest of
  # light.* in tests/CMakeLists.txt: exits, execs and faults come from the
  # same hooks in both sets.
  if $light; then
    step kernel-tests-light 0 named env SHMBPF_HOOKS=light "$build/tests/shmbpf_kernel_tests" \
      "--gtest_filter=$light_filter"
  fi
fi
rm -f "$log"
echo "=== $failed step(s) failed on $(uname -r)"
exit "$failed"
