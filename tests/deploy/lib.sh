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

# The root-needing scripts' verdicts: a missing means is a skip outside CI
# and a failure under CI=true; a wrong result is always a failure.
unable() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Each step's seconds, printed as it ends ("time: ..."); timings keeps them
# for the summary at the end.
timings=()
last=${EPOCHREALTIME/./}
start=$last
took() {
  local now=${EPOCHREALTIME/./} line
  line=$(printf 'time: %-44s %6d.%01d s' "$1" $(((now - last) / 1000000)) \
    $(((now - last) % 1000000 / 100000)))
  echo "$line"
  timings+=("$line")
  last=$now
}

# The .deb as package.deb makes it: cpack of the build directory $1 into
# $2, for the version $3; sets deb to its path.
make_deb() {
  local build=$1 dir=$2 version=$3
  (cd "$build" && cpack -G DEB -B "$dir" >"$dir.cpack.log" 2>&1) || {
    cat "$dir.cpack.log" >&2
    fail "cpack -G DEB failed"
  }
  deb=$(echo "$dir"/shmbpf_"$version"_*.deb)
  [ -f "$deb" ] || fail "cpack made no shmbpf_${version}_*.deb: $(ls "$dir")"
  took "cpack -G DEB"
}

# What an mmdebstrap of Debian $1 with the .deb $2's dependencies needs,
# from the mirrors and settings apt uses here: appends the .deb's Depends
# (their first alternatives) to include, and sets sources (sources.list
# lines) and aptopts (--aptopt arguments).
debian_root_inputs() {
  local suite=$1 deb=$2 opt value
  mapfile -t -O "${#include[@]}" include < <(dpkg-deb -f "$deb" Depends | tr ',' '\n' |
    sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' | grep . | sort -u)
  # shellcheck disable=SC2016 # apt's $(FIELD)s, not the shell's
  sources=$(apt-get indextargets --format '$(TARGET_OF) $(IDENTIFIER) $(REPO_URI) $(RELEASE) $(COMPONENT)' |
    awk -v s="$suite" '$1 == "deb" && $2 == "Packages" && ($4 == s || index($4, s "-") == 1) {
      print "deb " $3 " " $4 " " $5 }' | sort -u)
  [ -n "$sources" ] || unable "apt has no source for Debian $suite (apt-get indextargets)"
  aptopts=()
  for opt in Acquire::Check-Valid-Until Acquire::Check-Date Acquire::http::Proxy; do
    value=$(apt-config dump "$opt" | awk -v o="$opt" '$1 == o {print $2}' | tr -d '";')
    [ -n "$value" ] && aptopts+=("--aptopt=$opt \"$value\"")
  done
  return 0
}
