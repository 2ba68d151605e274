#!/usr/bin/env bash
# Data-service throughput, 1 worker -> 1 client on loopback, ctrain vs
# tf.data.service in the same run (issue #8, Bench 1).
#   bench/data_service_bench.sh [ROWS=1000000] [REPEAT=3]
# Both read the same synthetic TFRecord (`ctrain synth`, F = 39) in batches of
# 1024 in the Batch layout (labels f32[1024], ids i64[1024,39], values
# f32[1024,39] = 483,328 bytes), parsed in the worker:
#   ctrain: `data-service dispatcher` + `data-service worker --threads T` (own
#           processes), client `data-service read --discard --json` (wire
#           compression auto = none on loopback), T = 1 and 2, in three modes:
#             distributed_epoch with the default 8 splits (one file: each split
#               reads its byte range of it, data/record_index.h),
#             distributed_epoch --num-splits 1, and parallel_epochs.
#   tf:     bench/peers/tf_data_service_peer.py server (DispatchServer + 1
#           WorkerServer, one process) and ... client in this process
#           (distribute(parallel_epochs), drained by Dataset.reduce).
# One untimed warm-up read per contestant, then REPEAT timed reads. ctrain's
# read time includes creating its job (milliseconds); tf.data.service's client
# learns a new job's tasks about once a second, so the peer also reports its
# passes minus that set-up latency (see the peer's docstring); both are shown. Also
# records the CPU seconds each ctrain worker and client spent per read (from
# /proc and /usr/bin/time), so that a shared machine still gives a per-core
# figure. Prints JSON lines, then a table (best / median) and the ratios.
set -euo pipefail
ROWS=${1:-1000000}
REPEAT=${2:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN="$SRC/build/ctrain"
[ -x "$BIN" ] || { echo "no $BIN (build first: scripts/build.sh)" >&2; exit 1; }
DIR=${BENCH_DIR:-/tmp/ctrain_data_service_bench}
mkdir -p "$DIR"
FILE="$DIR/s$ROWS.tfrecord"
[ -s "$FILE" ] || "$BIN" synth --rows "$ROWS" -o "$FILE" 2>/dev/null
OUT="$DIR/results_$ROWS.jsonl"
: > "$OUT"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

. "$SRC/bench/lib.sh"  # wait_line
cpu_of() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }  # utime+stime, clock ticks (USER_HZ 100)

echo "data-service throughput: $ROWS rows ($(du -m "$FILE" | cut -f1) MB TFRecord), batch 1024, $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
for T in 1 2; do
  "$BIN" data-service dispatcher --port 0 > "$DIR/disp.out" 2> "$DIR/disp.err" & PIDS+=($!)
  ADDR=$(wait_line "$DIR/disp.out" "listening on")
  "$BIN" data-service worker --dispatcher "$ADDR" --threads "$T" > "$DIR/worker.out" 2> "$DIR/worker.err" & WP=$!; PIDS+=($WP)
  wait_line "$DIR/worker.out" "listening on" > /dev/null
  for MODE in "distributed_epoch --num-splits 8" "distributed_epoch --num-splits 1" "parallel_epochs"; do
  for i in $(seq 0 "$REPEAT"); do
    w0=$(cpu_of "$WP")
    /usr/bin/time -f "%U %S" -o "$DIR/client.time" \
      "$BIN" data-service read --data-service "$ADDR" --train "$FILE" --batch-size 1024 --discard --json \
      --processing-mode $MODE --job-name "bench-$T-${MODE// /}-$i" \
      > "$DIR/read.json" 2> "$DIR/read.err" || { cat "$DIR/read.err" >&2; exit 1; }
    w1=$(cpu_of "$WP")
    [ "$i" = 0 ] && continue  # warm-up
    python3 - "$DIR/read.json" "$DIR/client.time" "$w0" "$w1" "$T" "$ROWS" "$MODE" <<'PY' | tee -a "$OUT"
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
if r["examples"] != int(sys.argv[6]):
    sys.exit(f"ctrain read {r['examples']} examples, expected {sys.argv[6]}")
