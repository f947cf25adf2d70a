#!/usr/bin/env bash
# What a layer's run leaves to say, in its build directory after ctest:
# the guest kernels that locked up or died booting and were booted once
# more (tests/vm/vm.sh writes them to vm-lockups.log), then, when the layer
# failed, what failed in short (scripts/failure-digest.sh), where a reader
# of a long CI log looks first. Exits with the layer's status.
#   layer-report.sh STATUS NAME LOG...
set -uo pipefail
rc=$1 name=$2
shift 2
if [ -s vm-lockups.log ]; then
  echo "=== $name: guest kernels that locked up or died booting, and were booted once more (tests/vm/vm.sh):"
  cat vm-lockups.log
fi
if [ "$rc" -ne 0 ]; then
  echo "=== $name: what failed, in short (the whole output is above):"
  bash "$(dirname "$0")/failure-digest.sh" "$@"
fi
exit "$rc"
