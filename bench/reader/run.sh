#!/usr/bin/env bash
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Reader throughput: `ljprof report` on synthetic memprof streams of
# allocation churn (gen_churn.c). Prints two Markdown tables; asserts
# nothing.
#
#   bench/reader/run.sh LJPROF WORK_DIR
#
# Streams (made once, kept in WORK_DIR): `typical`, a program with about
# two thousand allocation sites, and `many-sites`, a worst case of some 120
# thousand sites. Each is reported RUNS times (default 3); the first table
# gives the median time and the median peak RSS, from /usr/bin/time -v.
# STREAM_MB sets the stream size (default 160 MiB).
#
# The second table counts the instructions of one report of each kind on a
# smaller stream (CALLGRIND_MB, default 16 MiB), under valgrind's callgrind:
# all threads', the whole run (reading, aggregating, the report), per event.
# Unlike time, the count is the same at every run on a busy machine.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 LJPROF WORK_DIR" >&2
  exit 2
fi
ljprof=$1
work=$2
runs=${RUNS:-3}
mb=${STREAM_MB:-160}
here=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$work"
gen="$work/gen-churn"
if [ ! -x "$gen" ] || [ "$here/gen_churn.c" -nt "$gen" ]; then
  ${CC:-cc} -std=c11 -Wall -Wextra -O2 -o "$gen" "$here/gen_churn.c"
fi

# The median of numbers, one a line.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The stream of a kind and size (made once), its name in $stream and its
# event count in $events.
make_stream() {
  stream="$work/churn-$1-$2m.bin"
  if [ ! -s "$stream" ] || [ "$gen" -nt "$stream" ]; then
    "$gen" -k "$1" -s "$2" > "$stream" 2> "$stream.log"
  fi
  # gen-churn (KIND): BYTES bytes, EVENTS events, LIVE blocks live
  events=$(awk '{ print $5 }' "$stream.log")
}

echo "| stream | size MB | events | seconds | MB/s | events/s | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for kind in typical many-sites; do
  make_stream "$kind" "$mb"
  bytes=$(stat -c %s "$stream")
  : > "$work/times"
  : > "$work/rss"
  for _ in $(seq "$runs"); do
    /usr/bin/time -v -o "$work/time-v" "$ljprof" report "$stream" > /dev/null
    awk -F': ' '/Elapsed \(wall clock\)/ {
        n = split($2, t, ":"); s = 0
        for (i = 1; i <= n; i++) s = s * 60 + t[i]
        print s }' "$work/time-v" >> "$work/times"
    awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time-v" >> "$work/rss"
  done
  secs=$(median < "$work/times")
  rss_kb=$(median < "$work/rss")
  awk -v k="$kind" -v b="$bytes" -v e="$events" -v s="$secs" -v r="$rss_kb" 'BEGIN {
    printf "| %s | %.1f | %d | %.2f | %.0f | %.2f M | %.0f |\n",
      k, b / 1e6, e, s, b / s / 1e6, e / s / 1e6, r / 1024 }'
done

if ! command -v valgrind > /dev/null; then
  echo "(no valgrind: instructions per event not counted)"
  exit 0
fi
cmb=${CALLGRIND_MB:-16}
echo
echo "| stream | size MB | events | instructions (M) | per event |"
echo "|---|---:|---:|---:|---:|"
for kind in typical many-sites; do
  make_stream "$kind" "$cmb"
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.reader" \
    "$ljprof" report "$stream" > /dev/null 2> "$work/callgrind.log"
  # The out file's `summary:` (or `totals:`) line: all threads' instructions.
  ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$work/callgrind.reader")
  awk -v k="$kind" -v b="$(stat -c %s "$stream")" -v e="$events" -v i="$ir" 'BEGIN {
    printf "| %s | %.1f | %d | %.0f | %.0f |\n", k, b / 1e6, e, i / 1e6, i / e }'
done
