#!/usr/bin/env bash
# The model zoo side by side with FuxiCTR and plain PyTorch (issue #22). One command:
#   bash bench/zoo_bench.sh                       # everything
#   MODELS="deepfm fm" SEEDS="1" REPEAT=1 ROWS=5000 bash bench/zoo_bench.sh   # cheap
# Builds nothing: uses $BUILD_DIR/ctrain and, for the roofline, $BUILD_DIR/bench/sgemm_roofline_bench
# (configure with -DCTRAIN_BUILD_BENCH=ON). Models the binary does not list (`ctrain train --model ?`'s
# error names them) are skipped with a message.
#
# 1. Accuracy: the real split of ../shared/data/criteo_deepfm_va10k.libsvm (first 8000 lines train, last
#    2040 validation, ids 1..922), per model and seed: ctrain train (--id-base 1 --feature-size 922,
#    memory mode) and bench/peers/fuxictr_zoo.py (FuxiCTR's BaseModel + layers); for lr the reference is
#    bench/peers/sklearn_lr.py. Settings: embedding 16, MLP 200-200, Adam 1e-3, batch 256, 3 epochs, no
#    dropout; dcn/dcn_v2: 3 cross layers, parallel; xdeepfm: CIN 16,16,16; dlrm: 13 dense fields, bottom
#    MLP 64,64 (-> K), top MLP 200,200. Check: ctrain AUC >= FuxiCTR median - 0.003 and ctrain logloss
#    <= FuxiCTR median + 0.003 (medians of the seeds).
# 2. Throughput: $ROWS rows of `ctrain synth` (39 fields, the first 13 numeric, feature_size 117581),
#    1 epoch, the same settings; per repeat, per thread count in $THREADS_LIST, the contestants ctrain
#    (--input-mode memory, --intra-op-parallelism-threads t), FuxiCTR and plain PyTorch (zoo_torch.py;
#    torch.set_num_threads(t)) in a rotating order, OMP_NUM_THREADS=t for all. Peers time the steps after
#    5 warm-up steps; ctrain reports its whole run. The load average (uptime) is recorded with every run.
#    Roofline: sgemm_roofline_bench's GFLOP/s (batch 256, the 624-200-200-1 MLP shapes) / the model's
#    GEMM FLOPs per example (docs/model.md's counts: forward + both backward GEMMs).
# Prints both tables as Markdown and writes $JSON_OUT (default $OUT_DIR/zoo_bench.json).
#
# Environment: BUILD_DIR (build), ROOF (the roofline binary), MODELS (all 8), SEEDS ("1 2 3"), REPEAT (3), THREADS_LIST ("1 2"),
#   ROWS (20000), EPOCHS (3, accuracy runs), SKIP_ACCURACY=1, SKIP_THROUGHPUT=1, OUT_DIR (mktemp), JSON_OUT,
#   DATA (the real LibSVM file).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
MODELS=${MODELS:-"deepfm lr fm wide_deep dcn dcn_v2 dlrm xdeepfm"}
SEEDS=${SEEDS:-"1 2 3"}
REPEAT=${REPEAT:-3}
THREADS_LIST=${THREADS_LIST:-"1 2"}
ROWS=${ROWS:-20000}
EPOCHS=${EPOCHS:-3}
DATA=${DATA:-../shared/data/criteo_deepfm_va10k.libsvm}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/zoo_bench.XXXXXX)}
JSON_OUT=${JSON_OUT:-$OUT_DIR/zoo_bench.json}
mkdir -p "$OUT_DIR"
CTRAIN="$BUILD_DIR/ctrain"
ROOF=${ROOF:-$BUILD_DIR/bench/sgemm_roofline_bench}
PEERS=bench/peers
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }
RUNS="$OUT_DIR/runs.jsonl"   # one JSON object per measured run; the report is computed from it
: > "$RUNS"

KNOWN=$( ("$CTRAIN" train --model '?' 2>&1 || true) | sed -n 's/.*(models: \(.*\)).*/\1/p' | tr -d ',')
[ -n "$KNOWN" ] || { echo "could not read the model list from '$CTRAIN train --model ?'" >&2; exit 1; }
RUN_MODELS=""
for m in $MODELS; do
  if [[ " $KNOWN " == *" $m "* ]]; then RUN_MODELS="$RUN_MODELS $m"
  else echo "== skipping $m: $CTRAIN does not list it (models: $KNOWN)" >&2; fi
