#!/usr/bin/env bash
# Keyed embedding table (--embedding-table keyed, train/key_index.h) against the positional table, in one run
# (issue #20 "Speed and memory"): the throughput config (K 32, MLP 400-400-400, batch 1024, F 39, Adam) on
# LibSVM rows whose ids are uniform over $KEYS keys (every key live after the first pass), memory mode.
# Each round trains fixed and keyed once, alternated; $RUNS rounds. Reports per table: examples/s (min and
# median, from --metrics-json), the keyed/fixed ratio of the medians (goal >= 0.85 at 1 M keys, >= 0.75 at
# 20 M), peak RSS, the keyed table's live rows, and the memory per live row:
#   bytes/row = (RSS keyed - RSS fixed) / live rows + (K + 1) x 4 x (1 + 2 Adam slots)
# (both runs hold the same model and data; the fixed table holds the same rows positionally, so the RSS
# difference is the index's overhead). Goal: <= (K + 1) x 4 x 3 + 24 bytes.
# Also runs the key index alone (translate, admission, eviction) through bench/key_index_bench when built.
#
#   bash bench/keyed_table_bench.sh                 # 1 M keys, 3 rounds
#   KEYS=20000000 ROWS=600000 RUNS=2 bash bench/keyed_table_bench.sh
# Environment: BUILD_DIR (build), KEYS (1000000), ROWS (250000 training rows), RUNS (3), EPOCHS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
KEYS=${KEYS:-1000000}
ROWS=${ROWS:-250000}
RUNS=${RUNS:-3}
EPOCHS=${EPOCHS:-2}
CTRAIN="$BUILD_DIR/ctrain"
[ -x "$CTRAIN" ] || { echo "missing $CTRAIN (build first: scripts/build.sh)" >&2; exit 1; }
OUT=$(mktemp -d /tmp/keyed_table_bench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
echo "== $KEYS keys, $ROWS rows x $EPOCHS epochs, $RUNS rounds; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

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

JOB=(--train "$OUT/train.libsvm" --format libsvm --field-size 39 --feature-size "$KEYS" --embedding-size 32
     --deep-layers 400,400,400 --batch-size 1024 --epochs "$EPOCHS" --optimizer adam --progress none)
run() {  # table round -> "examples/s rss_kib live_rows"
  local table=$1 json="$OUT/$1.$2.json" extra=()
  [ "$table" = keyed ] && extra=(--embedding-table keyed --max-rows "$KEYS")
  python3 - "$json" "$CTRAIN" train "${JOB[@]}" "${extra[@]}" --metrics-json "$json" <<'EOF'
import json, resource, subprocess, sys
out, cmd = sys.argv[1], sys.argv[2:]
subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
m = json.load(open(out))
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(m["examples_per_sec"], rss, m.get("keyed_table", {}).get("live_rows", 0))
EOF
}
declare -A EPS RSS
LIVE=0
for r in $(seq "$RUNS"); do
  for table in fixed keyed; do
    read -r eps rss live < <(run "$table" "$r")
    EPS[$table]+="$eps "
    RSS[$table]+="$rss "
    [ "$table" = keyed ] && LIVE=$live
    echo "round $r $table: $eps examples/s, peak RSS $((rss / 1024)) MiB${live:+, live rows $live}" >&2
  done
done
python3 - "${EPS[fixed]}" "${EPS[keyed]}" "${RSS[fixed]}" "${RSS[keyed]}" "$LIVE" "$KEYS" <<'EOF'
import json, statistics, sys
ef, ek = [list(map(float, s.split())) for s in sys.argv[1:3]]
rf, rk = [list(map(int, s.split())) for s in sys.argv[3:5]]
live, keys = int(sys.argv[5]), int(sys.argv[6])
K, slots = 32, 2
row_bytes = (K + 1) * 4 * (1 + slots)
per_row = (statistics.median(rk) - statistics.median(rf)) * 1024 / max(live, 1) + row_bytes
ratio = statistics.median(ek) / statistics.median(ef)
goal = 0.85 if keys <= 1_000_000 else 0.75
print(f"fixed: examples/s min {min(ef):.0f} median {statistics.median(ef):.0f}; peak RSS median {statistics.median(rf)//1024} MiB")
print(f"keyed: examples/s min {min(ek):.0f} median {statistics.median(ek):.0f}; peak RSS median {statistics.median(rk)//1024} MiB; live rows {live}")
print(f"keyed / fixed (medians): {ratio:.3f} (goal >= {goal}); memory per live row {per_row:.1f} bytes "
      f"(goal <= {row_bytes + 24})")
print(json.dumps({"keys": keys, "live_rows": live, "fixed_eps": ef, "keyed_eps": ek, "ratio": round(ratio, 4),
                  "rss_fixed_kib": rf, "rss_keyed_kib": rk, "bytes_per_live_row": round(per_row, 1)}))
EOF
