#!/usr/bin/env bash
# End-to-end `ctrain train` throughput, stream mode (batches parsed on the
# input pipeline's threads while the trainer computes) vs memory mode (rows
# loaded first; load time excluded), on synthetic TFRecord (NONE, GZIP) and
# LibSVM files. Same model for all: embedding 32, 400-400-400, batch 1024.
# examples/s comes from --metrics-json examples_per_sec, which times only the
# training steps (stream mode: steps + time blocked waiting for input).
#
# Usage: bench/train_input_bench.sh [BUILD_DIR] [ROWS] [MAX_STEPS]
#   defaults: build 2000000 200
set -euo pipefail
BUILD=${1:-build}
ROWS=${2:-2000000}
MAX_STEPS=${3:-200}
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
  "$BIN" train --train "$file" --input-mode memory $MODEL --metrics-json "$WORK/mem.json" 2>"$WORK/mem.err" ||
    { cat "$WORK/mem.err" >&2; exit 1; }
  "$BIN" train --train "$file" --input-mode stream $MODEL --metrics-json "$WORK/stream.json" 2>"$WORK/stream.err" ||
    { cat "$WORK/stream.err" >&2; exit 1; }
  mem=$(field "$WORK/mem.json" examples_per_sec)
  str=$(field "$WORK/stream.json" examples_per_sec)
  wait=$(field "$WORK/stream.json" input_wait_fraction)
  prec=$(field "$WORK/stream.json" pipeline_records_per_sec)
  python3 - "$fmt/$comp" "$mem" "$str" "$wait" "$prec" <<'PY'
import sys
name, mem, st, wait, prec = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
slow = 100.0 * (mem - st) / mem if mem > 0 else float("nan")
print(f"{name:<16} {mem:14,.0f} {st:14,.0f} {slow:9.1f}% {wait:12.3f} {prec:14,.0f}")
PY
  grep -h "input-bound" "$WORK/stream.err" || true
done
