#!/usr/bin/env bash
# The .deb: cpack builds it from this build directory (into a directory of
# its own), then its control fields, its file list and, unpacked with
# dpkg -x, the files themselves: the binary runs and says the version, the
# unit and the rules are the ones in deploy/, a man page per command.
#   package.sh <source dir> <build dir> <shmbpf binary>
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need cpack cmake
need dpkg-deb dpkg
need dpkg-shlibdeps dpkg-dev
need readelf binutils
src=$1 build=$2 binary=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

version=$("$binary" --version | awk '{print $NF}')
arch=$(dpkg --print-architecture)
deb=$tmp/shmbpf_${version}_${arch}.deb
for page in "$build"/man/*.8; do
  [ -e "$page.gz" ] || fail "$page.gz is not built (cmake --build $build builds it)"
done
(cd "$build" && cpack -G DEB -B "$tmp" >"$tmp/cpack.log" 2>&1) || {
  cat "$tmp/cpack.log" >&2
  fail "cpack -G DEB failed"
}
[ -f "$deb" ] || fail "no $(basename "$deb"); cpack made: $(ls "$tmp")"

# Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = shmbpf ] || fail "Package is $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version is $(field Version), not $version"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture is $(field Architecture)"
[ "$(field Section)" = admin ] || fail "Section is $(field Section)"
[ -n "$(field Maintainer)" ] || fail "no Maintainer"
depends=$(field Depends)
# Computed by dpkg-shlibdeps: the package of every library the binary
# links is there.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
sonames=$(readelf -d "$binary" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
[ -n "$sonames" ] || fail "readelf found no library that $binary links"
for so in $sonames; do
  pkg=$(dpkg -S "*/$multiarch/$so" 2>/dev/null | head -1 | cut -d: -f1) ||
    fail "no package has $so"
  [ -n "$pkg" ] || fail "no package has $so"
  tr ',|' '\n' <<<"$depends" | awk '{print $1}' | grep -qxF "$pkg" ||
    fail "Depends lacks $pkg ($so): $depends"
done

# The file list.
list=$(dpkg-deb -c "$deb" | awk '{print $NF}')
want=(./usr/sbin/shmbpf ./lib/systemd/system/shmbpf.service
  ./usr/share/shmbpf/prometheus/shmbpf-rules.yml)
for page in "$src"/docs/man/*.8; do
  want+=("./usr/share/man/man8/$(basename "$page").gz")
done
for f in "${want[@]}"; do
  grep -qxF "$f" <<<"$list" || fail "$f is not in the package:
$list"
done
mode=$(dpkg-deb -c "$deb" | awk '$NF == "./usr/sbin/shmbpf" {print $1}')
[ "$mode" = -rwxr-xr-x ] || fail "/usr/sbin/shmbpf has mode $mode"

# The files, unpacked.
root=$tmp/root
dpkg -x "$deb" "$root"
got=$("$root/usr/sbin/shmbpf" --version) || fail "the packaged binary does not run"
[ "$got" = "shmbpf $version" ] || fail "the packaged binary says '$got'"
cmp "$root/lib/systemd/system/shmbpf.service" "$src/deploy/systemd/shmbpf.service" ||
  fail "the packaged unit is not deploy/systemd/shmbpf.service"
cmp "$root/usr/share/shmbpf/prometheus/shmbpf-rules.yml" \
  "$src/deploy/prometheus/shmbpf-rules.yml" || fail "the packaged rules are not deploy's"
for page in "$root"/usr/share/man/man8/*.gz; do
  zcat "$page" | grep -q "^\.TH .*shmbpf $version" || fail "$page is not a page of shmbpf $version"
done
echo "ok: $(basename "$deb"), $(wc -l <<<"$list") entries, Depends: $depends"
