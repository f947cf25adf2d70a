#!/usr/bin/env bash
# Fails when a C/C++ source is not clang-formatted (LLVM style for C++,
# kernel style for bpf/ and bench/workloads/, see the .clang-format files).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files 'user/*.cpp' 'user/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'bpf/*.c' 'bpf/*.h' \
  'bench/*.c' 'bench/*.h' 'bench/*.cpp' 'bench/*.hpp')
[ -z "$files" ] || clang-format --dry-run -Werror $files
