#!/usr/bin/env bash
# Fails when a C/C++ source is not clang-formatted (LLVM style for C++,
# kernel style for bpf/, see the .clang-format files).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files 'user/*.cpp' 'user/*.hpp' 'tests/*.cpp' 'tests/*.hpp' 'bpf/*.c' 'bpf/*.h')
[ -z "$files" ] || clang-format --dry-run -Werror $files
