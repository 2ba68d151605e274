#!/usr/bin/env bash
# Parse throughput per core, ctrain vs the tf.data baseline a TF user has, side
# by side in one run on the same synthetic Criteo-shaped files (issue #2 item 9).
#   bench/parse_bench.sh [ROWS=1000000] [REPEAT=5]
# Needs build/ (scripts/build.sh) and, for the peer, `pip install -r bench/peers/requirements.txt`.
# Prints JSON lines, then a table of records/s (best and median of REPEAT passes)
# and the ctrain / tf.data ratio.
set -euo pipefail
ROWS=${1:-1000000}
REPEAT=${2:-5}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN="$SRC/build/ctrain"
DIR=${BENCH_DIR:-/tmp/ctrain_parse_bench}
mkdir -p "$DIR"
OUT="$DIR/results_$ROWS.jsonl"
: > "$OUT"
gen() {  # gen FILE ARGS...: synthesise once, reuse afterwards
  local f=$1; shift
  [ -s "$f" ] || "$BIN" synth --rows "$ROWS" --output "$f" "$@" 2>/dev/null
}
gen "$DIR/s$ROWS.libsvm" --format libsvm
gen "$DIR/s$ROWS.tfrecord" --format tfrecord
gen "$DIR/s$ROWS.gz.tfrecord" --format tfrecord --compression gzip
TF=0
python3 -c "import tensorflow" >/dev/null 2>&1 && TF=1
for spec in "libsvm NONE s$ROWS.libsvm" "tfrecord NONE s$ROWS.tfrecord" "tfrecord GZIP s$ROWS.gz.tfrecord"; do
  set -- $spec
  "$SRC/build/bench/parse_bench" --repeat "$REPEAT" "$DIR/$3" | tee -a "$OUT"
  if [ "$TF" = 1 ]; then
    python3 "$SRC/bench/peers/tf_parse.py" --format "$1" --compression "$2" --threads 1 --repeat "$REPEAT" \
      "$DIR/$3" 2>/dev/null | tee -a "$OUT"
  fi
done
python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
key = lambda r: (r.get("format"), r.get("compression", "").lower())
by = {}
for r in rows:
    by.setdefault(key(r), {})[r["peer"]] = r
print("\n| format | compression | ctrain rec/s (best / median) | ctrain MB/s | tf.data rec/s (best) | ctrain / tf.data |")
print("|---|---|---|---|---|---|")
for (fmt, comp), d in by.items():
    c, t = d.get("ctrain"), d.get("tf.data")
    med = c.get("records_per_sec_median", float("nan")) if c else float("nan")
    ratio = f"{c['records_per_sec'] / t['records_per_sec']:.1f}x" if c and t else "n/a"
    print(f"| {fmt} | {comp} | {c['records_per_sec']:,.0f} / {med:,.0f} | {c['mb_per_sec']:.0f} | "
          f"{t['records_per_sec'] if t else float('nan'):,.0f} | {ratio} |")
PY
