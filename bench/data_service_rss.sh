#!/usr/bin/env bash
# Memory bound of the data service (issue #8, Bench 3): during a 10 M-example
# read whose client is slower than its worker (--pace-us), so that the worker's
# queue and the client's buffer both fill, sample the worker's and the client's
# VmRSS (/proc/PID/status) every 0.2 s and compare the peak with
#   worker: idle RSS (registered, no stream) + --buffer-bytes
#   client: fixed overhead + --data-service-buffer-bytes
# The client's fixed overhead is its peak RSS (VmHWM) reading a 1-batch file
# (process, gRPC, one batch); the worker's is its RSS before the job.
#   bench/data_service_rss.sh [ROWS=1000000] [EPOCHS=10] [PACE_US=3000] [WORKER_BUF=67108864] [CLIENT_BUF=268435456]
# Prints the peak RSS of each, the limits, and the headroom; the samples are
# left in $BENCH_DIR/rss.tsv (seconds, worker kB, client kB).
set -euo pipefail
ROWS=${1:-1000000}
EPOCHS=${2:-10}
PACE_US=${3:-3000}
WORKER_BUF=${4:-67108864}
CLIENT_BUF=${5:-268435456}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN="$SRC/build/ctrain"
[ -x "$BIN" ] || { echo "no $BIN (build first: scripts/build.sh)" >&2; exit 1; }
DIR=${BENCH_DIR:-/tmp/ctrain_data_service_bench}
mkdir -p "$DIR"
FILE="$DIR/s$ROWS.tfrecord"
SMALL="$DIR/s1024.tfrecord"
[ -s "$FILE" ] || "$BIN" synth --rows "$ROWS" -o "$FILE" 2>/dev/null
[ -s "$SMALL" ] || "$BIN" synth --rows 1024 -o "$SMALL" 2>/dev/null
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
. "$SRC/bench/lib.sh"  # wait_line
kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || true; }  # kb PID VmRSS|VmHWM

"$BIN" data-service dispatcher --port 0 > "$DIR/disp.out" 2> "$DIR/disp.err" & PIDS+=($!)
ADDR=$(wait_line "$DIR/disp.out" "listening on")
"$BIN" data-service worker --dispatcher "$ADDR" --buffer-bytes "$WORKER_BUF" > "$DIR/worker.out" 2> "$DIR/worker.err" &
WP=$!; PIDS+=($WP)
wait_line "$DIR/worker.out" "listening on" > /dev/null
sleep 1
WORKER_IDLE=$(kb "$WP" VmRSS)

# The client's fixed overhead: peak RSS of a read of one batch.
CLIENT_FIXED=$(/usr/bin/time -f "%M" "$BIN" data-service read --data-service "$ADDR" --train "$SMALL" --discard \
  --data-service-buffer-bytes "$CLIENT_BUF" --job-name rss-small 2>&1 >/dev/null | tail -1)

"$BIN" data-service read --data-service "$ADDR" --train "$FILE" --epochs "$EPOCHS" --pace-us "$PACE_US" --discard \
  --json --data-service-buffer-bytes "$CLIENT_BUF" --job-name rss-long > "$DIR/rss_read.json" 2> "$DIR/rss_read.err" &
CP=$!; PIDS+=($CP)
T0=$(date +%s.%N)
: > "$DIR/rss.tsv"
while kill -0 "$CP" 2>/dev/null; do
  c=$(kb "$CP" VmRSS); w=$(kb "$WP" VmRSS)
  [ -n "$c" ] && echo "$(echo "$(date +%s.%N) - $T0" | bc) ${w:-0} $c" >> "$DIR/rss.tsv"
  sleep 0.2
done
wait "$CP" || { cat "$DIR/rss_read.err" >&2; exit 1; }
WORKER_HWM=$(kb "$WP" VmHWM)
STATUS=$("$BIN" data-service status "$ADDR" --json 2>/dev/null || echo '{}')
python3 - "$DIR/rss.tsv" "$DIR/rss_read.json" "$WORKER_IDLE" "$CLIENT_FIXED" "$WORKER_HWM" "$WORKER_BUF" "$CLIENT_BUF" \
  "$ROWS" "$EPOCHS" "$PACE_US" <<'PY'
import json, sys
samples = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
r = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
w_idle, c_fixed, w_hwm = (int(x) * 1024 for x in sys.argv[3:6])
w_buf, c_buf, rows, epochs, pace = (int(x) for x in sys.argv[6:11])
if r["examples"] != rows * epochs:
    sys.exit(f"read {r['examples']} examples, expected {rows * epochs}")
w_peak = max(s[1] for s in samples) * 1024
c_peak = max(s[2] for s in samples) * 1024
MiB = 1 << 20
print(f"read {r['examples']:,} examples ({r['batches']} batches, {r['bytes'] / 1e9:.2f} GB) in {r['seconds']:.1f} s "
      f"with --pace-us {pace}; {len(samples)} samples every 0.2 s; client input_wait_fraction "
      f"{r['data_service'].get('input_wait_fraction', float('nan')):.3f}")
print("\n| process | fixed overhead | byte limit | limit + overhead | peak RSS (sampled) | VmHWM | peak - overhead |")
print("|---|---|---|---|---|---|---|")
print(f"| worker | {w_idle / MiB:.0f} MiB (idle RSS) | {w_buf / MiB:.0f} MiB (--buffer-bytes) | {(w_idle + w_buf) / MiB:.0f} MiB "
      f"| {w_peak / MiB:.0f} MiB | {w_hwm / MiB:.0f} MiB | {(w_peak - w_idle) / MiB:.0f} MiB |")
print(f"| client | {c_fixed / MiB:.0f} MiB (1-batch read, VmHWM) | {c_buf / MiB:.0f} MiB (--data-service-buffer-bytes) "
      f"| {(c_fixed + c_buf) / MiB:.0f} MiB | {c_peak / MiB:.0f} MiB | - | {(c_peak - c_fixed) / MiB:.0f} MiB |")
ok_w, ok_c = w_peak <= w_idle + w_buf, c_peak <= c_fixed + c_buf
print(f"\nworker within bound: {ok_w}; client within bound: {ok_c}")
# A coarse trace: RSS every ~2 s.
step = max(1, len(samples) // 15)
print("t_s worker_MiB client_MiB: " + ", ".join(f"{s[0]:.0f}:{s[1] / 1024:.0f}/{s[2] / 1024:.0f}" for s in samples[::step]))
PY
