#!/usr/bin/env bash
# Parameter servers (issues #11, #24): examples/s of 1 and 2 asynchronous
# workers, with the dense parameters on the servers and on the workers
# (--ps-dense), against local training; the chief's validation AUC; the
# traffic per step (pulls, pushes, bytes) and where a worker's step goes.
# Results: docs/performance.md section 9.
#
# Each round trains the same job locally, with 1 worker and with 2 workers
# (2 parameter servers each time, fresh processes, loopback), alternated,
# $RUNS rounds. examples/s come from each worker's --metrics-json (its own
# step time; 2 workers: the sum); traffic from the chief's "ps" object and
# the servers' status (ps/admin.h) it fetched at the end:
#   pulls/pushes_per_step    calls per worker step (one per server each)
#   bytes_sent/received_per_step  serialized request/response sizes
#   encode_seconds_per_step  splitting ids by server, packing and scattering rows
#   rpc_seconds_per_step     the parallel calls: network, gRPC and the servers
#   protobuf_seconds_per_step  serializing + parsing the step's messages once (sampled)
#   servers: pull_seconds (copying rows out), apply_seconds (the optimizer)
# Prints min and median examples/s per setup, the ratios of the medians,
# the per-step breakdown, then one JSON object on the last line.
#
#   bash bench/ps_bench.sh                  # real split if ../shared/data exists, else synthetic
#   RUNS=5 EPOCHS=3 bash bench/ps_bench.sh
# Environment: BUILD_DIR (build), RUNS (3), EPOCHS (2), BATCH (256), SHARDS (2), PARTITIONER (fixed_size),
# SYNC_STEPS (--ps-dense-sync-steps of the 2-worker --ps-dense workers setup: 8).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
RUNS=${RUNS:-3}
EPOCHS=${EPOCHS:-2}
BATCH=${BATCH:-256}
SHARDS=${SHARDS:-2}
PARTITIONER=${PARTITIONER:-fixed_size}
SYNC_STEPS=${SYNC_STEPS:-8}
CTRAIN="$BUILD_DIR/ctrain"
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/ps_bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT

SRC=../shared/data/criteo_deepfm_va10k.libsvm
if [ -f "$SRC" ]; then
  head -n 8000 "$SRC" > "$OUT/tr.libsvm"
  tail -n +8001 "$SRC" > "$OUT/va.libsvm"
  DATA=(--train "$OUT/tr.libsvm" --valid "$OUT/va.libsvm" --format libsvm --id-base 1 --field-size 39 --feature-size 921)
  WHAT="criteo_deepfm_va10k first 8000 lines, validation the last 2040"
else
  "$CTRAIN" synth --rows 8000 --format libsvm --seed 7 --output "$OUT/tr.libsvm" 2>/dev/null
  "$CTRAIN" synth --rows 2000 --format libsvm --seed 8 --output "$OUT/va.libsvm" 2>/dev/null
  DATA=(--train "$OUT/tr.libsvm" --valid "$OUT/va.libsvm" --format libsvm)
  WHAT="synthetic 8000 rows, validation 2000 more"
fi
JOB=("${DATA[@]}" --input-mode memory --epochs "$EPOCHS" --batch-size "$BATCH" --progress none
     --intra-op-parallelism-threads 1)

start_servers() {  # -> ADDRS (comma-separated)
  ADDRS=""
  PIDS=()
  for ((s = 0; s < SHARDS; s++)); do
    "$CTRAIN" ps --shard "$s" --num-shards "$SHARDS" --partitioner "$PARTITIONER" > "$OUT/ps$s.out" 2> "$OUT/ps$s.err" &
    PIDS+=($!)
  done
  for ((s = 0; s < SHARDS; s++)); do
    for _ in $(seq 200); do grep -q "listening on" "$OUT/ps$s.out" && break; sleep 0.05; done
    ADDRS="$ADDRS${ADDRS:+,}$(sed -n 's/^ctrain: ps listening on //p' "$OUT/ps$s.out")"
  done
}
stop_servers() { for p in "${PIDS[@]}"; do kill "$p"; done; wait "${PIDS[@]}" 2>/dev/null || true; PIDS=(); }

