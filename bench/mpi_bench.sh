#!/usr/bin/env bash
# Synchronous data-parallel training under mpirun (issue #10): 1 rank vs N
# ranks, 1 thread each, the same per-rank batch (weak scaling, Horovod's
# model), and the bytes each rank sends per step against the ring-allreduce
# model. Results: docs/performance.md section 6.
#
# Each round trains the same job once per rank count, alternated, $RUNS
# rounds (a shared machine drifts; alternation spreads the drift over both).
# examples/s (all ranks together) come from rank 0's --metrics-json; the
# traffic from its "mpi" object:
#   dense/sparse/control_bytes_per_step  what this rank handed to MPI
#                           collectives per step (the fused dense buffer; the
#                           sparse row counts, ids and rows; votes), and
#                           broadcast_bytes (rank 0's initial state, once)
#   written_bytes_per_step  /proc/self/io wchar growth per step; with
#                           --mca btl self,tcp (one TRAFFIC run) that is the
#                           bytes this rank sent over its sockets
# Prints min and median examples/s per rank count, the ratio of the medians
# (and the worst case: min of N ranks / median of 1 rank), the measured bytes
# against 2(N-1)/N * 4P + sparse, then one JSON object on the last line.
#
#   bash bench/mpi_bench.sh                  # real split if ../shared/data exists, else synthetic
#   RUNS=5 EPOCHS=3 RANKS=2 bash bench/mpi_bench.sh
# Environment: BUILD_DIR (build), RUNS (3), EPOCHS (2), RANKS (2), BATCH (256 per rank).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
RUNS=${RUNS:-3}
EPOCHS=${EPOCHS:-2}
RANKS=${RANKS:-2}
BATCH=${BATCH:-256}
CTRAIN="$BUILD_DIR/ctrain"
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/mpi_bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --bind-to none)

SRC=../shared/data/criteo_deepfm_va10k.libsvm
if [ -f "$SRC" ]; then
  head -n 8000 "$SRC" > "$OUT/tr.libsvm"
  DATA=(--train "$OUT/tr.libsvm" --id-base 1 --feature-size 922)
  WHAT="criteo_deepfm_va10k first 8000 lines"
else
  "$CTRAIN" synth --rows 8000 --format libsvm --seed 7 --output "$OUT/tr.libsvm" 2>/dev/null
  DATA=(--train "$OUT/tr.libsvm")
  WHAT="synthetic 8000 rows"
fi
JOB=("${DATA[@]}" --input-mode memory --epochs "$EPOCHS" --batch-size "$BATCH" --progress none
     --intra-op-parallelism-threads 1)

run() {  # run <ranks> <json> [mpirun args...]
  local n=$1 json=$2
  shift 2
  "${MPIRUN[@]}" "$@" -np "$n" "$CTRAIN" train "${JOB[@]}" --metrics-json "$json" > "$OUT/log" 2>&1 ||
    { cat "$OUT/log" >&2; exit 1; }
}
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }

echo "mpi bench: $WHAT, seed model (embedding 32, MLP 400-400-400), batch $BATCH per rank, $EPOCHS epochs, $RUNS rounds"
ONE=() MANY=()
for ((i = 0; i < RUNS; i++)); do
  run 1 "$OUT/one.json"
  ONE+=("$(field "$OUT/one.json" "d['examples_per_sec']")")
  run "$RANKS" "$OUT/many.json"
  MANY+=("$(field "$OUT/many.json" "d['examples_per_sec']")")
  echo "  round $((i + 1)): 1 rank ${ONE[-1]} ex/s, $RANKS ranks ${MANY[-1]} ex/s"
done
# One host, the same cores split two ways ("Horovod on one multi-CPU instance"): 1 rank x RANKS
# threads vs RANKS ranks x 1 thread, both at the effective batch RANKS x BATCH (the rank run's median
# from above is the second; this run is the first). --autotune does not weigh this (docs/distributed.md).
THREADED=()
for ((i = 0; i < RUNS; i++)); do
  "${MPIRUN[@]}" -np 1 "$CTRAIN" train "${DATA[@]}" --input-mode memory --epochs "$EPOCHS" \
    --batch-size $((BATCH * RANKS)) --progress none --intra-op-parallelism-threads "$RANKS" \
    --metrics-json "$OUT/thr.json" > "$OUT/log" 2>&1 || { cat "$OUT/log" >&2; exit 1; }
  THREADED+=("$(field "$OUT/thr.json" "d['examples_per_sec']")")