done
echo "== models:$RUN_MODELS; seeds: $SEEDS; repeat: $REPEAT; threads: $THREADS_LIST; out: $OUT_DIR" >&2

# The model's flags, ctrain's spelling (ctrain refuses an option the model does not read, by name).
model_flags() {
  case $1 in
    lr) ;;
    fm) echo "--embedding-size 16" ;;
    deepfm|wide_deep) echo "--embedding-size 16 --deep-layers 200,200 --dropout 0" ;;
    dcn|dcn_v2) echo "--embedding-size 16 --deep-layers 200,200 --dropout 0 --cross-layers 3 --model-structure parallel" ;;
    xdeepfm) echo "--embedding-size 16 --deep-layers 200,200 --dropout 0 --cin-layer-units 16,16,16" ;;
    dlrm) echo "--embedding-size 16 --dropout 0 --num-dense-fields 13 --bottom-mlp 64,64 --top-mlp 200,200" ;;
  esac
}
# The peers read every flag (unused ones are ignored), so they get the full set.
PEER_FLAGS="--field-size 39 --embedding-size 16 --deep-layers 200,200 --dropout 0 --cross-layers 3
  --cin-layer-units 16,16,16 --num-dense-fields 13 --bottom-mlp 64,64 --top-mlp 200,200 --batch-size 256
  --learning-rate 0.001"
COMMON_CT="--field-size 39 --batch-size 256 --optimizer adam --input-mode memory --progress none"
# lr's reference is scikit-learn's converged solver (lbfgs), so ctrain's lr trains to convergence too (20 epochs at
# 0.003: 96 Adam steps at 1e-3 stop far short of the optimum, AUC ~0.63; at 0.01 Adam hovers about it, median AUC
# 0.7065 after 10 epochs, 0.7045 after 20); every other model: the common recipe.
ct_schedule() { if [ "$1" = lr ]; then echo "--learning-rate 0.003 --epochs 20"; else echo "--learning-rate 0.001 --epochs $EPOCHS"; fi; }
# The tables' start, as the reference's (docs/performance.md §11): FuxiCTR's embedding_initializer normal(1e-4) for
# the categorical rows; the 13 numeric fields' rows (ids 0..12 in this file) a larger start of their own, as FuxiCTR
# gives its numeric fields (its exact start, xavier std 0.34 and LR weight 1, trained worse in ctrain: 0.7162).
# dlrm feeds the numeric fields to its bottom MLP (no rows); lr converges whatever its start.
ct_start() {
  case $1 in
    lr) ;;
    dlrm) echo "--embedding-initializer normal:1e-4" ;;
    *) echo "--embedding-initializer normal:1e-4 --num-dense-fields 13 --numeric-embedding-initializer normal:0.05" ;;
  esac
}
load1() { cut -d' ' -f1 /proc/loadavg; }
record() {  # $1 = JSON object (a run); adds the load average and appends it to $RUNS
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["load1"]=float(sys.argv[2]); print(json.dumps(r))' \
    "$1" "$(load1)" >> "$RUNS"
}
ct_metrics() {  # $1 = metrics file, $2 = extra JSON fields: prints the run object
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); r=json.loads(sys.argv[2])
r.update(auc=m.get("auc"), valid_logloss=m.get("logloss"), examples_per_sec=m["examples_per_sec"]); print(json.dumps(r))' "$1" "$2"
}

