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
# The VM layer after the rest, not beside it: two emulated guests (two
# vCPUs each) next to the host's tests starved a guest into soft lockups
# once. Both runs go to the end; either failing fails the layer. A guest
# kernel that locked up and was booted again is shown at the end.
(
  cd build
  rc=0
  rm -f vm-lockups.log
  ctest --no-tests=error --output-on-failure --timeout 300 -j2 -LE vm || rc=1
  ctest --no-tests=error --output-on-failure --timeout 300 -j2 -L vm || rc=1
  if [ -s vm-lockups.log ]; then
    echo "=== guest kernels that locked up or died booting, and were booted once more (tests/vm/vm.sh):"
    cat vm-lockups.log
  fi
  exit $rc
)
# ASan + UBSan, TSan and fuzz layers, each in a build of its own.
bash scripts/test-sanitizers.sh
