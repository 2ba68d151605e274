#!/usr/bin/env python3
"""Batches/s into a PyTorch loop that only consumes them (docs/performance.md, "Python input").

Contenders, on the same files, in one run, every process pinned to the same --cores CPUs:
  ctrain     ctrain.Pipeline(...).as_torch() through DataLoader(batch_size=None), the pipeline's
             own threads (num_parallel_reads=1, num_parallel_calls=cores) do the parsing;
  torch      torch.utils.data.DataLoader over an IterableDataset with a Python parser
             (LibSVM: str.split per line; TFRecord: the TFRecord framing in Python and
             tf.train.Example protobuf parsing with TensorFlow's example_pb2), each worker
             reading every n-th batch; num_workers in 0..cores, the best one reported;
  tf.data    TextLineDataset.batch.map(decode_libsvm) / TFRecordDataset.batch.map(parse_example)
             (bench/peers/tf_parse.py's pipelines), private thread pool = cores, converted to
             torch tensors in the loop (.numpy() -> torch.from_numpy).
The consumer: `for labels, ids, values in loader:` touching each tensor's shape and first
element (so every batch is materialised); no model. Every pass must deliver exactly the
file's records. One untimed warm-up pass per contender, then --repeat timed passes; min and
median seconds; batches/s from the min. Prints a table and one JSON line per (format, contender).

  python3 bench/python_input_bench.py [--rows 200000] [--cores 2] [--repeat 3] [--batch-size 1024]
Needs: the ctrain package (pip install .), torch; tensorflow optional (tf.data and the
TFRecord DataLoader parser are skipped without it).
"""

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


# ---- the Python parsers a PyTorch user writes --------------------------------------------------

