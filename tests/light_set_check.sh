#!/bin/sh
# Every pattern of a light-set list (tests/*/light_set.txt) names at least
# one test of the binary: a test renamed or removed must not drop silently
# out of the light set's reruns.
#
#   light_set_check.sh TEST_BINARY LIST
binary=$1
list=$2
status=0
while IFS= read -r pattern; do
  case $pattern in "" | "#"*) continue ;; esac
  name=${pattern#-}
  if ! "$binary" --gtest_list_tests "--gtest_filter=$name" | grep -q '^  '; then
    echo "$list: '$pattern' matches no test of $(basename "$binary")"
    status=1
  fi
done <"$list"
[ "$status" = 0 ] && echo "every pattern of $list names a test"
exit "$status"
