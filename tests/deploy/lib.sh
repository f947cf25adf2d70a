# shellcheck shell=bash
# Shared by the deploy tests' scripts (sourced). A tool that is missing is a
# skip (ctest's 77) with the reason, and a failure under CI=true, as
# everywhere in shmbpf's tests.
need() {
  local tool=$1 package=$2
  command -v "$tool" >/dev/null 2>&1 && return 0
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $tool is missing (Debian package $package; bash scripts/deps.sh --tests)" >&2
    exit 1
  fi
  echo "SKIP: $tool is missing (Debian package $package; bash scripts/deps.sh --tests)"
  exit 77
}