if [ "${SKIP_ACCURACY:-0}" != 1 ]; then
  [ -f "$DATA" ] || { echo "missing $DATA" >&2; exit 1; }
  TR="$OUT_DIR/train.libsvm"; VA="$OUT_DIR/valid.libsvm"
  head -n 8000 "$DATA" > "$TR"; tail -n 2040 "$DATA" > "$VA"
  for m in $RUN_MODELS; do
    for s in $SEEDS; do
      echo "== accuracy: $m seed $s" >&2
      # shellcheck disable=SC2046
      "$CTRAIN" train --model "$m" $(model_flags "$m") $(ct_schedule "$m") $(ct_start "$m") $COMMON_CT --train "$TR" --valid "$VA" \
        --id-base 1 --feature-size 922 --seed "$s" --metrics-json "$OUT_DIR/acc_${m}_$s.json" \
        > "$OUT_DIR/acc_${m}_$s.log" 2>&1 || { echo "ctrain $m seed $s failed: $OUT_DIR/acc_${m}_$s.log" >&2; exit 1; }
      record "$(ct_metrics "$OUT_DIR/acc_${m}_$s.json" "{\"bench\":\"accuracy\",\"peer\":\"ctrain\",\"model\":\"$m\",\"seed\":$s}")"
      if [ "$m" = lr ]; then
        r=$(python3 $PEERS/sklearn_lr.py --train "$TR" --valid "$VA" --id-offset 1 --feature-size 922 --seed "$s")
      else
        # shellcheck disable=SC2086
        r=$(OMP_NUM_THREADS=1 python3 $PEERS/fuxictr_zoo.py --model "$m" $PEER_FLAGS --train "$TR" --valid "$VA" \
          --id-offset 1 --feature-size 922 --epochs "$EPOCHS" --seed "$s" --threads 1 2> "$OUT_DIR/acc_fx_${m}_$s.err" \
          | tail -n 1)
      fi
      record "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["bench"]="accuracy"; print(json.dumps(r))' "$r")"
    done
  done
fi

if [ "${SKIP_THROUGHPUT:-0}" != 1 ]; then
  SYN="$OUT_DIR/synth.libsvm"
  echo "== throughput data: $ROWS synthetic rows -> $SYN" >&2
  "$CTRAIN" synth --rows "$ROWS" --format libsvm --feature-size 117581 --seed 1 -o "$SYN" >&2
  run_contestant() {  # $1 = ctrain|fuxictr|pytorch, $2 = model, $3 = threads, $4 = repeat index
    local c=$1 m=$2 t=$3 i=$4 tag="$OUT_DIR/tp_${1}_${2}_t${3}_$4" r
    case $c in
      ctrain)
        # shellcheck disable=SC2046
        OMP_NUM_THREADS=$t "$CTRAIN" train --model "$m" $(model_flags "$m") $COMMON_CT --train "$SYN" \
          --feature-size 117581 --epochs 1 --intra-op-parallelism-threads "$t" --metrics-json "$tag.json" \
          > "$tag.log" 2>&1 || { echo "ctrain $m failed: $tag.log" >&2; return; }
        r=$(ct_metrics "$tag.json" "{\"peer\":\"ctrain\",\"model\":\"$m\",\"threads\":$t}") ;;
      fuxictr|pytorch)
        local script=$PEERS/zoo_torch.py
        [ "$c" = fuxictr ] && script=$PEERS/fuxictr_zoo.py
        # shellcheck disable=SC2086
        r=$(OMP_NUM_THREADS=$t python3 "$script" --model "$m" $PEER_FLAGS --train "$SYN" --feature-size 117581 \
          --epochs 1 --threads "$t" 2> "$tag.err" | tail -n 1) || { echo "$c $m failed: $tag.err" >&2; return; }
        ;;
    esac
    record "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(bench="throughput", repeat=int(sys.argv[2])); print(json.dumps(r))' "$r" "$i")"
  }
  CONTESTANTS=(ctrain fuxictr pytorch)
  for i in $(seq "$REPEAT"); do
    for m in $RUN_MODELS; do
      for t in $THREADS_LIST; do
        echo "== throughput: repeat $i, $m, $t thread(s), load $(load1)" >&2
        for k in 0 1 2; do run_contestant "${CONTESTANTS[$(( (k + i) % 3 ))]}" "$m" "$t" "$i"; done
      done
    done
  done
  if [ -x "$ROOF" ]; then
    for t in $THREADS_LIST; do
      for i in $(seq "$REPEAT"); do
        "$ROOF" --batch 256 --fields 39 --embedding 16 --layers 200,200 --threads "$t" > "$OUT_DIR/roof_t${t}_$i.json"
        record "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=int(sys.argv[2])
g=r["threads_1"]["gflops"] if t == 1 else r["threads_all"]["gflops"]
print(json.dumps({"bench":"roofline","threads":t,"gflops":g}))' "$OUT_DIR/roof_t${t}_$i.json" "$t")"
      done
    done
  else
    echo "(no $ROOF: configure with -DCTRAIN_BUILD_BENCH=ON for the roofline column)" >&2
  fi
fi

python3 bench/zoo_report.py "$RUNS" "$JSON_OUT" "$RUN_MODELS"
