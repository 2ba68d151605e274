#!/usr/bin/env bash
# The second field report's step-time comparison (issue #23 item 5): a user's PyTorch DeepFM
# (examples/heterogeneous/pytorch_deepfm.py, 1 torch thread, K 16, MLP 128-128, batch 1024) pinned
# to core 0, its input prepared on core 1 by
#   (a) a PyTorch DataLoader with 0 (the trainer's own core), 1 or 2 worker processes,
#   (b) tf.data.service (a dispatcher + worker process on core 1),
#   (c) ctrain's data service (dispatcher + worker on core 1, --threads 1),
# from raw Criteo TSV and from TFRecord (the same rows, `ctrain convert --hash-buckets`).
# bench/peers/heterogeneous_step.py is the trainer; it reports the step time, the input wait and
# examples/s of WARMUP + STEPS steps. The setups alternate within each of REPEAT rounds; the table
# gives min and median over the rounds.
#   bench/heterogeneous_step_bench.sh [REPS=1200] [STEPS=100] [REPEAT=3]
# MODEL="K LAYERS" sizes the DeepFM (default "16 128,128"); a small one ("4 16") stands for an
# accelerator's short step, where the input tier, not the trainer, sets the pace.
# Then `ctrain report` prices each layout from the same runs: every trainer records its steps
# (ctrain.monitor_steps; a DataServicePipeline by itself) into a run directory laid out as `ctrain
# launch` writes one, the trainer's host as TRAIN_TYPE (default ml.g5.xlarge: its DataLoader workers
# are that host's own CPUs) and, for (b) and (c), the data tier's host as DATA_TYPE (ml.c5.xlarge,
# its CPU as sampled over the whole bench), priced from PRICES (examples/prices.toml). The report's
# Markdown, CSV and charts go to REPORT_DIR when set. Its figures are the means over the rounds
# (the first step of each run dropped), the table's are min and median.
# Needs: build/ctrain, the installed ctrain package (pip install .), torch, tensorflow-cpu and the
# `tfrecord` package (bench/peers/requirements.txt), 2 cores. The TSV is
# ../shared/data/criteo_raw_paddlerec_part-0.tsv (100 rows) repeated REPS times into a temp dir
# (Criteo data never goes into the repo).
set -euo pipefail
REPS=${1:-1200}
STEPS=${2:-100}
REPEAT=${3:-3}
WARMUP=${WARMUP:-10}
BUCKETS=${BUCKETS:-1048576}
read -r EMB LAYERS <<< "${MODEL:-16 128,128}"
TRAIN_TYPE=${TRAIN_TYPE:-ml.g5.xlarge}
DATA_TYPE=${DATA_TYPE:-ml.c5.xlarge}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN="$SRC/build/ctrain"
PY=${PYTHON:-python3}
[ -x "$BIN" ] || { echo "no $BIN (build first: scripts/build.sh)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (the trainer on core 0, the data tier on core 1)" >&2; exit 1; }
TSV_SRC="$SRC/../shared/data/criteo_raw_paddlerec_part-0.tsv"
[ -r "$TSV_SRC" ] || { echo "no $TSV_SRC (shared data)" >&2; exit 1; }
for m in torch tensorflow tfrecord ctrain; do
  "$PY" -c "import $m" 2>/dev/null || { echo "python module $m is missing (pip install -r bench/peers/requirements.txt; pip install .)" >&2; exit 1; }
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrain_hetero_step.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

TSV="$WORK/big.tsv"
TFR="$WORK/big.tfrecord"
for _ in $(seq "$REPS"); do cat "$TSV_SRC"; done > "$TSV"
"$BIN" convert -i "$TSV" -o "$TFR" --format criteo-tsv --hash-buckets "$BUCKETS" 2> "$WORK/convert.err"
"$PY" -m tfrecord.tools.tfrecord2idx "$TFR" "$TFR.idx" > /dev/null
echo "DeepFM K $EMB, MLP $LAYERS, batch 1024; rows: $((REPS * 100)); tsv $(stat -c %s "$TSV") bytes, tfrecord $(stat -c %s "$TFR") bytes; $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"

. "$SRC/bench/lib.sh"  # wait_line
taskset -c 1 "$BIN" data-service dispatcher --port 0 > "$WORK/disp.out" 2> "$WORK/disp.err" & PIDS+=($!)
CTRAIN_ADDR=$(wait_line "$WORK/disp.out" "listening on")
mkdir -p "$WORK/mon/ctrain" "$WORK/mon/tfds"  # the data tiers' own monitoring (their CPU), for the report
taskset -c 1 "$BIN" data-service worker --dispatcher "$CTRAIN_ADDR" --threads 1 --monitor-dir "$WORK/mon/ctrain" \
  > "$WORK/worker.out" 2> "$WORK/worker.err" & PIDS+=($!)
