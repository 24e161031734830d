#!/usr/bin/env bash
# Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
# Heap snapshots at 1, 3 and 10 million live objects (SIZES to change):
# the VM's side (bench/heapsnap.lua: bytes per object, the CPU time of
# the call's process and of the VM's thread, the pause the snapshot
# records) and the reader's (`ljprof heap`:
# wall and CPU time, peak RSS from /usr/bin/time); then, for the first
# size, what the other outputs cost (--diff of the snapshot with itself,
# --format=html, --format=heapsnapshot). Prints Markdown tables; asserts
# nothing.
#
#   bench/heapsnap.sh LUAJIT LJPROF WORK_DIR
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 LUAJIT LJPROF WORK_DIR" >&2; exit 2; }
luajit=$1 ljprof=$2 work=$3
sizes=${SIZES:-1000000 3000000 10000000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"

echo "| live objects | bytes/object | process CPU ns/object | VM thread CPU ns/object | pause ns/object | reader s (CPU s) | reader peak MiB (B/object) |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for n in $sizes; do
  snap="$work/heapsnap-$n.bin"
  # objects N  snapshot M MB  B bytes/object  call C ms  thread T ms
  read -r bpo call_ms thread_ms < <("$luajit" "$here/heapsnap.lua" "$n" "$snap" |
    awk '{ print $6, $9, $12 }')
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" \
    "$ljprof" heap --format=json --top=1 "$snap" > "$work/heap.json"
  objects=$(awk -F'[:,]' '/^  "objects"/ { print $2; exit }' "$work/heap.json")
  pause_ns=$(awk -F'[:,]' '/^  "pause_ns"/ { print $2; exit }' "$work/heap.json")
  read -r wall user sys rss_kb < "$work/time"
  awk -v n="$n" -v o="$objects" -v b="$bpo" -v c="$call_ms" -v t="$thread_ms" \
      -v p="$pause_ns" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss_kb" 'BEGIN {
    printf "| %d (%d) | %.1f | %.0f | %.0f | %.0f | %.2f (%.2f) | %.0f (%.0f) |\n",
      n, o, b, c * 1e6 / o, t * 1e6 / o, p / o, w, u + s, r / 1024, r * 1024 / o }'
  [ "$n" = "${sizes%% *}" ] && first=$snap || rm -f "$snap"
done

# ljprof heap ARGS under /usr/bin/time: a table row.
cost() {
  local what=$1 out=$2
  shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$ljprof" heap "$@" > "$out"
  read -r wall user sys rss_kb < "$work/time"
  awk -v w="$what" -v b="$(stat -c %s "$out")" -v t="$wall" -v u="$user" \
      -v s="$sys" -v r="$rss_kb" 'BEGIN {
    printf "| %s | %.2f (%.2f) | %.0f | %.1f |\n", w, t, u + s, r / 1024, b / 1e6 }'
}
echo
echo "${sizes%% *} live objects: | seconds (CPU s) | peak MiB | output MB |"
echo "|---|---:|---:|---:|"
cost "text report" "$work/out" "$first"
cost "--diff (the snapshot and itself)" "$work/out" --diff "$first" "$first"
cost "--format=html" "$work/out" --format=html "$first"
cost "--format=heapsnapshot" "$work/out" --format=heapsnapshot "$first"
rm -f "$first" "$work/out"
