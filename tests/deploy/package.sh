#!/usr/bin/env bash
# The .deb: cpack builds it from this build directory (into a directory of
# its own), then its control fields, its file list and, unpacked with
# dpkg -x, the files themselves: the binary runs and says the version, the
# unit, its default file and the rules are the ones in deploy/, a man page
# per command, the copyright file and the changelog. The control archive
# holds deploy/debian's maintainer scripts and conffiles. lintian has no
# error or warning to give (an override would be in the package, with its
# reason). Then, as root, the package installed for real by dpkg in a
# throwaway copy of this machine's root (an overlay whose changes go with
# the test): install, upgrade, remove and purge, once as where systemd
# does not run (a chroot, a container image: no systemctl at all) and once
# as where it does (a /run/systemd/system, and systemctl and
# deb-systemd-invoke that only record their arguments).
#   package.sh <source dir> <build dir> <shmbpf binary>
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need cpack cmake
need dpkg-deb dpkg
need dpkg-shlibdeps dpkg-dev
need readelf binutils
need lintian lintian
src=$1 build=$2 binary=$3
tmp=$(mktemp -d)
trap 'rm -rf --one-file-system "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The binary's architecture, the package's: a cross build's (arm64,
# cmake/aarch64.cmake) is not this machine's, and runs under qemu-user.
case "$(readelf -h "$binary" | sed -n 's/^ *Machine: *//p')" in
"Advanced Micro Devices X86-64") arch=amd64 ;;
AArch64) arch=arm64 ;;
*) fail "$binary is for an architecture this test does not know: $(readelf -h "$binary" | grep Machine)" ;;
esac
run=()
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
  [ "$arch" = arm64 ] || fail "no emulator for an $arch binary on this $(dpkg --print-architecture) machine"
  need qemu-aarch64 qemu-user
  run=(qemu-aarch64)
