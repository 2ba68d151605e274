#!/usr/bin/env python3
"""tf.data parse-throughput baseline (what a TensorFlow user has).

LibSVM: the seed's (lambdaji/tf_repos DeepFM) decode_libsvm, vectorised over a
batch of lines, as the tf.data performance guide recommends:
    TextLineDataset(files).batch(B).map(decode_libsvm, AUTOTUNE).prefetch(AUTOTUNE)
  decode_libsvm: split on ' ' -> label = string_to_number(col 0);
  split the pairs on ':' -> reshape to [B, F, 2] -> split into ids / vals ->
  string_to_number each.
  --per-line uses the seed's literal order instead: map(decode one line).batch(B).
TFRecord: TFRecordDataset(files, compression).batch(B).map(parse_example with
  label FixedLen([], f32), ids FixedLen([F], i64), values FixedLen([F], f32)).

Threads: intra/inter-op pools = --threads, tf.data private thread pool =
--threads, max_intra_op_parallelism = 1. The pipeline is drained inside the
TF runtime (Dataset.reduce), so no Python per-batch work is timed. One
untimed warm-up pass, then --repeat timed passes. Every pass must see exactly
the record count found independently (line count / TFRecord framing walk),
otherwise the script exits with an error.

Prints one JSON line:
  {"peer":"tf.data","format","compression","records","bytes","seconds_min",
   "seconds_median","records_per_sec"(best pass),"mb_per_sec"(file bytes,
   10^6, best pass),"threads","cpu_seconds_min" (process CPU time, all
   threads),"records_per_cpu_sec","batch_size","label_sum","id_sum"}
label_sum / id_sum are checksums over all parsed labels / ids (compare with
ctrain or with common.load_libsvm).
"""

import argparse
import os
import statistics
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", choices=["libsvm", "tfrecord"], required=True)
    p.add_argument("--compression", choices=["NONE", "GZIP"], default="NONE")
    p.add_argument("--field-size", type=int, default=39)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--per-line", action="store_true",
                   help="libsvm: seed's literal map(per line).batch(B) order")
    p.add_argument("files", nargs="+")
    a = p.parse_args(argv)

    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)

    F = a.field_size
    gz = a.compression == "GZIP"
    comp = "GZIP" if gz else ""
    if a.format == "libsvm":
        expected = sum(common.count_lines(f, gz) for f in a.files)
    else:
        expected = sum(common.count_tfrecords(f, gz) for f in a.files)
    total_bytes = sum(os.path.getsize(f) for f in a.files)

    def decode_libsvm_batch(lines):  # lines: [B] string
        columns = tf.strings.split(lines, " ")                       # ragged [B, 1+F]
        with tf.control_dependencies([tf.debugging.assert_equal(
                columns.row_lengths(), tf.constant(1 + F, tf.int64),
                message="libsvm line without exactly field_size pairs")]):
            columns = tf.reshape(columns.flat_values, [-1, 1 + F])   # dense [B, 1+F]
        labels = tf.strings.to_number(columns[:, 0], out_type=tf.float32)
        splits = tf.strings.split(tf.reshape(columns[:, 1:], [-1]), ":")  # ragged [B*F, 2]
        id_vals = tf.reshape(splits.flat_values, [-1, F, 2])
        feat_ids, feat_vals = tf.split(id_vals, num_or_size_splits=2, axis=2)
        feat_ids = tf.strings.to_number(tf.squeeze(feat_ids, 2), out_type=tf.int64)
        feat_vals = tf.strings.to_number(tf.squeeze(feat_vals, 2), out_type=tf.float32)
        return labels, feat_ids, feat_vals

    def decode_libsvm_line(line):  # the seed's function, one line at a time
        columns = tf.compat.v1.string_split([line], " ")
        labels = tf.strings.to_number(columns.values[0], out_type=tf.float32)
        splits = tf.compat.v1.string_split(columns.values[1:], ":")
        id_vals = tf.reshape(splits.values, splits.dense_shape)
        feat_ids, feat_vals = tf.split(id_vals, num_or_size_splits=2, axis=1)
        feat_ids = tf.strings.to_number(feat_ids, out_type=tf.int64)
        feat_vals = tf.strings.to_number(feat_vals, out_type=tf.float32)
        return labels, tf.reshape(feat_ids, [F]), tf.reshape(feat_vals, [F])

    spec = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([F], tf.int64),
        "values": tf.io.FixedLenFeature([F], tf.float32),
    }

    def parse_tfrecord_batch(x):
        d = tf.io.parse_example(x, spec)
        return d["label"], d["ids"], d["values"]

    AUTOTUNE = tf.data.AUTOTUNE
    if a.format == "libsvm":
        ds = tf.data.TextLineDataset(a.files, compression_type=comp)
        if a.per_line:
            ds = ds.map(decode_libsvm_line, num_parallel_calls=AUTOTUNE).batch(a.batch_size)
        else:
            ds = ds.batch(a.batch_size).map(decode_libsvm_batch, num_parallel_calls=AUTOTUNE)
    else:
        ds = (tf.data.TFRecordDataset(a.files, compression_type=comp)
              .batch(a.batch_size).map(parse_tfrecord_batch, num_parallel_calls=AUTOTUNE))
    ds = ds.prefetch(AUTOTUNE)
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = a.threads
    opts.threading.max_intra_op_parallelism = 1
    ds = ds.with_options(opts)

    def reducer(acc, batch):
        labels, ids, _ = batch
        return (acc[0] + tf.cast(tf.shape(labels)[0], tf.int64),
                acc[1] + tf.reduce_sum(tf.cast(labels, tf.float64)),
                acc[2] + tf.reduce_sum(ids))

    init = (tf.constant(0, tf.int64), tf.constant(0.0, tf.float64), tf.constant(0, tf.int64))

    @tf.function
    def drain():
        return ds.reduce(init, reducer)

    times, cpu_times = [], []
    result = None
    for i in range(a.repeat + 1):
        t0, c0 = common.now(), common.cpu_now()
        n, lsum, isum = drain()
        n = int(n.numpy())  # forces completion
        dt, dc = common.now() - t0, common.cpu_now() - c0
        if n != expected:
            sys.exit(f"tf_parse: parsed {n} records, expected {expected} "
                     f"({a.format}, {a.files})")
        if i > 0:
            times.append(dt)
            cpu_times.append(dc)
        result = (n, float(lsum.numpy()), int(isum.numpy()))

    best = min(times)
    common.emit({
        "peer": "tf.data",
        "tensorflow": tf.__version__,
        "format": a.format,
        "compression": a.compression,
        "mode": "per-line" if (a.per_line and a.format == "libsvm") else "batched",
        "records": result[0],
        "bytes": total_bytes,
        "seconds_min": best,
        "seconds_median": statistics.median(times),
        "records_per_sec": result[0] / best,
        "mb_per_sec": total_bytes / best / 1e6,
        "threads": a.threads,
        "cpu_seconds_min": min(cpu_times),
        "records_per_cpu_sec": result[0] / min(cpu_times),
        "batch_size": a.batch_size,
        "label_sum": result[1],
        "id_sum": result[2],
    })


if __name__ == "__main__":
    main(sys.argv[1:])
