#!/usr/bin/env bash
# Builds shmbpf warning-free and runs every test (unit, kernel, e2e) with
# ctest, then again under the sanitizers, then the fuzz targets (README,
# Tests). Kernel and e2e tests load real BPF programs: run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --tests
bash scripts/check-format.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHMBPF_WERROR=ON
cmake --build build -j"$(nproc)"
# Another shmbpf runs beside the host's tests, as an agent does on a node
# while someone tests or looks: nothing may depend on being alone. It has
# a port, socket and state of its own, and must still be running, and stop
# cleanly, when the tests are done. SHMBPF_SKIP_NEIGHBOUR=1 leaves it out
# (ignored under CI=true).
neighbour_dir=$(mktemp -d /tmp/shmbpf-neighbour-XXXXXX)
trap 'rm -rf "$neighbour_dir"' EXIT
start_neighbour() {
  build/shmbpf serve --listen 127.0.0.1:19747 --socket "$neighbour_dir/sock" \
    --state-dir "$neighbour_dir/state" >"$neighbour_dir/log" 2>&1 &
  neighbour=$!
  for _ in $(seq 600); do
    grep -q ' ready: ' "$neighbour_dir/log" && return 0
    kill -0 $neighbour 2>/dev/null || break
    sleep 0.1
  done
  echo "=== the shmbpf serve beside the tests did not start:" >&2
  cat "$neighbour_dir/log" >&2
  return 1
}
stop_neighbour() {
  if ! kill -TERM $neighbour 2>/dev/null; then
    echo "=== the shmbpf serve beside the tests died during them:" >&2
    cat "$neighbour_dir/log" >&2
    return 1
  fi
  local st=0
  wait $neighbour || st=$?
  if [ $st -ne 0 ]; then
    echo "=== the shmbpf serve beside the tests stopped with status $st:" >&2
    cat "$neighbour_dir/log" >&2
    return 1
  fi
}
neighbour_wanted=true
[ "${CI:-}" != true ] && [ "${SHMBPF_SKIP_NEIGHBOUR:-}" = 1 ] && neighbour_wanted=false
# The VM layer after the rest, not beside it: two emulated guests (two
# vCPUs each) next to the host's tests starved a guest into soft lockups
# once. Both runs go to the end; either failing fails the layer. A guest
# kernel that locked up and was booted again is shown at the end, and last
# of all, when anything failed, what failed in short.
(
  rc=0
  if $neighbour_wanted; then
    start_neighbour || exit 1
    trap 'kill $neighbour 2>/dev/null || true' EXIT
  fi
  cd build
  rm -f vm-lockups.log
  ctest --no-tests=error --output-on-failure --timeout 300 -j2 -LE vm 2>&1 |
    tee host-layers.log || rc=1
  cd ..
  if $neighbour_wanted; then stop_neighbour || rc=1; fi
  cd build
  ctest --no-tests=error --output-on-failure --timeout 300 -j2 -L vm 2>&1 |
    tee vm-layer.log || rc=1
  bash ../scripts/layer-report.sh $rc "the plain layers" host-layers.log vm-layer.log
)
# The arm64 layer: the cross build, its .deb and Debian's arm64 kernels
# under emulation, after the x86-64 guests for the same reason they run
# alone.
bash scripts/test-arm64.sh
# ASan + UBSan, TSan and fuzz layers, each in a build of its own.
bash scripts/test-sanitizers.sh
