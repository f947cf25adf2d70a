#!/bin/sh
# The overhead section inside a VM-layer guest (bench.py --only vm), with
# what the guest has (busybox): every workload untraced, under `shmbpf
# trace` (the full hook set) and under `shmbpf trace --hooks light`, in
# rounds whose order of conditions rotates. A tracer is started fresh for
# each measurement, and the workload runs once it printed its header and
# sat idle for a second; the fastest of SUBRUNS short runs counts. One line
# per measurement:
#   result workload=W cond=C round=R ns_per_op=X lost=L
#
#   overhead.sh SHMBPF BENCH_BIN ROUNDS SUBRUNS NAME=PROGRAM:ITERATIONS...
shmbpf=$1 bin=$2 rounds=$3 subruns=$4
shift 4
work=$(mktemp -d)
echo "kernel $(uname -r)"
# The unrelated workloads' files (/var/tmp): the guest's root is a tmpfs,
# whose files shmbpf watches, so they go on a ramfs, which it does not (the
# host's are on ext4).
mkdir -p /var/tmp
mount -t ramfs ramfs /var/tmp

# The fastest ns_per_op of $subruns runs of PROGRAM with N iterations each.
measure() { # PROGRAM N
  best=
  i=0
  while [ "$i" -lt "$subruns" ]; do
    v=$("$bin/$1" -n "$2" | sed -n 's/.*ns_per_op=\([0-9.]*\).*/\1/p' | tail -n 1)
    if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$v
    fi
    i=$((i + 1))
  done
  echo "$best"
}

# Starts the tracer of condition C (full or light); returns once it printed
# its header, and a second more. Its output after the header is read and
# dropped, as bench.py drops it on the host.
start_tracer() { # C
  : >"$work/out"
  rm -f "$work/fifo"
  mkfifo "$work/fifo"
  {
    head -n 1 >"$work/out"
    cat >/dev/null
  } <"$work/fifo" &
  reader=$!
  "$shmbpf" trace --hooks "$1" >"$work/fifo" 2>"$work/err" &
  tracer=$!
  waited=0
  until [ -s "$work/out" ]; do
    if ! kill -0 "$tracer" 2>/dev/null; then
      echo "error: shmbpf trace --hooks $1 exited: $(cat "$work/err")" >&2
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
    [ "$waited" -lt 300 ] || { echo "error: shmbpf trace --hooks $1 not ready" >&2 && exit 1; }
  done
  sleep 1
}

# Stops it; prints how many records it lost.
stop_tracer() {
  kill -INT "$tracer"
  wait "$tracer"
  wait "$reader"
  sed -n 's/.*shmbpf: [0-9]* events, \([0-9]*\) lost.*/\1/p' "$work/err" | tail -n 1
}

r=0
while [ "$r" -lt "$rounds" ]; do
  case $((r % 3)) in
  0) order="untraced full light" ;;
  1) order="full light untraced" ;;
  2) order="light untraced full" ;;
  esac
  for spec in "$@"; do
    name=${spec%%=*}
    prog=${spec#*=}
    iters=${prog#*:}
    prog=${prog%%:*}
    for c in $order; do
      lost=0
      [ "$c" = untraced ] || start_tracer "$c"
      ns=$(measure "$prog" $((iters / subruns)))
      [ "$c" = untraced ] || lost=$(stop_tracer)
      echo "result workload=$name cond=$c round=$((r + 1)) ns_per_op=$ns lost=${lost:-0}"
    done
  done
  r=$((r + 1))
done
rm -rf "$work"