print(json.dumps({"peer": f"ctrain {sys.argv[7]}, worker --threads {sys.argv[5]}", "examples": r["examples"],
                  "batches": r["batches"], "bytes": r["bytes"], "seconds": r["seconds"],
                  "worker_cpu_s": round(float(sys.argv[4]) - float(sys.argv[3]), 2),
                  "client_cpu_s": round(u + s, 2)}))
PY
  done
  done
  "$BIN" data-service shutdown "$ADDR" 2>/dev/null || true
  kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; PIDS=()
done

if python3 -c "import tensorflow" >/dev/null 2>&1; then
  python3 "$SRC/bench/peers/tf_data_service_peer.py" server > "$DIR/tfs.out" 2> "$DIR/tfs.err" & PIDS+=($!)
  SVC=$(wait_line "$DIR/tfs.out" "^dispatcher")
  python3 "$SRC/bench/peers/tf_data_service_peer.py" client --service "$SVC" --file "$FILE" --repeat "$REPEAT" \
    2> "$DIR/tfc.err" | tee -a "$OUT"
  # The same worker serving tensors built before the job: no read, no parse (the transport's ceiling).
  python3 "$SRC/bench/peers/tf_data_service_peer.py" client --service "$SVC" --file "$FILE" --repeat "$REPEAT" \
    --prebuilt 2> "$DIR/tfp.err" | tee -a "$OUT"
else
  echo "tensorflow not installed: no tf.data.service peer" >&2
fi

python3 - "$OUT" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    if r["peer"].startswith("tf.data.service"):
        for s in r["seconds"]:
            by.setdefault(r["peer"], []).append(dict(r, seconds=s, worker_cpu_s=None, client_cpu_s=None))
        nb = r["batches"]
        for s in r.get("steady_seconds", []):  # minus a job's set-up latency (take(1) passes)
            by.setdefault(r["peer"] + ", set-up subtracted", []).append(
                dict(r, seconds=s, bytes=r["bytes"] * (nb - 1) / nb, batches=nb - 1, worker_cpu_s=None,
                     client_cpu_s=None))
    else:
        by.setdefault(r["peer"], []).append(r)
print("\n| contestant | GB/s best / median | batches/s best / median | worker CPU s/GB | client CPU s/GB |")
print("|---|---|---|---|---|")
best = {}
for peer, rs in by.items():
    gbs = [r["bytes"] / r["seconds"] / 1e9 for r in rs]
    bps = [r["batches"] / r["seconds"] for r in rs]
    best[peer] = max(gbs), st.median(gbs)
    wc = [r["worker_cpu_s"] / (r["bytes"] / 1e9) for r in rs if r["worker_cpu_s"] is not None]
    cc = [r["client_cpu_s"] / (r["bytes"] / 1e9) for r in rs if r["client_cpu_s"] is not None]
    f = lambda v: f"{st.median(v):.2f}" if v else "n/a"
    print(f"| {peer} | {max(gbs):.3f} / {st.median(gbs):.3f} | {max(bps):,.0f} / {st.median(bps):,.0f} | {f(wc)} | {f(cc)} |")
tf, tfs = best.get("tf.data.service"), best.get("tf.data.service, set-up subtracted")
pre = best.get("tf.data.service prebuilt")
for peer, (b, m) in best.items():
    if tf and not peer.startswith("tf.data.service"):
        line = f"{peer} / tf.data.service (read + parse): best {b / tf[0]:.2f}x, median {m / tf[1]:.2f}x"
        if tfs:
            line += f"; / tf set-up subtracted: best {b / tfs[0]:.2f}x, median {m / tfs[1]:.2f}x"
        if pre:
            line += f"; / tf.data.service prebuilt tensors: best {b / pre[0]:.2f}x, median {m / pre[1]:.2f}x"
        print(line)
PY
