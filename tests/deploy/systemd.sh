#!/usr/bin/env bash
# deploy/systemd/shmbpf.service as systemd-analyze verify sees it: every
# line it has anything to say about is a failure (it exits 0 on unknown
# keys and bad values, which it ignores). The unit starts /usr/sbin/shmbpf,
# which verify wants to exist: a copy of the unit starts the binary just
# built instead, and its man: references are looked up among the pages
# just built.
#   systemd.sh <source dir> <shmbpf binary> <directory of built man pages>
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need systemd-analyze systemd
need man man-db
src=$1 binary=$2 pages=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unit=$src/deploy/systemd/shmbpf.service
grep -q '^ExecStart=/usr/sbin/shmbpf serve' "$unit" || {
  echo "FAIL: $unit does not start /usr/sbin/shmbpf serve" >&2
  exit 1
}
sed "s|^ExecStart=/usr/sbin/shmbpf |ExecStart=$binary |" "$unit" >"$tmp/shmbpf.service"
mkdir -p "$tmp/man/man8"
cp "$pages"/*.8 "$tmp/man/man8/"
out=$(MANPATH="$tmp/man" systemd-analyze verify --man=yes "$tmp/shmbpf.service" 2>&1) || {
  echo "FAIL: systemd-analyze verify failed:" >&2
  echo "$out" >&2
  exit 1
}
if [ -n "$out" ]; then
  echo "FAIL: systemd-analyze verify has something to say:" >&2
  echo "$out" >&2
  exit 1
fi
# The arguments the unit passes are ones shmbpf takes: every flag one that
# `shmbpf serve --help` lists, every value one it accepts (values are
# checked before --help is obeyed).
args=$(sed -n 's|^ExecStart=/usr/sbin/shmbpf ||p' "$unit")
help=$("$binary" serve --help)
for arg in $args; do
  case $arg in
  -*) grep -Eq "^  (-[a-z],)?$arg( |$)" <<<"$help" || {
    echo "FAIL: shmbpf serve has no $arg (the unit passes it)" >&2
    exit 1
  } ;;
  esac
done
# shellcheck disable=SC2086 # the unit's words, split as systemd splits them
"$binary" $args --help >/dev/null || {
  echo "FAIL: shmbpf refuses the unit's arguments: $args" >&2
  exit 1
}
echo "ok: systemd-analyze verify has nothing to say about shmbpf.service"
