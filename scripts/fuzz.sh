#!/usr/bin/env bash
# Runs every fuzz target of tests/fuzz (or the NAMEs given) for SECONDS each
# (default 300), two at a time, from the seeds in tests/fuzz/corpus plus what
# earlier runs found (kept in build-asan, the build that the asan and fuzz
# layers of scripts/test-sanitizers.sh share, configured as they do). A
# crash or a broken check stops that target and leaves its input as
# build-asan/tests/fuzz/<name>-crash-*: reproduce with
# build-asan/tests/fuzz/<name>_fuzz <that file>.
#   scripts/fuzz.sh [SECONDS] [NAME...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
shift || true
cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DSHMBPF_WERROR=ON -DSHMBPF_BUILD_BENCH=OFF -DSHMBPF_FUZZ=ON >/dev/null
names=("$@")
if ((${#names[@]} == 0)); then
  for f in tests/fuzz/*_fuzz.cpp; do
    n=$(basename "$f" _fuzz.cpp)
    names+=("$n")
  done
fi
cmake --build build-asan -j"$(nproc)" --target decode_seeds "${names[@]/%/_fuzz}"
out=build-asan/tests/fuzz
"$out/decode_seeds" "$out/corpus/decode"
run() {
  local n=$1
  mkdir -p "$out/corpus/$n"
  local seeds=()
  [ -d "tests/fuzz/corpus/$n" ] && seeds=("tests/fuzz/corpus/$n") # decode's are made at build time
  "$out/${n}_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/$n-" "$out/corpus/$n" "${seeds[@]}" \
    >"$out/$n.log" 2>&1 && echo "$n: ok" || { echo "$n: FAILED, see $out/$n.log"; return 1; }
}
export -f run
export out seconds
printf '%s\n' "${names[@]}" | xargs -P2 -I{} bash -c 'run {}'
