#!/usr/bin/env bash
# shmbpf completion bash|zsh|fish, in the shells themselves: each script
# parses; bash's and fish's complete commands, options and the values an
# option is limited to as a user's Tab would; every option of every
# command's --help is offered. zsh's completion system needs a terminal:
# its script is parsed and checked for every option.
#   completion.sh <shmbpf binary>
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need zsh zsh
need fish fish
binary=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
for shell in bash zsh fish; do
  "$binary" completion "$shell" >"$tmp/$shell" || fail "shmbpf completion $shell failed"
done
bash -n "$tmp/bash" || fail "the bash script does not parse"
zsh -n "$tmp/zsh" || fail "the zsh script does not parse"
fish -n "$tmp/fish" || fail "the fish script does not parse"
head -1 "$tmp/zsh" | grep -qx '#compdef shmbpf' || fail "the zsh script does not start with #compdef"
if "$binary" completion tcsh >"$tmp/out" 2>"$tmp/err"; then
  fail "completion tcsh succeeded"
fi
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "completion tcsh: not one line: $(cat "$tmp/err")"

# What bash offers for a command line whose last word is being completed.
bash_offers() {
  bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _shmbpf
    printf "%s\n" "${COMPREPLY[@]}"' _ "$tmp/bash" "$@"
}
fish_offers() { fish -c "source $tmp/fish; complete -C '$1'" | cut -f1; }
expect() { # what, offered words, wanted words...
  local what=$1 got=$2
  shift 2
  for w in "$@"; do
    grep -qxF -- "$w" <<<"$got" || fail "$what: no $w in: $(tr '\n' ' ' <<<"$got")"
  done
}
expect "bash: shmbpf se" "$(bash_offers shmbpf se)" serve
expect "bash: shmbpf serve --lo" "$(bash_offers shmbpf serve --lo)" --log-format --log-level
expect "bash: shmbpf serve --hooks" "$(bash_offers shmbpf serve --hooks '')" full light auto
expect "bash: shmbpf ls --by" "$(bash_offers shmbpf ls --by '')" segments process container mount
expect "bash: shmbpf completion" "$(bash_offers shmbpf completion '')" bash zsh fish
[ -z "$(bash_offers shmbpf serve --hooks x)" ] || fail "bash offers a hook set starting with x"
expect "fish: shmbpf se" "$(fish_offers 'shmbpf se')" serve
expect "fish: shmbpf serve --log-f" "$(fish_offers 'shmbpf serve --log-f')" --log-format
expect "fish: shmbpf serve --log-level " "$(fish_offers 'shmbpf serve --log-level ')" \
  debug info warn error
expect "fish: shmbpf top -" "$(fish_offers 'shmbpf top -')" --by --server

# Every option of every command's --help, in each script.
commands=$("$binary" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}')
[ -n "$commands" ] || fail "no command in shmbpf --help"
for cmd in $commands; do
  # The options' lines: "  --name ..." or "  -x,--name ...".
  options=$("$binary" "$cmd" --help | grep -oE '^  +(-[a-zA-Z],)?--[a-z][a-z0-9-]*' |
    sed 's/.*--/--/' | sort -u)
  [ -n "$options" ] || fail "no option in shmbpf $cmd --help"
  offered=$(bash_offers shmbpf "$cmd" -)
  for o in $options; do
    grep -qxF -- "$o" <<<"$offered" || fail "bash: shmbpf $cmd - does not offer $o"
    grep -qF -- "$o" "$tmp/zsh" || fail "zsh: no $o for $cmd"
    grep -q -- "from $cmd' .*-l ${o#--}\b" "$tmp/fish" || fail "fish: no $o for $cmd"
  done
done
echo "ok: bash, zsh and fish complete $(wc -w <<<"$commands") commands and all their options"
