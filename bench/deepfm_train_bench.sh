#!/usr/bin/env bash
# DeepFM training throughput: ctrain vs the GEMM roofline vs PyTorch/TensorFlow peers.
#
# Builds nothing: uses $BUILD_DIR/ctrain and $BUILD_DIR/bench/sgemm_roofline_bench
# (BUILD_DIR defaults to build/). Steps:
#   1. `ctrain synth` writes $ROWS rows of Criteo-shaped LibSVM (field_size 39).
#   2. `ctrain train --input-mode memory` on it (data in memory first, as the peers do): batch 1024, K 32, 400-400-400, all cores,
#      1 epoch; examples/s read from --metrics-json. Repeated $REPEAT times.
#   3. sgemm_roofline_bench: oneDNN GFLOP/s on the model's GEMM shapes -> roofline examples/s.
#   4. bench/peers/deepfm_torch.py --best-of 1,2 and deepfm_tf.py (if present and
#      their framework imports), same data and config, $REPEAT times.
#   5. Prints min/median per contestant and the ratios ctrain/roofline and
#      ctrain/best-pytorch as one JSON object on the last line.
#
# Environment: BUILD_DIR, ROWS (default 100000), REPEAT (3), THREADS (nproc), OUT_DIR (mktemp),
#   BASELINE_CTRAIN (another ctrain binary, e.g. a build of the previous commit: its runs alternate with
#   this one's, in the order A B, B A, A B, ..., and the JSON adds "ctrain_over_baseline": the ratio of the
#   medians and of the minima), SKIP_PEERS=1 (no roofline / PyTorch / TensorFlow runs).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
ROWS=${ROWS:-100000}
REPEAT=${REPEAT:-3}
THREADS=${THREADS:-$(nproc)}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/deepfm_bench.XXXXXX)}
mkdir -p "$OUT_DIR"
CTRAIN="$BUILD_DIR/ctrain"
ROOF="$BUILD_DIR/bench/sgemm_roofline_bench"
FEATURES=117581
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }

DATA="$OUT_DIR/synth.libsvm"
echo "== data: $ROWS synthetic rows -> $DATA" >&2
"$CTRAIN" synth --rows "$ROWS" --format libsvm --feature-size $FEATURES --seed 1 -o "$DATA"

stats() {  # reads numbers on stdin, prints {"min":..,"median":..,"max":..,"runs":[..]}
  python3 -c 'import json,sys,statistics as s; v=[float(x) for x in sys.stdin.read().split()]
print(json.dumps({"min":min(v),"median":s.median(v),"max":max(v),"runs":v}) if v else "null")'
}

train_once() {  # $1 = binary, $2 = metrics file: prints examples/s
  "$1" train --train "$DATA" --field-size 39 --feature-size $FEATURES --embedding-size 32 \
    --deep-layers 400,400,400 --dropout 0.5 --batch-size 1024 --epochs 1 --learning-rate 0.0005 \
    --intra-op-parallelism-threads "$THREADS" --input-mode memory --progress none --metrics-json "$2" >&2
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["examples_per_sec"])' "$2"
}
echo "== ctrain train (batch 1024, K 32, 400-400-400, $THREADS threads) x $REPEAT${BASELINE_CTRAIN:+, alternating with $BASELINE_CTRAIN}" >&2
CT_RUNS=""
BASE_RUNS=""
for i in $(seq "$REPEAT"); do
  if [ -n "${BASELINE_CTRAIN:-}" ] && [ $((i % 2)) -eq 1 ]; then
    BASE_RUNS="$BASE_RUNS $(train_once "$BASELINE_CTRAIN" "$OUT_DIR/base_$i.json")"
    CT_RUNS="$CT_RUNS $(train_once "$CTRAIN" "$OUT_DIR/ct_$i.json")"
  else
    CT_RUNS="$CT_RUNS $(train_once "$CTRAIN" "$OUT_DIR/ct_$i.json")"
    [ -n "${BASELINE_CTRAIN:-}" ] && BASE_RUNS="$BASE_RUNS $(train_once "$BASELINE_CTRAIN" "$OUT_DIR/base_$i.json")"
  fi
done
CT=$(echo "$CT_RUNS" | stats)
BASE=$(echo "$BASE_RUNS" | stats)

