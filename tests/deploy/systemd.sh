#!/usr/bin/env bash
# deploy/systemd/shmbpf.service as systemd-analyze verify sees it: every
# line it has anything to say about is a failure (it exits 0 on unknown
# keys and bad values, which it ignores). The unit starts /usr/sbin/shmbpf,
# which verify wants to exist: a copy of the unit starts the binary just
# built instead, and its man: references are looked up among the pages
# just built. Its sandbox as systemd-analyze security rates it: an overall
# exposure of 4.0 at most. Its arguments, $SHMBPF_ARGS: the unit's default
# and /etc/default/shmbpf's (deploy/systemd/shmbpf.default) the same, and
# every option either names, in its value or its comments, one that
# `shmbpf serve --help` lists; the directories the unit lets it write are
# serve's defaults.
#   systemd.sh <source dir> <shmbpf binary> <directory of built man pages>
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need systemd-analyze systemd
need man man-db
src=$1 binary=$2 pages=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
unit=$src/deploy/systemd/shmbpf.service
defaults=$src/deploy/systemd/shmbpf.default
# shellcheck disable=SC2016 # systemd's $SHMBPF_ARGS, not the shell's
grep -qx 'ExecStart=/usr/sbin/shmbpf serve $SHMBPF_ARGS' "$unit" ||
  fail "$unit does not start /usr/sbin/shmbpf serve \$SHMBPF_ARGS"
grep -qx 'EnvironmentFile=-/etc/default/shmbpf' "$unit" ||
  fail "$unit does not read /etc/default/shmbpf (EnvironmentFile=-/etc/default/shmbpf)"
sed "s|^ExecStart=/usr/sbin/shmbpf |ExecStart=$binary |" "$unit" >"$tmp/shmbpf.service"
mkdir -p "$tmp/man/man8"
cp "$pages"/*.8 "$tmp/man/man8/"
out=$(MANPATH="$tmp/man" systemd-analyze verify --man=yes "$tmp/shmbpf.service" 2>&1) ||
  fail "systemd-analyze verify failed:
$out"
[ -z "$out" ] || fail "systemd-analyze verify has something to say:
$out"
# The sandbox: systemd-analyze security's overall exposure (0 to 10; the
# unit as it was before its sandbox was raised rated 5.5), from the file
# alone (--offline), at most 4.0.
security=$(systemd-analyze security --offline=true --no-pager "$tmp/shmbpf.service" 2>&1) || {
  echo "$security" >&2
  fail "systemd-analyze security --offline=true failed"
}
exposure=$(sed -n 's/^→ Overall exposure level for shmbpf.service: \([0-9.]*\).*/\1/p' <<<"$security")
[ -n "$exposure" ] || fail "systemd-analyze security gave no overall exposure:
$security"
awk -v e="$exposure" 'BEGIN {exit !(e <= 4.0)}' || fail "the unit's exposure is $exposure, over 4.0:
$(grep '✗' <<<"$security")"

# The arguments: the unit's default and the default file's are the same,
# and are ones shmbpf takes, every value one it accepts (values are checked
# before --help is obeyed). The file's value is one double-quoted line,
# which systemd and a shell read alike.
unit_args=$(sed -n 's|^Environment="SHMBPF_ARGS=\(.*\)"$|\1|p' "$unit")
[ -n "$unit_args" ] || fail "$unit has no default SHMBPF_ARGS (Environment=\"SHMBPF_ARGS=...\")"
file_args=$(sed -n 's|^SHMBPF_ARGS="\([^"]*\)"$|\1|p' "$defaults")
if [ "$(grep -c '^[^#]' "$defaults")" != 1 ] || [ -z "$file_args" ]; then
  fail "$defaults sets more than SHMBPF_ARGS=\"...\" on one line"
fi
[ "$unit_args" = "$file_args" ] ||
  fail "the unit's default SHMBPF_ARGS ($unit_args) is not the default file's ($file_args)"
help=$("$binary" serve --help)
# Its options and those its comments list (a line of its own each).
listed=$(sed -n 's/^#  *\(--[a-z][a-z0-9-]*\).*/\1/p' "$defaults")
[ -n "$listed" ] || fail "$defaults lists no option in its comments"
# shellcheck disable=SC2086 # words, split as systemd splits them
for arg in $(printf '%s\n' $file_args $listed | grep -- '^--' | sort -u); do
  grep -Eq "^  (-[a-z],)?$arg( |$)" <<<"$help" ||
    fail "shmbpf serve has no $arg (the default file names it)"
done
# shellcheck disable=SC2086 # the words, split as systemd splits $SHMBPF_ARGS
"$binary" serve $file_args --help >/dev/null || fail "shmbpf refuses the default arguments: $file_args"

# What the unit lets it write (ProtectSystem=strict) is where serve writes
# by default: its state and socket; and where the file puts an export.
unit_dir() { sed -n "s/^$1=//p" "$unit"; }
default_of() { grep -E "^  $1 " <<<"$help" | sed -n 's/.*=\([^ ]*\).*/\1/p' | head -1; }
[ "$(default_of --state-dir)" = "/var/lib/$(unit_dir StateDirectory)" ] ||
  fail "serve keeps its state in $(default_of --state-dir), the unit's StateDirectory is $(unit_dir StateDirectory)"
[ "$(dirname "$(default_of --socket)")" = "/run/$(unit_dir RuntimeDirectory)" ] ||
  fail "serve's socket is $(default_of --socket), the unit's RuntimeDirectory is $(unit_dir RuntimeDirectory)"
export_dir=$(grep -oE -- '--export-file /[^ ]*' "$defaults" | awk '{print $2}' | xargs -r dirname | sort -u)
[ -z "$export_dir" ] || [ "$export_dir" = "/var/log/$(unit_dir LogsDirectory)" ] ||
  fail "the default file's --export-file is in $export_dir, the unit's LogsDirectory is $(unit_dir LogsDirectory)"
echo "ok: systemd-analyze verify has nothing to say about shmbpf.service; exposure $exposure; SHMBPF_ARGS $file_args"
