#!/usr/bin/env bash
# Input pipeline throughput, ctrain vs tf.data, on the same synthetic files.
# Usage: bench/pipeline_bench.sh [BUILD_DIR=build] [ROWS=200000]
# Prints JSON lines: ctrain's (bench/pipeline_bench.cc) and, when TensorFlow is
# importable, tf.data's (bench/peers/tf_parse.py) for TFRecord none/gzip and
# LibSVM with 1 and 2 threads. Compare records_per_sec and the checksums.
set -euo pipefail
BUILD=${1:-build}
ROWS=${2:-200000}
SRC=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(mktemp -d /tmp/ctrain_pipeline_bench.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
"$BUILD/bench/pipeline_bench" --rows "$ROWS" --dir "$DIR" --keep --calls 1,2
if python3 -c "import tensorflow" >/dev/null 2>&1; then
  for t in 1 2; do
    python3 "$SRC/bench/peers/tf_parse.py" --format tfrecord --compression NONE --threads "$t" "$DIR/synth_$ROWS.tfrecord"
    python3 "$SRC/bench/peers/tf_parse.py" --format tfrecord --compression GZIP --threads "$t" "$DIR/synth_$ROWS.tfrecord.gzip"
    python3 "$SRC/bench/peers/tf_parse.py" --format libsvm --threads "$t" "$DIR/synth_$ROWS.libsvm"
  done 2>/dev/null
else
  echo '{"peer":"tf.data","skipped":"tensorflow not importable"}'
fi