fi
# "shmbpf 0.1.0", then perhaps the revision it was built from.
version=$("${run[@]}" "$binary" --version | awk '{print $2}')
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
multiarch=$(dpkg-architecture -a"$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)
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
want=(./usr/sbin/shmbpf ./lib/systemd/system/shmbpf.service ./etc/default/shmbpf
  ./usr/share/shmbpf/prometheus/shmbpf-rules.yml ./usr/share/doc/shmbpf/copyright
  ./usr/share/doc/shmbpf/changelog.gz ./usr/share/bash-completion/completions/shmbpf
  ./usr/share/zsh/vendor-completions/_shmbpf ./usr/share/fish/vendor_completions.d/shmbpf.fish)
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
got=$("${run[@]}" "$root/usr/sbin/shmbpf" --version) || fail "the packaged binary does not run"
[ "$(awk '{print $1, $2}' <<<"$got")" = "shmbpf $version" ] || fail "the packaged binary says '$got'"
cmp "$root/lib/systemd/system/shmbpf.service" "$src/deploy/systemd/shmbpf.service" ||
  fail "the packaged unit is not deploy/systemd/shmbpf.service"
cmp "$root/usr/share/shmbpf/prometheus/shmbpf-rules.yml" \
  "$src/deploy/prometheus/shmbpf-rules.yml" || fail "the packaged rules are not deploy's"
for page in "$root"/usr/share/man/man8/*.gz; do
  zcat "$page" | grep -q "^\.TH .*shmbpf $version" || fail "$page is not a page of shmbpf $version"
done
cmp "$root/etc/default/shmbpf" "$src/deploy/systemd/shmbpf.default" ||
  fail "the packaged /etc/default/shmbpf is not deploy/systemd/shmbpf.default"
tr ',' '\n' <<<"$depends" | awk '{print $1}' | grep -qx adduser ||
  fail "Depends lacks adduser (the postinst's addgroup): $depends"

# The copyright file: deploy/debian's, machine-readable (DEP-5), every
# license it names spelled out in a paragraph of its own.
copyright=$root/usr/share/doc/shmbpf/copyright
cmp "$copyright" "$src/deploy/debian/copyright" || fail "the packaged copyright is not deploy/debian's"
[ "$(head -1 "$copyright")" = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ] ||
  fail "the copyright file is not DEP-5: $(head -1 "$copyright")"
named=$(sed -n 's/^License: //p' "$copyright" | sed 's/ or /\n/g; s/ and /\n/g' | sort -u)
spelled=$(awk '/^License: / && !/ or | and / {l = $2; next} l && /^ / {print l; l = ""} /^$/ {l = ""}' \
  "$copyright" | sort -u)
[ "$named" = "$spelled" ] || fail "the copyright file names licenses it does not spell out:
named: $(tr '\n' ' ' <<<"$named")
spelled out: $(tr '\n' ' ' <<<"$spelled")"

# The changelog: deploy/debian's, compressed without a name or a time (the
# same bytes from two builds), its last entry this version. A native
# package's is changelog.gz.
changelog=$root/usr/share/doc/shmbpf/changelog.gz
zcat "$changelog" | cmp - "$src/deploy/debian/changelog" || fail "the packaged changelog is not deploy/debian's"
[ "$(od -An -tu1 -j3 -N5 "$changelog" | tr -s ' ')" = " 0 0 0 0 0" ] ||
  fail "changelog.gz keeps a name or a time (gzip -n)"
zcat "$changelog" >"$tmp/changelog"
logged=$(dpkg-parsechangelog -l "$tmp/changelog" -S Version) || fail "dpkg-parsechangelog cannot read the changelog"
[ "$logged" = "$version" ] ||
  fail "the changelog's last entry is $logged, the package $version: add an entry to deploy/debian/changelog"

# The control archive: deploy/debian's scripts, executable and valid sh,
# and the default file a conffile.
dpkg-deb -e "$deb" "$tmp/control"
for script in postinst prerm postrm; do
  cmp "$tmp/control/$script" "$src/deploy/debian/$script" ||
    fail "the package's $script is not deploy/debian/$script"
  [ "$(stat -c %a "$tmp/control/$script")" = 755 ] || fail "$script has mode $(stat -c %a "$tmp/control/$script")"
  sh -n "$tmp/control/$script" || fail "$script is not valid sh"
done
[ "$(cat "$tmp/control/conffiles")" = /etc/default/shmbpf ] ||
  fail "conffiles is not /etc/default/shmbpf: $(cat "$tmp/control/conffiles")"

# lintian: no error, no warning (an info is not counted). Overridden tags
# are not shown; the overrides would be the package's.
lintian --fail-on error,warning "$deb" >"$tmp/lintian.log" 2>&1 || true
if grep -E '^[EW]: ' "$tmp/lintian.log" >"$tmp/lintian.bad"; then
  fail "lintian:
$(cat "$tmp/lintian.bad")"
fi
echo "ok: $(basename "$deb"), $(wc -l <<<"$list") entries, Depends: $depends; lintian: no error or warning"

# Installed for real: as root, in an overlay of this machine's root (which
# has the .deb's Depends: the binary was linked against them here), in a
# mount namespace of the test's own, so that nothing it writes (dpkg's
# database, /etc/group, /var/lib/shmbpf) reaches the machine.
if [ "$(id -u)" != 0 ]; then
  if [ "${CI:-}" = true ]; then
    fail "installing the .deb in a throwaway root needs root"
  fi
  echo "SKIP: installing the .deb in a throwaway root needs root (the checks above passed)"
  exit 77
fi
need unshare util-linux
for dir in /etc /usr /var; do
  [ "$(stat -c %m "$dir")" = / ] || {
    [ "${CI:-}" = true ] && fail "$dir is a mount of its own: an overlay of / would not have it"
    echo "SKIP: $dir is a mount of its own: an overlay of / would not have it (the checks above passed)"
    exit 77
  }
done
cp "$deb" "$tmp/shmbpf.deb"
# In the namespace: $1 the test's directory. Prints what it checked; fails
# with the step that went wrong.
# shellcheck disable=SC2317 # called through declare -f, in unshare's bash
install_in_overlay() {
  set -euo pipefail
  local t=$1 r=$1/overlay/root left
  fail() {
    echo "FAIL: $*" >&2
    exit 1
  }
  mkdir -p "$t/overlay"
  mount -t tmpfs tmpfs "$t/overlay"
  mkdir "$t/overlay/upper" "$t/overlay/work" "$r"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$t/overlay/upper,workdir=$t/overlay/work" "$r" || {
    echo "no overlay of / here (mount -t overlay failed)"
    exit 77
  }
  mount --rbind /dev "$r/dev"
  mount -t proc proc "$r/proc"
  # A /run and a /tmp of its own: empty, so no /run/systemd/system.
  mount -t tmpfs tmpfs "$r/run"
  mount -t tmpfs tmpfs "$r/tmp"
  cp "$t/shmbpf.deb" "$r/tmp/"
  in_root() { chroot "$r" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
  dpkg_() { in_root dpkg "$@" >>"$t/dpkg.log" 2>&1 || { cat "$t/dpkg.log" >&2; fail "dpkg $*"; }; }
  # A first install: no shmbpf, no group shmbpf here before. man-db's
  # trigger is left out (it would reindex every page).
  if in_root dpkg-query -W shmbpf >/dev/null 2>&1; then dpkg_ --purge shmbpf; fi
  if in_root getent group shmbpf >/dev/null; then in_root groupdel shmbpf; fi
  rm -f "$r/var/lib/man-db/auto-update"
  # systemctl and deb-systemd-invoke that only record what they are asked.
  local fake
  for fake in systemctl deb-systemd-invoke; do
    printf '#!/bin/sh\necho "%s $*" >>/tmp/calls\n' "$fake" >"$r/usr/local/sbin/$fake"
    chmod 755 "$r/usr/local/sbin/$fake"
  done
  calls() { cat "$r/tmp/calls" 2>/dev/null || true; }
  enabled=$r/etc/systemd/system/multi-user.target.wants/shmbpf.service

  # 1. Where systemd does not run.
  dpkg_ --install /tmp/shmbpf.deb
  local group gid
  group=$(in_root getent group shmbpf) || fail "the postinst made no group shmbpf"
  gid=$(cut -d: -f3 <<<"$group")
  ((gid < 1000)) || fail "the group shmbpf is no system group: $group"
  [ ! -e "$enabled" ] || fail "the install enabled the unit"
  local conffiles
  # shellcheck disable=SC2016 # dpkg-query's ${field}, not the shell's
  conffiles=$(in_root dpkg-query -W -f='${Conffiles}' shmbpf)
  grep -q '^ /etc/default/shmbpf [0-9a-f]\{32\}$' <<<"$conffiles" ||
    fail "dpkg does not hold /etc/default/shmbpf as a conffile: $conffiles"
  echo 'SHMBPF_ARGS="--listen 127.0.0.1:19799"' >>"$r/etc/default/shmbpf"
  dpkg_ --install /tmp/shmbpf.deb # an upgrade: the scripts with a version before
  [ "$(in_root getent group shmbpf)" = "$group" ] || fail "the upgrade changed the group: $(in_root getent group shmbpf)"
  tail -1 "$r/etc/default/shmbpf" | grep -q 19799 || fail "the upgrade did not keep a changed /etc/default/shmbpf"
  # As if the admin had enabled the unit (the link systemctl enable makes)
  # and it had run.
  mkdir -p "$(dirname "$enabled")" "$r/var/lib/shmbpf" "$r/var/log/shmbpf"
  ln -sf /lib/systemd/system/shmbpf.service "$enabled"
  touch "$r/var/lib/shmbpf/state" "$r/var/log/shmbpf/events.ndjson"
  dpkg_ --remove shmbpf
  for left in /etc/default/shmbpf /var/lib/shmbpf/state "${enabled#"$r"}"; do
    [ -e "$r$left" ] || [ -L "$r$left" ] || fail "the removal took $left, which only a purge takes"
  done
  dpkg_ --purge shmbpf
  for left in /etc/default/shmbpf /var/lib/shmbpf /var/log/shmbpf; do
    [ ! -e "$r$left" ] || fail "the purge left $left"
  done
  [ ! -L "$enabled" ] || fail "the purge left the link of the admin's enable"
  in_root getent group shmbpf >/dev/null || fail "the purge removed the group (system groups stay)"
  [ -z "$(calls)" ] || fail "without systemd running, the scripts called: $(calls)"
  echo "ok: no systemd: install (group shmbpf $gid, the unit not enabled, a conffile), upgrade (the group and a changed conffile kept), remove, purge (state, logs, the conffile and the enable's link gone)"

  # 2. Where systemd runs: what the scripts ask of it, step by step.
  mkdir -p "$r/run/systemd/system"
  expect() {
    local step=$1 asked=$2
    shift 2
    rm -f "$r/tmp/calls"
    dpkg_ "$@"
    [ "$(calls)" = "$asked" ] || fail "with systemd running, the $step called:
$(calls)
not:
$asked"
  }
  expect install "systemctl --system daemon-reload" --install /tmp/shmbpf.deb
  expect upgrade "systemctl --system daemon-reload
deb-systemd-invoke try-restart shmbpf.service" --install /tmp/shmbpf.deb
  expect removal "deb-systemd-invoke stop shmbpf.service
systemctl --system daemon-reload" --remove shmbpf
  expect purge "systemctl --system daemon-reload" --purge shmbpf
  echo "ok: systemd running: install (daemon-reload, nothing started), upgrade (try-restart), remove (stop), purge (daemon-reload)"
}
rc=0
unshare --mount --propagation private -- bash -c "$(declare -f install_in_overlay); install_in_overlay \"\$1\"" \
  _ "$tmp" >"$tmp/install.log" 2>&1 || rc=$?
cat "$tmp/install.log"
if [ "$rc" = 77 ]; then
  [ "${CI:-}" = true ] && fail "the .deb could not be installed in a throwaway root"
  echo "SKIP: the .deb could not be installed in a throwaway root (the checks above passed)"
  exit 77
fi
exit "$rc"