def _batches(rows, parse, batch_size, worker, workers):
    """Groups rows into batches; this worker parses (and yields) every workers-th batch."""
    labels, ids, vals = [], [], []
    for k, row in enumerate(rows):
        if (k // batch_size) % workers == worker:
            label, i, v = parse(row)
            labels.append(label)
            ids.append(i)
            vals.append(v)
        if (k + 1) % batch_size == 0 and labels:
            yield (np.array(labels, np.float32), np.array(ids, np.int64), np.array(vals, np.float32))
            labels, ids, vals = [], [], []
    if labels:
        yield (np.array(labels, np.float32), np.array(ids, np.int64), np.array(vals, np.float32))


def parse_libsvm_line(line):
    parts = line.split()
    ids, vals = [], []
    for t in parts[1:]:
        i, v = t.split(":")
        ids.append(int(i))
        vals.append(float(v))
    return float(parts[0]), ids, vals


def tfrecord_records(path):
    with open(path, "rb") as f:
        while True:
            head = f.read(12)
            if not head:
                return
            (n,) = struct.unpack("<Q", head[:8])
            data = f.read(n)
            f.read(4)  # data crc (not checked, as most hand-written readers)
            yield data


def make_example_parser():
    from tensorflow.core.example import example_pb2

    def parse(rec):
        fm = example_pb2.Example.FromString(rec).features.feature
        return fm["label"].float_list.value[0], list(fm["ids"].int64_list.value), list(fm["values"].float_list.value)

    return parse


def python_batches(fmt, path, batch_size, worker, workers):
    if fmt == "libsvm":
        return _batches(open(path, "r"), parse_libsvm_line, batch_size, worker, workers)
    return _batches(tfrecord_records(path), make_example_parser(), batch_size, worker, workers)


def torch_dataloader(torch, fmt, path, batch_size, num_workers):
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    class PythonParsed(IterableDataset):
        def __iter__(self):
            info = get_worker_info()
            w, n = (info.id, info.num_workers) if info is not None else (0, 1)
            for labels, ids, vals in python_batches(fmt, path, batch_size, w, n):
                yield torch.from_numpy(labels), torch.from_numpy(ids), torch.from_numpy(vals)

    return DataLoader(PythonParsed(), batch_size=None, num_workers=num_workers,
                      persistent_workers=False, prefetch_factor=4 if num_workers > 0 else None)


def tf_data(tf, fmt, path, batch_size, field_size, threads):
    F = field_size

    def decode_libsvm_batch(lines):
        columns = tf.reshape(tf.strings.split(lines, " ").flat_values, [-1, 1 + F])
        labels = tf.strings.to_number(columns[:, 0], out_type=tf.float32)
        id_vals = tf.reshape(tf.strings.split(tf.reshape(columns[:, 1:], [-1]), ":").flat_values, [-1, F, 2])
        return (labels, tf.strings.to_number(id_vals[:, :, 0], out_type=tf.int64),
                tf.strings.to_number(id_vals[:, :, 1], out_type=tf.float32))

    spec = {"label": tf.io.FixedLenFeature([], tf.float32), "ids": tf.io.FixedLenFeature([F], tf.int64),
            "values": tf.io.FixedLenFeature([F], tf.float32)}

    def parse_tfrecord_batch(x):
        d = tf.io.parse_example(x, spec)
        return d["label"], d["ids"], d["values"]

    if fmt == "libsvm":
        ds = tf.data.TextLineDataset([path]).batch(batch_size).map(decode_libsvm_batch, tf.data.AUTOTUNE)
    else:
        ds = tf.data.TFRecordDataset([path]).batch(batch_size).map(parse_tfrecord_batch, tf.data.AUTOTUNE)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = threads
    opts.threading.max_intra_op_parallelism = 1
    return ds.with_options(opts)


def consume(torch, batches, to_torch=None):
    """The consume-only loop; returns (records, batches)."""
    n = b = 0
    for labels, ids, values in batches:
        if to_torch is not None:
            labels, ids, values = to_torch(labels), to_torch(ids), to_torch(values)
        n += labels.shape[0]
        b += 1
        _ = (ids.shape, values.shape, float(labels[0]))
    return n, b


def timed(make, repeat, expected):
    times = []
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        n, b = make()
        dt = time.perf_counter() - t0
        if n != expected:
            sys.exit(f"python_input_bench: a pass delivered {n} records, expected {expected}")
        if i > 0:
            times.append(dt)
    return min(times), statistics.median(times), b


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=200000)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--formats", default="libsvm,tfrecord")
    p.add_argument("--max-workers", type=int, default=None, help="DataLoader num_workers tried: 0..this (cores)")
    a = p.parse_args(argv)

    cpus = sorted(os.sched_getaffinity(0))[: a.cores]
    os.sched_setaffinity(0, cpus)  # children (DataLoader workers, threads) inherit it
    import torch
    import ctrain

    torch.set_num_threads(1)
    try:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(a.cores)
        tf.config.threading.set_inter_op_parallelism_threads(a.cores)
    except ImportError:
        tf = None
    F = 39
    work = tempfile.mkdtemp(prefix="ctrain_python_input_bench.")
    results = []
    try:
        for fmt in a.formats.split(","):
            path = os.path.join(work, "data." + fmt)
            subprocess.run([ctrain.cli_path(), "synth", "--rows", str(a.rows), "--format", fmt, "-o", path],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            size = os.path.getsize(path)
            row = {"format": fmt, "rows": a.rows, "mb": size / 1e6, "cores": a.cores, "batch_size": a.batch_size}

            pipe = ctrain.Pipeline(path, format=fmt, batch_size=a.batch_size, num_parallel_calls=a.cores,
                                   prefetch=4)
            loader = torch.utils.data.DataLoader(pipe.as_torch(), batch_size=None)
            mn, med, nb = timed(lambda: consume(torch, loader), a.repeat, a.rows)
            results.append(dict(row, contender="ctrain.Pipeline", seconds_min=mn, seconds_median=med,
                                batches_per_sec=nb / mn))

            if fmt == "libsvm" or tf is not None:
                best = None
                for w in range(0, (a.max_workers if a.max_workers is not None else a.cores) + 1):
                    dl = torch_dataloader(torch, fmt, path, a.batch_size, w)
                    mn, med, nb = timed(lambda: consume(torch, dl), max(1, a.repeat - 1) if w else 1, a.rows)
                    r = dict(row, contender=f"DataLoader(num_workers={w})", seconds_min=mn, seconds_median=med,
                             batches_per_sec=nb / mn, num_workers=w)
                    print(json.dumps(r), file=sys.stderr)
                    if best is None or mn < best["seconds_min"]:
                        best = r
                # the best num_workers, measured again with the full repeat count
                dl = torch_dataloader(torch, fmt, path, a.batch_size, best["num_workers"])
                mn, med, nb = timed(lambda: consume(torch, dl), a.repeat, a.rows)
                results.append(dict(best, contender=f"DataLoader best (num_workers={best['num_workers']})",
                                    seconds_min=mn, seconds_median=med, batches_per_sec=nb / mn))

            if tf is not None:
                ds = tf_data(tf, fmt, path, a.batch_size, F, a.cores)
                to_t = lambda t: torch.from_numpy(t.numpy())  # noqa: E731
                mn, med, nb = timed(lambda: consume(torch, ds, to_t), a.repeat, a.rows)
                results.append(dict(row, contender="tf.data", seconds_min=mn, seconds_median=med,
                                    batches_per_sec=nb / mn))
    finally:
        for f in os.listdir(work):
            os.unlink(os.path.join(work, f))
        os.rmdir(work)

    print(f"python input bench: {a.rows} rows, batch {a.batch_size}, {a.cores} cores "
          f"(CPUs {cpus}), {a.repeat} timed passes; torch {torch.__version__}"
          + (f", tensorflow {tf.__version__}" if tf is not None else ""))
    print(f"{'format':9} {'contender':36} {'batches/s':>10} {'s min':>8} {'s median':>9} {'vs DataLoader':>14}")
    for fmt in a.formats.split(","):
        rs = [r for r in results if r["format"] == fmt]
        base = next((r for r in rs if r["contender"].startswith("DataLoader")), None)
        for r in rs:
            ratio = r["batches_per_sec"] / base["batches_per_sec"] if base else float("nan")
            r["vs_dataloader"] = ratio
            print(f"{fmt:9} {r['contender']:36} {r['batches_per_sec']:10.1f} {r['seconds_min']:8.3f} "
                  f"{r['seconds_median']:9.3f} {ratio:13.1f}x")
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main(sys.argv[1:])
