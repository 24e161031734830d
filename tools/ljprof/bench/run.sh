#!/usr/bin/env bash
# Throughput and peak memory of `ljprof report` on a synthetic churn stream.
# Not a test: it prints figures, it asserts nothing.
#
#   LJPROF=path/to/ljprof GEN=path/to/gen-churn BENCH_DIR=dir run.sh
#   (BENCH_MB: stream size, default 160; BENCH_RUNS: default 3)
set -euo pipefail

: "${LJPROF:?path to ljprof}" "${GEN:?path to gen-churn}" "${BENCH_DIR:?scratch dir}"
mb=${BENCH_MB:-160}
runs=${BENCH_RUNS:-3}
stream="$BENCH_DIR/churn-${mb}m.bin"

mkdir -p "$BENCH_DIR"
[ -s "$stream" ] || "$GEN" -s "$mb" > "$stream"
bytes=$(stat -c %s "$stream")
events=$("$LJPROF" report --format=json --top 1 "$stream" |
  perl -MJSON::PP -0777 -ne '$t = decode_json($_)->{totals};
    print $t->{alloc_events} + $t->{realloc_events} + $t->{free_events}')

printf '%-8s %10s %10s %12s %12s\n' run seconds MB/s Mevents/s peak-RSS-MiB
for i in $(seq "$runs"); do
  /usr/bin/time -f '%e %M' -o "$BENCH_DIR/time.txt" \
    "$LJPROF" report "$stream" > /dev/null
  read -r secs rss_kb < "$BENCH_DIR/time.txt"
  perl -e 'my ($i, $s, $b, $e, $k) = @ARGV;
    printf "%-8s %10.2f %10.1f %12.2f %12.1f\n",
      $i, $s, $b / $s / 1e6, $e / $s / 1e6, $k / 1024' \
    "$i" "$secs" "$bytes" "$events" "$rss_kb"
done
echo "stream: $bytes bytes, $events events ($stream)"
