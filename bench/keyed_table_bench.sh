#!/usr/bin/env bash
# Keyed embedding table (--embedding-table keyed, train/key_index.h) against the positional table, in one run
# (issue #20 "Speed and memory"): the throughput config (K 32, MLP 400-400-400, batch 1024, F 39, Adam) on
# LibSVM rows whose ids are uniform over $KEYS keys, memory mode. Each round, per table (alternated):
#   0. one epoch without a model dir: the keyed table admits every key (about $KEYS live rows); its peak RSS is
#      the training memory;
#   1. the same into a model dir: its peak RSS adds the checkpoint's (the keyed table's snapshot of its index);
#   2. the timed run: warm-started from it, $EPOCHS more epochs on the same rows, so the keyed table holds
#      its live keys throughout (a day-N run of the daily loop); examples/s from --metrics-json (training
#      steps only; both tables pay the same restore before them).
# $RUNS rounds. Reports per table examples/s (min and median), the keyed/fixed ratio of the medians (goal
# >= 0.85 at 1 M keys, >= 0.75 at 20 M), the peak RSS of runs 0 and 1, the keyed table's live rows and the
# memory per live row, training and at a checkpoint:
#   bytes/row = (RSS keyed - RSS fixed + KEYS x (K + 1) x 4 x (1 + 2 Adam slots)) / live rows
# (both runs hold the same model and data; the fixed table holds all KEYS rows, committed, the keyed one its
# live rows, so the RSS difference is the index's overhead less the rows of keys that never occurred).
# Goal: <= (K + 1) x 4 x 3 + 24 bytes.
# bench/key_index_bench measures the index alone (lookup, insert, eviction, snapshot per core).
#
#   bash bench/keyed_table_bench.sh                 # 1 M keys, 3 rounds
#   KEYS=20000000 ROWS=600000 RUNS=2 bash bench/keyed_table_bench.sh
#   RANKS=2 bash bench/keyed_table_bench.sh         # both tables under mpirun -np 2 (the keyed table's key
#                                                   # allgather; examples/s over all ranks; the RSS is the
#                                                   # largest rank's)
# Environment: BUILD_DIR (build), KEYS (1000000), ROWS (250000 training rows), RUNS (3), EPOCHS (2), RANKS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
KEYS=${KEYS:-1000000}
ROWS=${ROWS:-250000}
RUNS=${RUNS:-3}
EPOCHS=${EPOCHS:-2}
RANKS=${RANKS:-1}
CTRAIN="$BUILD_DIR/ctrain"
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/keyed_table_bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
echo "== $KEYS keys, $ROWS rows, 1 + $EPOCHS epochs, $RUNS rounds, $RANKS rank(s); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$OUT/train.libsvm" "$KEYS" "$ROWS" <<'EOF'
import sys
import numpy as np
path, keys, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(7)
F = 39
with open(path, "w") as f:
    for start in range(0, rows, 20000):
        n = min(20000, rows - start)
        ids = rng.integers(0, keys, size=(n, F))
        logit = ((ids % 7) - 3).sum(axis=1) * 0.05
        labels = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
        f.write("".join(str(labels[i]) + " " + " ".join(f"{x}:1" for x in ids[i]) + "\n" for i in range(n)))
EOF

