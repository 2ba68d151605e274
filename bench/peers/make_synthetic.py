#!/usr/bin/env python3
"""Writes a synthetic Criteo-shaped data set for throughput benchmarks.

Layout (the lambdaji/tf_repos DeepFM layout, ids 0-based): 13 numeric fields
with ids 0..12 and positive float values, then 26 categorical fields with
value 1. Categorical field c owns the id range [lo_c, hi_c) of an equal split
of [13, feature_size); ids inside a field are Zipf(a) distributed, so a few
ids are hot and most are cold, as in real click logs. Labels are Bernoulli
with a rate of about 0.25 and depend on the first categorical id, so a model
can learn something.

  python3 bench/peers/make_synthetic.py --rows 200000 --feature-size 117581 \
      --format libsvm --out /tmp/synth.libsvm
  --format tfrecord [--compression GZIP] writes tf.train.Example records
  (label float[1], ids int64[F], values float[F]); --format npz writes
  labels/ids/values arrays.
"""

import argparse
import gzip

import numpy as np

NUMERIC = 13


def generate(rows, field_size, feature_size, zipf_a, seed):
    rng = np.random.default_rng(seed)
    cat = field_size - NUMERIC
    ids = np.empty((rows, field_size), dtype=np.int64)
    vals = np.ones((rows, field_size), dtype=np.float32)
    ids[:, :NUMERIC] = np.arange(NUMERIC)
    vals[:, :NUMERIC] = np.round(rng.lognormal(0.0, 1.0, (rows, NUMERIC)) / 4, 6)
    bounds = np.linspace(NUMERIC, feature_size, cat + 1).astype(np.int64)
    for c in range(cat):
        size = int(bounds[c + 1] - bounds[c])
        ids[:, NUMERIC + c] = bounds[c] + (rng.zipf(zipf_a, rows) - 1) % size
    hot = (ids[:, NUMERIC] - bounds[0]) % 7 == 0
    labels = (rng.random(rows) < np.where(hot, 0.5, 0.2)).astype(np.float32)
    return labels, ids, vals


def write_libsvm(path, labels, ids, vals, gz):
    rows, f = ids.shape
    m = np.empty((rows, 1 + 2 * f), dtype=object)
    m[:, 0] = labels.astype(np.int64)
    m[:, 1::2] = ids
    m[:, 2::2] = vals
    fmt = "%d" + "".join(" %d:%.6g" for _ in range(f))
    opener = gzip.open if gz else open
    with opener(path, "wt") as out:
        np.savetxt(out, m, fmt=fmt)


def write_tfrecord(path, labels, ids, vals, compression):
    import tensorflow as tf
    with tf.io.TFRecordWriter(path, options=compression or None) as w:
        for i in range(labels.shape[0]):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[labels[i]])),
                "ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids[i])),
                "values": tf.train.Feature(float_list=tf.train.FloatList(value=vals[i])),
            }))
            w.write(ex.SerializeToString())


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200000)
    p.add_argument("--field-size", type=int, default=39)
    p.add_argument("--feature-size", type=int, default=117581)
    p.add_argument("--zipf-a", type=float, default=1.2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--format", choices=["libsvm", "tfrecord", "npz"], default="libsvm")
    p.add_argument("--compression", choices=["NONE", "GZIP"], default="NONE")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    labels, ids, vals = generate(a.rows, a.field_size, a.feature_size, a.zipf_a, a.seed)
    if a.format == "libsvm":
        write_libsvm(a.out, labels, ids, vals,
                     a.compression == "GZIP" or a.out.endswith(".gz"))
    elif a.format == "npz":
        np.savez(a.out, labels=labels, ids=ids, values=vals)
    else:
        write_tfrecord(a.out, labels, ids, vals,
                       "GZIP" if a.compression == "GZIP" else None)


if __name__ == "__main__":
    main()
