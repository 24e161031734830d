#!/usr/bin/env bash
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Reader throughput: `ljprof report` on synthetic streams (gen_churn.c),
# `ljprof heap` on a heap snapshot. Prints five Markdown tables; asserts
# nothing.
#
#   bench/reader/run.sh LJPROF WORK_DIR
#
# Streams (made once, kept in WORK_DIR): `typical`, a memprof stream of a
# program with about two thousand allocation sites; `many-sites`, a worst
# case of some 120 thousand sites; `sysprof`, a CPU profile of typical's
# program; with LJPROF's luajit beside it, a heap snapshot of a million
# objects (bench/heapsnap.lua). Each is reported RUNS times (default 3):
# the first table gives the median time and peak RSS (/usr/bin/time -v).
# STREAM_MB sets the streams' size (default 160 MiB).
#
# The second and third: eight typical streams of STREAM_MB / 8 each
# (other seeds) merged, `ljprof report S1 ... S8`, read one after the
# other (LJPROF_JOBS=1) and on every core (LJPROF_JOBS unset), interleaved
# RUNS times, medians; the merge's speed-up is the median of each pair's
# ratio, measured in one run; then eight sysprof streams alike.
#
# The last counts the instructions of one report of each kind on smaller
# streams (CALLGRIND_MB, default 16 MiB; the eight merged of a total that
# size), under valgrind's callgrind: all threads', the whole run (reading,
# aggregating, the report), per event (a sample; an object of a snapshot);
# then what one event more of typical costs, from a stream twice as long.
# Unlike time, the count is the same at every run on a busy machine.
#
# With LJBENCH, the folder of LuaJIT's own benchmark programs (its test
# suite's bench/: make bench unpacks it), and LJPROF's luajit beside it,
# the same count on memory streams of real programs the project did not
# write: binary-trees.lua 12 and life.lua, recorded once (ljprof record
# --mem) and kept in WORK_DIR.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 LJPROF WORK_DIR" >&2
  exit 2
fi
# Absolute: the real programs are recorded from their own folder.
ljprof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mkdir -p "$2"
work=$(cd "$2" && pwd)
runs=${RUNS:-3}
mb=${STREAM_MB:-160}
here=$(cd "$(dirname "$0")" && pwd)
luajit=$(dirname "$ljprof")/luajit

gen="$work/gen-churn"
if [ ! -x "$gen" ] || [ "$here/gen_churn.c" -nt "$gen" ]; then
  ${CC:-cc} -std=c11 -Wall -Wextra -O2 -o "$gen" "$here/gen_churn.c"
fi

# The median of numbers, one a line.
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The stream of a kind, size in MiB and seed (made once), its name in
# $stream and its event count in $events.
make_stream() {
  stream="$work/churn-$1-$2m-$3.bin"
  if [ ! -s "$stream" ] || [ "$gen" -nt "$stream" ]; then
    "$gen" -k "$1" -s "$2" -r "$3" > "$stream" 2> "$stream.log"
  fi
  # gen-churn (KIND): BYTES bytes, EVENTS events, LIVE blocks live
  events=$(awk '{ print $5 }' "$stream.log")
}

# The heap snapshot (made once, when there is a luajit): $stream, $events.
make_snapshot() {
  stream="$work/reader-heap.bin"
  if [ ! -s "$stream" ]; then
    "$luajit" "$here/../heapsnap.lua" 1000000 "$stream" > /dev/null
  fi
  events=$("$ljprof" heap --format=json --top=1 "$stream" |
    awk -F'[:,]' '/^  "objects"/ { print $2; exit }')
}

# The command reading a stream of a kind: report, or heap for a snapshot.
reader() { if [ "$1" = heap ]; then echo heap; else echo report; fi; }

kinds="typical many-sites sysprof"
[ -x "$luajit" ] && kinds="$kinds heap"

# Seconds and peak RSS (KiB) of a command, appended to $work/times, /rss.
timed() {
  /usr/bin/time -v -o "$work/time-v" "$@" > /dev/null
  awk -F': ' '/Elapsed \(wall clock\)/ {
      n = split($2, t, ":"); s = 0
      for (i = 1; i <= n; i++) s = s * 60 + t[i]
      print s }' "$work/time-v" >> "$work/times"
  awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time-v" >> "$work/rss"
}

echo "| stream | size MB | events | seconds | MB/s | events/s | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for kind in $kinds; do
  if [ "$kind" = heap ]; then make_snapshot; else make_stream "$kind" "$mb" 1; fi
  bytes=$(stat -c %s "$stream")
  : > "$work/times"
  : > "$work/rss"
  for _ in $(seq "$runs"); do timed "$ljprof" "$(reader "$kind")" "$stream"; done
  secs=$(median < "$work/times")
  rss_kb=$(median < "$work/rss")
  awk -v k="$kind" -v b="$bytes" -v e="$events" -v s="$secs" -v r="$rss_kb" 'BEGIN {
    printf "| %s | %.1f | %d | %.2f | %.0f | %.2f M | %.0f |\n",
      k, b / 1e6, e, s, b / s / 1e6, e / s / 1e6, r / 1024 }'
done

# Eight streams of a kind (typical, sysprof) of a total size (1 MiB each
# at least), their names in $merged, their events in $merged_events.
make_merge() {
  merged=""
  merged_events=0
  for seed in 1 2 3 4 5 6 7 8; do
    make_stream "$1" $(($2 >= 16 ? $2 / 8 : 1)) "$seed"
    merged="$merged $stream"
    merged_events=$((merged_events + events))
  done
}