done
# One run over TCP (loopback) so that wchar counts the bytes on the wire.
run "$RANKS" "$OUT/tcp.json" --mca btl self,tcp
PAYLOAD=$(field "$OUT/tcp.json" "d['mpi']['dense_bytes_per_step'] + d['mpi']['sparse_bytes_per_step'] + d['mpi']['control_bytes_per_step']")
SPARSE=$(field "$OUT/tcp.json" "d['mpi']['sparse_bytes_per_step']")
BCAST=$(field "$OUT/tcp.json" "d['mpi']['broadcast_bytes'] / d['steps']")
WIRE=$(field "$OUT/tcp.json" "d['mpi']['written_bytes_per_step']")
COLLS=$(field "$OUT/tcp.json" "d['mpi']['collectives_per_step']")
STEP_S=$(field "$OUT/many.json" "d['seconds'] / d['steps']")
# Compute time per step: the 1-rank run's step minus its (trivial) collectives.
COMPUTE_S=$(field "$OUT/one.json" "d['seconds'] / d['steps'] - d['mpi']['collective_seconds_per_step']")
COLL_S=$(field "$OUT/many.json" "d['mpi']['collective_seconds_per_step']")
# P: dense floats of the seed model (F=39, K=32, 400-400-400, FM bias), from the checkpoint layout.
python3 - "$RANKS" "$PAYLOAD" "$WIRE" "$COLLS" "$STEP_S" "${ONE[*]}" "${MANY[*]}" "$COMPUTE_S" "$COLL_S" "${THREADED[*]}" "$SPARSE" "$BCAST" <<'EOF'
import json, statistics, sys
n = int(sys.argv[1]); payload, wire, colls, step_s = map(float, sys.argv[2:6])
one = [float(x) for x in sys.argv[6].split()]; many = [float(x) for x in sys.argv[7].split()]
compute_s, coll_s = float(sys.argv[8]), float(sys.argv[9])
threaded = [float(x) for x in sys.argv[10].split()]
sparse, bcast = float(sys.argv[11]), float(sys.argv[12])
F, K, H = 39, 32, [400, 400, 400]
P, fan_in = 0, F * K
for h in H:
    P += fan_in * h + h; fan_in = h
P += fan_in + 1 + 1   # deep_out weights + bias, fm bias
dense_model = 2 * (n - 1) / n * 4 * (P + 2)   # ring allreduce of the fused buffer (+ loss, count)
mo, mm = statistics.median(one), statistics.median(many)
print(f"examples/s   1 rank: min {min(one):.0f} median {mo:.0f} | {n} ranks: min {min(many):.0f} median {mm:.0f}")
print(f"speed-up     {mm / mo:.2f}x (medians), worst {min(many) / mo:.2f}x; target >= 1.8x: {'met' if mm / mo >= 1.8 else 'NOT met'}")
mt = statistics.median(threaded)
print(f"one host     1 rank x {n} threads: min {min(threaded):.0f} median {mt:.0f} | {n} ranks x 1 thread: median {mm:.0f} "
      f"({mm / mt:.2f}x)")
print(f"traffic      dense P = {P} floats; model 2(N-1)/N*4P = {dense_model:.0f} B/step; sparse payload {sparse:.0f} B/step "
      f"(sent to each of the N-1 others); initial broadcast {bcast:.0f} B/step amortised")
model_total = dense_model + (n - 1) * sparse + (payload - 4 * (P + 2) - sparse) + bcast
print(f"             model total {model_total:.0f} B/step; measured over TCP: {wire:.0f} B/step written "
      f"({wire / model_total - 1:+.2%}; {colls:.1f} collectives/step)")
print(f"step time    {step_s * 1e3:.1f} ms at {n} ranks, of which {coll_s * 1e3:.1f} ms in collectives; "
      f"compute {compute_s * 1e3:.1f} ms/step (1 rank)")
# Scaling model (docs/performance.md section 6): per-rank batch fixed, one host per rank.
# T(N) = compute + bytes(N) / bandwidth + latency(N); bytes(N) = ring allreduce 2(N-1)/N * 4P of
# the dense buffer + (N-1) * S received by the sparse allgathers; latency(N) = ring steps of the
# 6 collectives per step: (2 + 3) (N-1) hops (dense allreduce, 3 allgathers) * alpha + the vote's
# 2 log2(N) (recursive doubling).
ALPHA = 20e-6   # s per message hop over TCP on a datacenter link
def step_time(N, gbps, comp):
    bw = gbps * 1e9 / 8
    byts = 2 * (N - 1) / N * 4 * (P + 2) + (N - 1) * sparse
    return comp + byts / bw + (5 * (N - 1) + 2 * (N - 1).bit_length()) * ALPHA
model = {}
for label, comp in (("measured 1-thread compute", compute_s), ("a host 8x faster (8+ cores)", compute_s / 8)):
    print(f"scaling model, {label} ({comp * 1e3:.2f} ms/step):")
    print("  hosts | 25 Gb/s: speed-up  efficiency | 100 Gb/s: speed-up  efficiency")
    for N in (1, 2, 4, 8, 16):
        row = []
        for g in (25, 100):
            t = step_time(N, g, comp)
            row.append((N * comp / t, comp / t))
            model[f"{label}|{g}|{N}"] = N * comp / t
        print(f"  {N:5d} | {row[0][0]:16.2f}x {row[0][1]:10.0%} | {row[1][0]:17.2f}x {row[1][1]:10.0%}")
print(json.dumps({"ranks": n, "one_rank_eps": one, "n_rank_eps": many, "speedup_median": mm / mo,
                  "one_rank_n_threads_eps": threaded,
                  "dense_floats": P, "model_bytes_per_step": dense_model, "sparse_bytes_per_step": sparse,
                  "broadcast_bytes_per_step": bcast, "model_total_bytes_per_step": model_total,
                  "measured_wire_bytes_per_step": wire, "payload_bytes_per_step": payload,
                  "collectives_per_step": colls, "step_seconds": step_s, "compute_seconds": compute_s,
                  "collective_seconds": coll_s, "model_speedup": model}))
EOF
