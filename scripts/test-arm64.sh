#!/usr/bin/env bash
# The arm64 layer: the cross build (cmake/aarch64.cmake, in build-arm64/)
# of the binary, the kernel tests and the trace check, warning-free; its
# .deb checked as the native one is (package.deb: the binary run under
# qemu-user); then the guests: Debian's arm64 kernels booted under
# qemu-system-aarch64 (ctest -L vm). scripts/test.sh runs it after the
# x86-64 guests, on its own for the same reason; alone, after
# `bash scripts/deps.sh --tests`:
#   bash scripts/test-arm64.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# Without debug info, which compiles a fifth faster: the guests and the
# package take stripped copies.
cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHMBPF_WERROR=ON \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -DNDEBUG"
# What the package and the guests take: not the host's test layers.
cmake --build build-arm64 -j"$(nproc)" --target shmbpf shmbpf_man shmbpf_changelog \
  shmbpf_completion shmbpf_kernel_tests shmbpf_vm_trace_check
cd build-arm64
rm -f vm-lockups.log
rc=0
ctest --no-tests=error --output-on-failure --timeout 300 -j2 -L 'vm|package' 2>&1 |
  tee arm64-layer.log || rc=1
bash ../scripts/layer-report.sh $rc "the arm64 layer" arm64-layer.log