cat > "$OUT/run.py" <<'EOF'
# run.py DIR EPOCHS CTRAIN train ARGS...: the first run (1 epoch) and the timed warm-started one.
import json, resource, subprocess, sys
d, epochs, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
quiet = dict(check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
subprocess.run(cmd + ["--epochs", "1"], **quiet)
rss_train = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
subprocess.run(cmd + ["--epochs", "1", "--model-dir", d + "/day0"], **quiet)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the children's maximum: run 1's when larger
subprocess.run(cmd + ["--epochs", epochs, "--warm-start-from", d + "/day0", "--model-dir", d + "/day1",
                      "--metrics-json", d + "/m.json"], **quiet)
m = json.load(open(d + "/m.json"))
print(m["examples_per_sec"], rss_train, rss, m.get("keyed_table", {}).get("live_rows", 0))
EOF
JOB=(--train "$OUT/train.libsvm" --format libsvm --field-size 39 --feature-size "$KEYS" --embedding-size 32
     --deep-layers 400,400,400 --batch-size 1024 --optimizer adam --progress none)
LAUNCH=()
if [ "$RANKS" -gt 1 ]; then  # the cores split between the ranks (batch 1024 per rank)
  LAUNCH=(mpirun --oversubscribe --allow-run-as-root --mca btl self,vader -np "$RANKS")
  JOB+=(--intra-op-parallelism-threads "$(( $(nproc) / RANKS > 0 ? $(nproc) / RANKS : 1 ))")
fi
run() {  # table round -> "examples/s rss_train_kib rss_checkpoint_kib live_rows"
  local table=$1 dir="$OUT/$1.$2" extra=()
  [ "$table" = keyed ] && extra=(--embedding-table keyed --max-rows "$KEYS")
  python3 "$OUT/run.py" "$dir" "$EPOCHS" "${LAUNCH[@]}" "$CTRAIN" train "${JOB[@]}" "${extra[@]}"
  rm -rf "$dir"
}
declare -A EPS RSS CKPT
LIVE=0
for r in $(seq "$RUNS"); do
  for table in fixed keyed; do
    read -r eps rss ckpt live < <(run "$table" "$r")
    EPS[$table]+="$eps "
    RSS[$table]+="$rss "
    CKPT[$table]+="$ckpt "
    [ "$table" = keyed ] && LIVE=$live
    echo "round $r $table: $eps examples/s; peak RSS training $((rss / 1024)) MiB, with a checkpoint" \
         "$((ckpt / 1024)) MiB; live rows $live" >&2
  done
done
python3 - "${EPS[fixed]}" "${EPS[keyed]}" "${RSS[fixed]}" "${RSS[keyed]}" "${CKPT[fixed]}" "${CKPT[keyed]}" \
    "$LIVE" "$KEYS" <<'EOF'
import json, statistics, sys
med = statistics.median
ef, ek = [list(map(float, s.split())) for s in sys.argv[1:3]]
rf, rk, cf, ck = [list(map(int, s.split())) for s in sys.argv[3:7]]
live, keys = int(sys.argv[7]), int(sys.argv[8])
K, slots = 32, 2
row_bytes = (K + 1) * 4 * (1 + slots)
# The fixed table holds all `keys` rows, the keyed one its live rows (fewer when some keys never occur):
# RSS fixed = base + keys x row_bytes, RSS keyed = base + live x bytes/row.
per_row = ((med(rk) - med(rf)) * 1024 + keys * row_bytes) / max(live, 1)
per_row_ckpt = ((med(ck) - med(cf)) * 1024 + keys * row_bytes) / max(live, 1)
ratio = med(ek) / med(ef)
goal = 0.85 if keys <= 1_000_000 else 0.75
print(f"fixed: examples/s min {min(ef):.0f} median {med(ef):.0f}; peak RSS median {med(rf)//1024} MiB "
      f"(with a checkpoint {med(cf)//1024} MiB)")
print(f"keyed: examples/s min {min(ek):.0f} median {med(ek):.0f}; peak RSS median {med(rk)//1024} MiB "
      f"(with a checkpoint {med(ck)//1024} MiB); live rows {live}")
print(f"keyed / fixed (medians): {ratio:.3f} (goal >= {goal}); memory per live row {per_row:.1f} bytes training, "
      f"{per_row_ckpt:.1f} at a checkpoint (goal <= {row_bytes + 24})")
print(json.dumps({"keys": keys, "live_rows": live, "fixed_eps": ef, "keyed_eps": ek, "ratio": round(ratio, 4),
                  "rss_fixed_kib": rf, "rss_keyed_kib": rk, "rss_ckpt_fixed_kib": cf, "rss_ckpt_keyed_kib": ck,
                  "bytes_per_live_row": round(per_row, 1), "bytes_per_live_row_checkpoint": round(per_row_ckpt, 1)}))
EOF