for kind in typical sysprof; do
  echo
  echo "| eight $kind merged | size MB | seconds | MB/s | peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|"
  make_merge "$kind" "$mb"
  # shellcheck disable=SC2086 # the streams' names, one a word
  bytes=$(cat $merged | wc -c)
  for jobs in 1 all; do : > "$work/times-$jobs" "$work/rss-$jobs"; done
  for _ in $(seq "$runs"); do
    for jobs in 1 all; do
      : > "$work/times"
      : > "$work/rss"
      # shellcheck disable=SC2086 # the streams' names, one a word
      if [ "$jobs" = 1 ]; then timed env LJPROF_JOBS=1 "$ljprof" report $merged
      else timed env -u LJPROF_JOBS "$ljprof" report $merged; fi
      cat "$work/times" >> "$work/times-$jobs"
      cat "$work/rss" >> "$work/rss-$jobs"
    done
  done
  for jobs in 1 all; do
    secs=$(median < "$work/times-$jobs")
    rss_kb=$(median < "$work/rss-$jobs")
    name=$([ "$jobs" = 1 ] && echo "one after the other (LJPROF_JOBS=1)" ||
      echo "on every core ($(nproc) threads)")
    awk -v k="$name" -v b="$bytes" -v s="$secs" -v r="$rss_kb" 'BEGIN {
      printf "| %s | %.1f | %.2f | %.0f | %.0f |\n", k, b / 1e6, s, b / s / 1e6, r / 1024 }'
  done
  # Each pair's ratio, then their median: the machine's speed drifts
  # between pairs more than within one.
  paste "$work/times-1" "$work/times-all" | awk '{ print $1 / $2 }' | median |
    awk '{ printf "| speed-up (median of the pairs) | | %.2fx | | |\n", $1 }'
done

if ! command -v valgrind > /dev/null; then
  echo "(no valgrind: instructions per event not counted)"
  exit 0
fi
cmb=${CALLGRIND_MB:-16}
# Instructions of a command under callgrind: the out file's `summary:`
# (or `totals:`) line, all threads'.
instructions() {
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.reader" \
    "$@" > /dev/null 2> "$work/callgrind.log"
  awk '/^(summary|totals):/ { print $2; exit }' "$work/callgrind.reader"
}
# A row of instructions: name, bytes read, events, instructions.
instructions_row() {
  awk -v k="$1" -v b="$2" -v e="$3" -v i="$4" 'BEGIN {
    printf "| %s | %.1f | %d | %.0f | %.0f |\n", k, b / 1e6, e, i / 1e6, i / e }'
}
echo
echo "| stream | size MB | events | instructions (M) | per event |"
echo "|---|---:|---:|---:|---:|"
for kind in $kinds merged merged-sysprof; do
  case $kind in
  heap) make_snapshot; files=$stream ;;
  merged) make_merge typical "$cmb"; files=$merged; events=$merged_events ;;
  merged-sysprof)
    make_merge sysprof "$cmb"; files=$merged; events=$merged_events ;;
  *) make_stream "$kind" "$cmb" 1; files=$stream ;;
  esac
  # shellcheck disable=SC2086 # the streams' names, one a word
  ir=$(instructions "$ljprof" "$(reader "$kind")" $files)
  if [ "$kind" = typical ]; then typical_ir=$ir typical_events=$events; fi
  # shellcheck disable=SC2086
  instructions_row "$kind" "$(cat $files | wc -c)" "$events" "$ir"
done

# Each figure holds a run's work done once (the live table grown to what
# the program held and walked, its sites' report): what one more event
# costs is the difference a typical stream of twice the size makes.
if [ -n "${typical_ir:-}" ]; then
  make_stream typical $((2 * cmb)) 1
  ir=$(instructions "$ljprof" report "$stream")
  awk -v i1="$typical_ir" -v e1="$typical_events" -v i2="$ir" -v e2="$events" \
    -v mb="$cmb" 'BEGIN { printf "\nOne event more of typical (%d MiB against %d): %.0f instructions\n",
      2 * mb, mb, (i2 - i1) / (e2 - e1) }'
fi

# Real programs' memory streams: the events a report's JSON totals count.
if [ -z "${LJBENCH:-}" ] || [ ! -d "$LJBENCH" ] || [ ! -x "$luajit" ]; then
  echo
  echo "(no LJBENCH folder or no luajit: real programs' streams not counted)"
  exit 0
fi
echo
echo "| real program's memory stream | size MB | events | instructions (M) | per event |"
echo "|---|---:|---:|---:|---:|"
for program in "binary-trees.lua 12" "life.lua"; do
  name=${program%%.lua*}
  stream="$work/real-$name.bin"
  if [ ! -s "$stream" ]; then
    # shellcheck disable=SC2086 # the program and its arguments
    (cd "$LJBENCH" && "$ljprof" record --mem -o "$stream" -- $program) > /dev/null
  fi
  events=$("$ljprof" report --format=json "$stream" | awk -F'[:,]' '
    /"(alloc|realloc|free)_events"/ && ++seen <= 3 { n += $2 } END { print n }')
  ir=$(instructions "$ljprof" report "$stream")
  instructions_row "$program" "$(stat -c %s "$stream")" "$events" "$ir"
done
