#!/usr/bin/env bash
# Installs everything shmbpf needs to build and test on Debian 12 (as root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(
  build-essential cmake pkg-config git     # toolchain
  clang llvm libbpf-dev bpftool            # BPF compiler, libbpf, skeleton generator
  libelf-dev zlib1g-dev                    # libbpf's own link dependencies
  libcli11-dev                             # command line parsing
  libjemalloc-dev                          # allocator with huge pages (user/alloc)
  libgtest-dev nlohmann-json3-dev          # tests (JSON only to parse our NDJSON in tests)
  clang-format                             # style check
  libclang-rt-dev                          # clang's sanitizer runtimes and libFuzzer
  libncurses-dev                           # shmbpf top's terminal UI
  libcpp-httplib-dev                       # shmbpf serve's HTTP (/metrics, /healthz, /readyz)
  prometheus                               # tests: promtool checks what /metrics serves
  tmux                                     # tests: drives shmbpf top in a real terminal
  python3-torch                            # tests: the PyTorch workloads shmbpf exists for
  qemu-system-x86 busybox-static cpio      # tests/vm: Debian's kernels in guests, their initramfs
  xz-utils zstd                            # tests/vm: unpacking those kernels
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
