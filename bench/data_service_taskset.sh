#!/usr/bin/env bash
# The field report's experiment (issue #8, Bench 2): a trainer on raw Criteo
# TSV preprocessed on the fly, pinned to core 0 with taskset, fed
#   (a) by its own input pipeline on the same core (--intra-op-parallelism-threads 1), or
#   (b) by one data-service worker pinned to core 1 (the dispatcher is pinned there too),
#       in distributed_epoch with the default 8 splits, and with --num-splits 1.
# Reports the trainer's examples/s and input_wait_fraction (--metrics-json),
# median and best of REPEAT runs, and the trainer process's CPU seconds
# (/usr/bin/time user+sys, whole process incl. start-up): examples per CPU
# second is the figure a shared machine cannot skew, CPU-s / wall-s is
# the share of core 0 the trainer got, and "preempted" is the time its threads
# were runnable but not running (/proc/PID/task/*/schedstat); the three setups alternate within each repeat
# so that machine noise hits all of them alike.
#   bench/data_service_taskset.sh [REPS=2000] [MAX_STEPS=400] [REPEAT=3]
# The TSV is ../shared/data/criteo_raw_paddlerec_part-0.tsv (100 rows, Criteo
# terabyte layout: label, I1..I13, C1..C26) repeated REPS times into a temp dir
# (Criteo data never goes into the repo). MODEL overrides the model flags.
set -euo pipefail
REPS=${1:-2000}
MAX_STEPS=${2:-400}
REPEAT=${3:-3}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN="$SRC/build/ctrain"
[ -x "$BIN" ] || { echo "no $BIN (build first: scripts/build.sh)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (taskset -c 0 and -c 1)" >&2; exit 1; }
TSV_SRC="$SRC/../shared/data/criteo_raw_paddlerec_part-0.tsv"
[ -r "$TSV_SRC" ] || { echo "no $TSV_SRC (shared data)" >&2; exit 1; }
MODEL=${MODEL:---embedding-size 16 --deep-layers 128,128}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctrain_ds_taskset.XXXXXX")
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

TSV="$WORK/big.tsv"
for _ in $(seq "$REPS"); do cat "$TSV_SRC"; done > "$TSV"
"$BIN" inspect "$TSV" 2>/dev/null | head -1

. "$SRC/bench/lib.sh"  # wait_line
taskset -c 1 "$BIN" data-service dispatcher --port 0 > "$WORK/disp.out" 2> "$WORK/disp.err" & PIDS+=($!)
ADDR=$(wait_line "$WORK/disp.out" "listening on")
taskset -c 1 "$BIN" data-service worker --dispatcher "$ADDR" --threads 1 > "$WORK/worker.out" 2> "$WORK/worker.err" & PIDS+=($!)
wait_line "$WORK/worker.out" "listening on" > /dev/null

TRAIN="train --train $TSV --batch-size 1024 --max-steps $MAX_STEPS --shuffle-buffer-size 10000 --progress none --intra-op-parallelism-threads 1 $MODEL"
echo "trainer: taskset -c 0 ctrain $TRAIN [--data-service $ADDR ...]; $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$WORK/runs.txt"
for i in $(seq "$REPEAT"); do
  for setup in local service8 service1; do
    extra=()
    case $setup in
      service8) extra=(--data-service "$ADDR" --job-name "ts8-$i") ;;
      service1) extra=(--data-service "$ADDR" --job-name "ts1-$i" --num-splits 1) ;;
    esac
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %U %S" -o "$WORK/time.txt" \
      taskset -c 0 "$BIN" $TRAIN "${extra[@]}" --metrics-json "$WORK/m.json" 2> "$WORK/train.err" &
    TP=$!
    # The trainer's time runnable but not running (preempted), summed over its threads
    # (/proc/PID/task/*/schedstat, 2nd field), sampled every 50 ms until it exits.
    echo 0 > "$WORK/delay.txt"
    while kill -0 "$TP" 2>/dev/null; do
      CP=$(pgrep -P "$TP" | head -1 || true)
      if [ -n "$CP" ]; then
        cat /proc/"$CP"/task/*/schedstat 2>/dev/null | awk '{d += $2} END {print d / 1e9}' > "$WORK/delay.tmp" &&
          [ -s "$WORK/delay.tmp" ] && mv "$WORK/delay.tmp" "$WORK/delay.txt"
      fi
      sleep 0.05
    done
    wait "$TP" || { cat "$WORK/train.err" >&2; exit 1; }
    python3 - "$setup" "$WORK/m.json" "$WORK/time.txt" "$WORK/delay.txt" <<'PY' | tee -a "$WORK/runs.txt"
import json, sys
m = json.load(open(sys.argv[2]))
wall, user, sys_ = map(float, open(sys.argv[3]).read().split()[-3:])
print(json.dumps({"setup": sys.argv[1], "examples_per_sec": m["examples_per_sec"],
                  "input_wait_fraction": m["input_wait_fraction"], "examples": m["examples"], "steps": m["steps"],
                  "trainer_cpu_s": round(user + sys_, 3), "trainer_wall_s": wall,
                  "trainer_preempted_s": round(float(open(sys.argv[4]).read() or 0), 3)}))
PY
  done
done
python3 - "$WORK/runs.txt" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
names = {"local": "(a) local pipeline, core 0",
         "service8": "(b) 1 worker on core 1, distributed_epoch, 8 splits (default)",
         "service1": "(b) 1 worker on core 1, distributed_epoch, --num-splits 1"}
base = st.median(r["examples_per_sec"] for r in rows if r["setup"] == "local")
cpu_base = st.median(r["examples"] / r["trainer_cpu_s"] for r in rows if r["setup"] == "local")
print("\n| setup | trainer examples/s median (best) | input_wait_fraction median (max) | vs (a) "
      "| trainer examples per CPU-s (median) | vs (a) | trainer CPU share of core 0 | trainer preempted s (median) |")
print("|---|---|---|---|---|---|---|---|")
for k, name in names.items():
    rs = [r for r in rows if r["setup"] == k]
    e = [r["examples_per_sec"] for r in rs]
    w = [r["input_wait_fraction"] for r in rs]
    c = st.median(r["examples"] / r["trainer_cpu_s"] for r in rs)
    share = st.median(r["trainer_cpu_s"] / r["trainer_wall_s"] for r in rs)
    print(f"| {name} | {st.median(e):,.0f} ({max(e):,.0f}) | {st.median(w):.3f} ({max(w):.3f}) | {st.median(e) / base:.2f}x "
          f"| {c:,.0f} | {c / cpu_base:.2f}x | {share:.2f} | {st.median(r['trainer_preempted_s'] for r in rs):.2f} |")
PY