# Mixed precision (bf16 GEMM operands, f32 accumulation/master weights) where the CPU has AVX512_BF16.
CT16=null
if [ "${SKIP_PEERS:-0}" != 1 ] && grep -q avx512_bf16 /proc/cpuinfo; then
  echo "== ctrain train --mixed-precision bf16 x $REPEAT" >&2
  CT16_RUNS=""
  for i in $(seq "$REPEAT"); do
    "$CTRAIN" train --train "$DATA" --field-size 39 --feature-size $FEATURES --embedding-size 32 \
      --deep-layers 400,400,400 --dropout 0.5 --batch-size 1024 --epochs 1 --learning-rate 0.0005 \
      --intra-op-parallelism-threads "$THREADS" --mixed-precision bf16 --input-mode memory --progress none \
      --metrics-json "$OUT_DIR/ct16_$i.json" >&2
    CT16_RUNS="$CT16_RUNS $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["examples_per_sec"])' "$OUT_DIR/ct16_$i.json")"
  done
  CT16=$(echo "$CT16_RUNS" | stats)
fi

ROOFLINE=null
if [ "${SKIP_PEERS:-0}" = 1 ]; then
  :
elif [ -x "$ROOF" ]; then
  echo "== sgemm roofline x $REPEAT" >&2
  R_RUNS=""
  for i in $(seq "$REPEAT"); do
    "$ROOF" --threads "$THREADS" > "$OUT_DIR/roof_$i.json"
    R_RUNS="$R_RUNS $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads_all"]["roofline_examples_per_sec"])' "$OUT_DIR/roof_$i.json")"
  done
  ROOFLINE=$(echo "$R_RUNS" | stats)
else
  echo "(no $ROOF: configure with -DCTRAIN_BUILD_BENCH=ON)" >&2
fi

peer() {  # $1 = script, $2 = label, $3... = extra flags
  local script="bench/peers/$1" label=$2
  shift 2
  [ -f "$script" ] && [ "${SKIP_PEERS:-0}" != 1 ] || { echo "null"; return; }
  local runs=""
  for i in $(seq "$REPEAT"); do
    if ! python3 "$script" --train "$DATA" --field-size 39 --feature-size $FEATURES --embedding-size 32 \
        --deep-layers 400,400,400 --dropout 0.5 --batch-size 1024 --epochs 1 --learning-rate 0.0005 \
        --best-of "1,$THREADS" "$@" > "$OUT_DIR/${label}_$i.json" 2> "$OUT_DIR/${label}_$i.err"; then
      echo "($label peer failed; see $OUT_DIR/${label}_$i.err)" >&2
      echo "null"; return
    fi
    runs="$runs $(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["best"]["examples_per_sec"])' "$OUT_DIR/${label}_$i.json")"
  done
  echo "$runs" | stats
}
echo "== PyTorch peer (best of 1 and $THREADS threads) x $REPEAT" >&2
TORCH=$(peer deepfm_torch.py pytorch)
TORCH16=null
if [ "$CT16" != null ]; then
  echo "== PyTorch peer, bf16 autocast (best of 1 and $THREADS threads) x $REPEAT" >&2
  TORCH16=$(peer deepfm_torch.py pytorch_bf16 --bf16)
fi
echo "== TensorFlow peer x $REPEAT" >&2
TF=$(peer deepfm_tf.py tensorflow)

python3 - "$CT" "$ROOFLINE" "$TORCH" "$TF" "$CT16" "$TORCH16" "$ROWS" "$THREADS" "$BASE" <<'EOF'
import json, sys
ct, roof, torch, tf, ct16, torch16 = (json.loads(a) for a in sys.argv[1:7])
base = json.loads(sys.argv[9])
ratio = lambda a, b: (a["median"] / b["median"]) if a and b and b["median"] > 0 else None
print(json.dumps({
    "bench": "deepfm_train", "rows": int(sys.argv[7]), "threads": int(sys.argv[8]),
    "config": "batch 1024, K 32, 400-400-400, dropout 0.5, adam",
    "ctrain_examples_per_sec": ct, "roofline_examples_per_sec": roof,
    "pytorch_examples_per_sec": torch, "tensorflow_examples_per_sec": tf,
    "ctrain_over_roofline": ratio(ct, roof), "ctrain_over_best_pytorch": ratio(ct, torch),
    "ctrain_over_tensorflow": ratio(ct, tf),
    "ctrain_bf16_examples_per_sec": ct16, "pytorch_bf16_autocast_examples_per_sec": torch16,
    "ctrain_bf16_over_pytorch_bf16": ratio(ct16, torch16),
    "ctrain_bf16_over_f32_roofline": ratio(ct16, roof),
    "baseline_examples_per_sec": base,
    "ctrain_over_baseline": {"median": ratio(ct, base), "min": ct["min"] / base["min"]} if base else None}))
EOF
