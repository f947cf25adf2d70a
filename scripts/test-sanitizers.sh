#!/usr/bin/env bash
# The sanitizer and fuzz layers of scripts/test.sh (README, Tests), each in
# a build directory of its own, compiled with clang:
#   asan  build-asan: ASan + UBSan, the unit, e2e and kernel tests
#   tsan  build-tsan: TSan, the kernel tests (the live loop's threads) and
#         the unit tests that start threads
#   fuzz  build-asan again (its libraries are instrumented for libFuzzer
#         too): every fuzz target for SHMBPF_FUZZ_SECONDS (default 15)
# Each builds only the targets it runs. Locally, SHMBPF_SKIP_ASAN=1,
# SHMBPF_SKIP_TSAN=1, SHMBPF_SKIP_FUZZ=1 or SHMBPF_SKIP_SANITIZERS=1 (all
# three) leave layers out; under CI=true every layer runs.
#   scripts/test-sanitizers.sh [asan] [tsan] [fuzz]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."

layers=("$@")
((${#layers[@]})) || layers=(asan tsan fuzz)
skipped() {
  local var="SHMBPF_SKIP_${1^^}"
  [ "${CI:-}" != true ] && { [ "${SHMBPF_SKIP_SANITIZERS:-}" = 1 ] || [ "${!var:-}" = 1 ]; }
}

# -O1: the usual level under sanitizers, and a third faster to compile than
# -O2 (the tests' own code builds at -O0, tests/CMakeLists.txt); line tables
# are all that reports need. No NDEBUG: assertions stay on.
configure() {
  cmake -S . -B "$1" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DSHMBPF_WERROR=ON -DSHMBPF_BUILD_BENCH=OFF "${@:2}" >/dev/null
}

# UBSan's reports with their stacks; a test must not end in a leak either.
export UBSAN_OPTIONS=print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1

for layer in "${layers[@]}"; do
  if skipped "$layer"; then
    echo "== $layer: skipped (SHMBPF_SKIP_*)"
    continue
  fi
  start=$SECONDS
  echo "== $layer"
  case $layer in
  asan)
    configure build-asan -DSHMBPF_FUZZ=ON -DSHMBPF_FUZZ_SECONDS="${SHMBPF_FUZZ_SECONDS:-15}"
    cmake --build build-asan -j"$(nproc)" --target shmbpf shmbpf_unit_tests shmbpf_e2e_tests \
      shmbpf_kernel_tests shmbpf_attack_tests
    (cd build-asan && ctest -L 'unit|e2e|kernel|attack' --output-on-failure --timeout 300 -j2)
    ;;
  tsan)
    configure build-tsan -DSHMBPF_SANITIZE=thread
    cmake --build build-tsan -j"$(nproc)" --target shmbpf_thread_tests shmbpf_kernel_tests
    # One kernel test at a time: TSan slows the consumer several times over,
    # and a second test's bursts would overflow this one's ring buffer.
    # Left out, as TSan cannot run them as written (the plain and asan
    # layers run them):
    # - ProcessEvents.OneExitPerProcess*: a child of the threaded test
    #   process starts threads, which TSan refuses after such a fork
    #   ("starting new threads after multi-threaded fork is not supported").
    # - Monitor.BytesOfAFileWrittenInAContainersShmByAProcessThatExited and
    #   StaleNamespace.*: a child forked from the threaded test process
    #   cannot enter (or make) a mount namespace under TSan.
    # - TmpfsEvents.NewTmpfsMountResolvedAfterCreatorExit: TSan's own thread
    #   in the child exits last, so the exit record carries its comm (the
    #   header is the last thread's, docs/EVENTS.md), not the child's name.
    (cd build-tsan && ctest -L threads --output-on-failure --timeout 300 -j2 &&
      ctest -L kernel --output-on-failure --timeout 300 -j1 \
        -E '^(ProcessEvents\.OneExitPerProcess.*|Monitor\.BytesOfAFileWrittenInAContainersShmByAProcessThatExited|StaleNamespace\..*|TmpfsEvents\.NewTmpfsMountResolvedAfterCreatorExit)$')
    ;;
  fuzz)
    configure build-asan -DSHMBPF_FUZZ=ON -DSHMBPF_FUZZ_SECONDS="${SHMBPF_FUZZ_SECONDS:-15}"
    cmake --build build-asan -j"$(nproc)" --target decode_seeds \
      $(for f in tests/fuzz/*_fuzz.cpp; do basename "$f" .cpp; done)
    (cd build-asan && ctest -L fuzz --output-on-failure -j2)
    ;;
  *)
    echo "unknown layer $layer (asan, tsan, fuzz)" >&2
    exit 2
    ;;
  esac
  echo "== $layer: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
done
