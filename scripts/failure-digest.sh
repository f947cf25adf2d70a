#!/usr/bin/env bash
# What failed in ctest logs, in short: the failed tests, the failed steps of
# a guest's check, each GoogleTest failure with its message, and the VM
# harness's errors. scripts/test.sh prints it last, where a reader of a long
# CI log looks first.
#
#   scripts/failure-digest.sh LOG...
set -uo pipefail
for log in "$@"; do
  [ -s "$log" ] || continue
  awk -v max=120 '
    function out(s) { if (n++ < max) print s }
    /\*\*\*(Failed|Timeout|Exception)/ || /^=== .*: FAIL/ || /^vm: (error|.*locked up|.*died)/ ||
      /\[  FAILED  \]/ { out($0); more = 0; next }
    / Failure$/ { out($0); more = 8; next }
    more > 0 { out("    " $0); more--; next }
    END { if (n > max) print "(" n - max " more lines)" }
  ' "$log"
done
