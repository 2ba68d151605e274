#!/usr/bin/env bash
# Parameter servers (issue #11): examples/s of 1 and 2 asynchronous workers
# against local training, the traffic per step (pulls, pushes, bytes) and
# where a worker's step goes. Results: docs/performance.md section 8.
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
# Environment: BUILD_DIR (build), RUNS (3), EPOCHS (2), BATCH (256), SHARDS (2), PARTITIONER (fixed_size).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
RUNS=${RUNS:-3}
EPOCHS=${EPOCHS:-2}
BATCH=${BATCH:-256}
SHARDS=${SHARDS:-2}
PARTITIONER=${PARTITIONER:-fixed_size}
CTRAIN="$BUILD_DIR/ctrain"
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/ps_bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT

SRC=../shared/data/criteo_deepfm_va10k.libsvm
if [ -f "$SRC" ]; then
  head -n 8000 "$SRC" > "$OUT/tr.libsvm"
  DATA=(--train "$OUT/tr.libsvm" --format libsvm --id-base 1 --field-size 39 --feature-size 921)
  WHAT="criteo_deepfm_va10k first 8000 lines"
else
  "$CTRAIN" synth --rows 8000 --format libsvm --seed 7 --output "$OUT/tr.libsvm" 2>/dev/null
  DATA=(--train "$OUT/tr.libsvm" --format libsvm)
  WHAT="synthetic 8000 rows"
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
run_ps() {  # run_ps <workers> <json prefix>
  local w=$1 pre=$2 pids=()
  start_servers
  for ((k = w - 1; k >= 0; k--)); do
    "$CTRAIN" train "${JOB[@]}" --ps "$ADDRS" --worker-index "$k" --num-workers "$w" \
      --metrics-json "$pre.$k.json" > "$OUT/w$k.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { cat "$OUT"/w*.log >&2; exit 1; }; done
  stop_servers
}

echo "ps bench: $WHAT, seed model (F 39, K 32, MLP 400-400-400), batch $BATCH, $EPOCHS epochs, 1 thread per worker,"
echo "  $SHARDS servers ($PARTITIONER), async; $RUNS rounds of: local, 1 worker, 2 workers"
for ((r = 1; r <= RUNS; r++)); do
  run_local "$OUT/local.$r.json"
  run_ps 1 "$OUT/ps1.$r"
  run_ps 2 "$OUT/ps2.$r"
done

python3 - "$OUT" "$RUNS" "$WHAT" <<'PY'
import json, statistics, sys
out, runs, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda p: json.load(open(p))
local = [load(f"{out}/local.{r}.json")["examples_per_sec"] for r in range(1, runs + 1)]
one = [load(f"{out}/ps1.{r}.0.json")["examples_per_sec"] for r in range(1, runs + 1)]
two = [sum(load(f"{out}/ps2.{r}.{k}.json")["examples_per_sec"] for k in (0, 1)) for r in range(1, runs + 1)]
med = statistics.median
def show(name, xs):
    print(f"{name:10s} examples/s: " + " ".join(f"{x:,.0f}" for x in xs) + f"  (min {min(xs):,.0f}, median {med(xs):,.0f})")
show("local", local); show("1 worker", one); show("2 workers", two)
print(f"ratios of medians: 1 worker / local {med(one)/med(local):.2f}x, 2 workers / local {med(two)/med(local):.2f}x, "
      f"2 workers / 1 worker {med(two)/med(one):.2f}x")
res = {"what": what, "local": local, "ps_1_worker": one, "ps_2_workers": two}
for label, pre in (("1 worker", "ps1"), ("2 workers", "ps2")):
    j = [load(f"{out}/{pre}.{r}.0.json") for r in range(1, runs + 1)]
    p = j[-1]["ps"]
    steps = p["steps"]
    step = med([x["ps"]["seconds_per_step"] for x in j])
    rpc = med([x["ps"]["rpc_seconds_per_step"] for x in j])
    enc = med([x["ps"]["encode_seconds_per_step"] for x in j])
    pb = med([x["ps"].get("protobuf_seconds_per_step", 0) for x in j])
    servers = p.get("servers", {}).get("shards", [])
    # Per server and worker step (every step reaches every server once per call); the servers run in parallel.
    apply_each = [s.get("apply_seconds", 0) / max(s.get("pushes", 0), 1) for s in servers] or [0]
    pull_each = [s.get("pull_seconds", 0) / max(s.get("pulls", 0), 1) for s in servers] or [0]
    pushes = sum(s.get("pushes", 0) for s in servers) or 1
    pulls = sum(s.get("pulls", 0) for s in servers) or 1
    up = max((s.get("uptime_s", 0) for s in servers), default=0) or 1
    per_step_apply, per_step_pull = max(apply_each), max(pull_each)
    print(f"{label}, chief per step (median of rounds): {1e3*step:.2f} ms = compute {1e3*(step-rpc-enc):.2f} ms"
          f" + packing {1e3*enc:.2f} ms + calls {1e3*rpc:.2f} ms; inside the calls (in parallel over the servers):"
          f" optimizer {1e3*per_step_apply:.2f} ms on the slowest server ({1e3*sum(apply_each):.2f} ms CPU over all),"
          f" row copy {1e3*per_step_pull:.2f} ms, protobuf (de)serialisation {1e3*pb:.2f} ms CPU (both ends, all servers)")
    print(f"  {p['pulls_per_step']:.1f} pulls + {p['pushes_per_step']:.1f} pushes per step, "
          f"{p['bytes_sent_per_step']:,.0f} bytes sent + {p['bytes_received_per_step']:,.0f} received per step; "
          f"servers: {pulls/up:,.1f} pulls/s, {pushes/up:,.1f} pushes/s over their uptime (last round, all servers)")
    res[pre] = {"seconds_per_step": step, "rpc_seconds_per_step": rpc, "encode_seconds_per_step": enc,
                "server_apply_seconds_per_step": per_step_apply, "protobuf_seconds_per_step": pb, "server_pull_seconds_per_step": per_step_pull,
                "pulls_per_step": p["pulls_per_step"], "pushes_per_step": p["pushes_per_step"],
                "bytes_sent_per_step": p["bytes_sent_per_step"], "bytes_received_per_step": p["bytes_received_per_step"]}
print(json.dumps(res))
PY