wait_line "$WORK/worker.out" "listening on" > /dev/null
CTRAIN_MONITOR_DIR="$WORK/mon/tfds" taskset -c 1 "$PY" "$SRC/bench/peers/tf_data_service_peer.py" server > "$WORK/tfds.out" 2> "$WORK/tfds.err" & PIDS+=($!)
TFDS_ADDR=$(wait_line "$WORK/tfds.out" "dispatcher")

# A run directory per layout, with the role.json `ctrain launch` writes: DIR HOST ROLE GROUP TYPE.
role_json() {
  mkdir -p "$1"
  printf '{"host": "%s", "role": "%s", "instance_group": "%s", "instance_type": "%s", "group_hosts": 1, "ranks": 1}\n' \
    "$2" "$3" "$4" "$5" > "$1/role.json"
}
RUNS="$WORK/runs"
: > "$WORK/runs.jsonl"
for i in $(seq "$REPEAT"); do
  for input in tsv tfrecord; do
    file=$TSV
    [ "$input" = tfrecord ] && file=$TFR
    for setup in dataloader0 dataloader1 dataloader2 tfds ctrain; do
      case $setup in
        dataloader*) args=(--feed dataloader --workers "${setup#dataloader}") ;;
        tfds) args=(--feed tfds --service "$TFDS_ADDR" --job-name "tfds-$input-$i") ;;
        ctrain) args=(--feed ctrain --service "$CTRAIN_ADDR" --job-name "ctrain-$input-$i") ;;
      esac
      run="$RUNS/$input-$setup"
      role_json "$run/algo-1/trainer" algo-1 trainer train "$TRAIN_TYPE"
      case $setup in tfds|ctrain) role_json "$run/algo-2/data-worker" algo-2 data-worker data "$DATA_TYPE" ;; esac
      CTRAIN_MONITOR_DIR="$run/algo-1/trainer" "$PY" "$SRC/bench/peers/heterogeneous_step.py" "${args[@]}" --input "$input" --file "$file" \
        --feature-size "$BUCKETS" --embedding-size "$EMB" --deep-layers "$LAYERS" --warmup "$WARMUP" --steps "$STEPS" 2> "$WORK/run.err" | tail -1 >> "$WORK/runs.jsonl" \
        || { echo "run $setup $input failed:" >&2; tail -5 "$WORK/run.err" >&2; exit 1; }
      tail -1 "$WORK/runs.jsonl"
    done
  done
done

"$PY" - "$WORK/runs.jsonl" <<'EOF'
import collections, json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
groups = collections.defaultdict(list)
for r in runs:
    name = {"dataloader": f"PyTorch DataLoader, {r['workers']} worker(s)", "tfds": "tf.data.service",
            "ctrain": "ctrain data service"}[r["feed"]]
    groups[(r["input"], name)].append(r)
print("\n| input | feed | examples/s min | examples/s median | step ms median (min-max) | input wait median |")
print("|---|---|---|---|---|---|")
best = {}
for (inp, name), rs in groups.items():
    eps = [r["examples_per_sec"] for r in rs]
    ms = [r["step_ms_median"] for r in rs]
    wait = [r["input_wait_fraction"] for r in rs]
    print(f"| {inp} | {name} | {min(eps):,.0f} | {statistics.median(eps):,.0f} | {statistics.median(ms):.1f} "
          f"({min(ms):.1f}-{max(ms):.1f}) | {statistics.median(wait):.0%} |")
    key = (inp, name.split(",")[0])
    best[key] = max(best.get(key, 0), statistics.median(eps))
print("\nmedian examples/s, ctrain vs the best of each peer:")
for inp in ("tsv", "tfrecord"):
    c = best[(inp, "ctrain data service")]
    print(f"  {inp}: ctrain {c:,.0f}; {c / best[(inp, 'PyTorch DataLoader')]:.2f}x the best DataLoader, "
          f"{c / best[(inp, 'tf.data.service')]:.2f}x tf.data.service")
EOF

# The data tiers stop (their monitors write their last sample), then each layout is priced.
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()
for input in tsv tfrecord; do
  for tier in tfds ctrain; do cp "$WORK/mon/$tier/metrics.jsonl" "$RUNS/$input-$tier/algo-2/data-worker/"; done
done
echo
"$BIN" report "$RUNS"/tsv-* "$RUNS"/tfrecord-* --prices "${PRICES:-$SRC/examples/prices.toml}" \
  --output-dir "${REPORT_DIR:-$WORK/report}"
