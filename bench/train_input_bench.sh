#!/usr/bin/env bash
# End-to-end `ctrain train` throughput, stream mode (batches parsed on the
# input pipeline's threads while the trainer computes) vs memory mode (rows
# loaded first; load time excluded), on synthetic TFRecord (NONE, GZIP) and
# LibSVM files. Same model for all: embedding 32, 400-400-400, batch 1024.
# examples/s comes from --metrics-json examples_per_sec, which times only the
# training steps (stream mode: steps + time blocked waiting for input).
#
# Usage: bench/train_input_bench.sh [BUILD_DIR] [ROWS] [MAX_STEPS]
#   defaults: build 2000000 200; REPEAT=3 alternating runs per mode, medians reported
set -euo pipefail
BUILD=${1:-build}
ROWS=${2:-2000000}
MAX_STEPS=${3:-200}
REPEAT=${REPEAT:-3}
BIN="$BUILD/ctrain"
[ -x "$BIN" ] || { echo "no $BIN (build first)" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrain_train_input_bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

MODEL="--embedding-size 32 --deep-layers 400,400,400 --batch-size 1024 --max-steps $MAX_STEPS --epochs 1 --progress none"

field() {  # field FILE KEY
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print(v if v is not None else "")' "$1" "$2"
}

echo "ctrain train input bench: $ROWS rows, max $MAX_STEPS steps of batch 1024, K=32, 400-400-400, $(nproc) cpus"
printf '%-16s %14s %14s %10s %12s %14s\n' format "memory ex/s" "stream ex/s" "slowdown" "input_wait" "pipeline rec/s"
for spec in "tfrecord none" "tfrecord gzip" "libsvm none"; do
  set -- $spec
  fmt=$1 comp=$2
  file="$WORK/data.$fmt.$comp"
  synth_args=(synth --rows "$ROWS" --format "$fmt" -o "$file")
  [ "$comp" = gzip ] && synth_args+=(--compression gzip)
  "$BIN" "${synth_args[@]}" 2>/dev/null
  # Alternate the two modes REPEAT times so machine noise hits both alike; report medians.
  : > "$WORK/runs.txt"
  for i in $(seq "$REPEAT"); do
    for mode in memory stream; do
      "$BIN" train --train "$file" --input-mode $mode $MODEL --metrics-json "$WORK/$mode.json" 2>"$WORK/$mode.err" ||
        { cat "$WORK/$mode.err" >&2; exit 1; }
      echo "$mode $(field "$WORK/$mode.json" examples_per_sec) $(field "$WORK/$mode.json" input_wait_fraction) $(field "$WORK/$mode.json" pipeline_records_per_sec)" >> "$WORK/runs.txt"
    done
  done
  python3 - "$fmt/$comp" "$WORK/runs.txt" <<'PY'
import statistics as st, sys
name, rows = sys.argv[1], [l.split() for l in open(sys.argv[2])]
mem = [float(r[1]) for r in rows if r[0] == "memory"]
stream = [float(r[1]) for r in rows if r[0] == "stream"]
wait = [float(r[2]) for r in rows if r[0] == "stream"]
prec = [float(r[3]) for r in rows if r[0] == "stream"]
m, s = st.median(mem), st.median(stream)
slow = 100.0 * (m - s) / m if m > 0 else float("nan")
print(f"{name:<16} {m:14,.0f} {s:14,.0f} {slow:9.1f}% {st.median(wait):12.3f} {st.median(prec):14,.0f}"
      f"   (memory runs {[round(x) for x in mem]}, stream runs {[round(x) for x in stream]})")
PY
  grep -h "input-bound" "$WORK/stream.err" || true
done