run_local() { "$CTRAIN" train "${JOB[@]}" --metrics-json "$1" > "$OUT/log" 2>&1 || { cat "$OUT/log" >&2; exit 1; }; }
run_ps() {  # run_ps <workers> <servers|workers> <json prefix>
  local w=$1 dense=$2 pre=$3 pids=()
  start_servers
  for ((k = w - 1; k >= 0; k--)); do
    "$CTRAIN" train "${JOB[@]}" --ps "$ADDRS" --worker-index "$k" --num-workers "$w" \
      --ps-dense "$dense" --ps-dense-sync-steps "$SYNC_STEPS" --metrics-json "$pre.$k.json" > "$OUT/w$k.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$OUT"/w*.log >&2; exit 1; }; done
  stop_servers
}

SETUPS=(ps1-servers ps1-workers ps2-servers ps2-workers)
echo "ps bench: $WHAT, seed model (F 39, K 32, MLP 400-400-400), batch $BATCH, $EPOCHS epochs, 1 thread per worker,"
echo "  $SHARDS servers ($PARTITIONER), async; $RUNS rounds of: local, then 1 and 2 workers with the dense parameters"
echo "  on the servers and on the workers (--ps-dense; 2 workers average every $SYNC_STEPS steps)"
for ((r = 1; r <= RUNS; r++)); do
  run_local "$OUT/local.$r.json"
  for s in "${SETUPS[@]}"; do
    w=${s:2:1}
    run_ps "$w" "${s#*-}" "$OUT/$s.$r"
  done
done

python3 - "$OUT" "$RUNS" "$WHAT" "${SETUPS[*]}" <<'PY'
import json, statistics, sys
out, runs, what, setups = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split()
load = lambda p: json.load(open(p))
med = statistics.median
R = range(1, runs + 1)
local = [load(f"{out}/local.{r}.json") for r in R]
rate = {"local": [j["examples_per_sec"] for j in local]}
auc = {"local": [j["auc"] for j in local]}
for s in setups:
    w = int(s[2])
    rate[s] = [sum(load(f"{out}/{s}.{r}.{k}.json")["examples_per_sec"] for k in range(w)) for r in R]
    auc[s] = [load(f"{out}/{s}.{r}.0.json")["auc"] for r in R]
res = {"what": what, "examples_per_sec": rate, "auc": auc}
for name in ["local"] + setups:
    xs = rate[name]
    a = [x for x in auc[name] if x is not None]
    print(f"{name:12s} examples/s: " + " ".join(f"{x:,.0f}" for x in xs) +
          f"  (min {min(xs):,.0f}, median {med(xs):,.0f}; / local median {med(xs)/med(rate['local']):.2f}x)" +
          (f"  valid auc median {med(a):.4f}" if a else ""))
for s in setups:
    j = [load(f"{out}/{s}.{r}.0.json") for r in R]
    p = j[-1]["ps"]
    step = med([x["ps"]["seconds_per_step"] for x in j])
    rpc = med([x["ps"]["rpc_seconds_per_step"] for x in j])
    enc = med([x["ps"]["encode_seconds_per_step"] for x in j])
    pb = med([x["ps"].get("protobuf_seconds_per_step", 0) for x in j])
    servers = p.get("servers", {}).get("shards", [])
    # Per server and worker step (every step reaches every server once per call); the servers run in parallel.
    apply_each = [sv.get("apply_seconds", 0) / max(sv.get("pushes", 0), 1) for sv in servers] or [0]
    pull_each = [sv.get("pull_seconds", 0) / max(sv.get("pulls", 0), 1) for sv in servers] or [0]
    print(f"{s}, chief per step (median of rounds): {1e3*step:.2f} ms = compute {1e3*(step-rpc-enc):.2f} ms"
          f" + packing {1e3*enc:.2f} ms + calls {1e3*rpc:.2f} ms; inside the calls (in parallel over the servers):"
          f" optimizer {1e3*max(apply_each):.2f} ms on the slowest server, row copy {1e3*max(pull_each):.2f} ms,"
          f" protobuf (de)serialisation {1e3*pb:.2f} ms CPU (both ends, all servers)")
    print(f"  {p['pulls_per_step']:.2f} pulls + {p['pushes_per_step']:.2f} pushes per step, "
          f"{p['bytes_sent_per_step']:,.0f} bytes sent + {p['bytes_received_per_step']:,.0f} received per step "
          f"(dense: {p.get('dense', 'servers')}, {p.get('dense_syncs', 0)} dense-only pushes)")
    res[s] = {"seconds_per_step": step, "rpc_seconds_per_step": rpc, "encode_seconds_per_step": enc,
              "bytes_sent_per_step": p["bytes_sent_per_step"], "bytes_received_per_step": p["bytes_received_per_step"]}
print(json.dumps(res))
PY
