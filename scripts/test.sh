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
(cd build && ctest --no-tests=error --output-on-failure --timeout 300 -j2)
# ASan + UBSan, TSan and fuzz layers, each in a build of its own.
bash scripts/test-sanitizers.sh
