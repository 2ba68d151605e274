#!/usr/bin/env python3
"""The second field report's step-time comparison (issue #23 item 5), trainer side: the PyTorch
DeepFM of examples/heterogeneous/pytorch_deepfm.py (1 torch thread, pinned to core --trainer-cpu),
fed by one of

  dataloader  torch.utils.data.DataLoader(num_workers=W), what a PyTorch user writes: TSV lines split
              and hashed in Python (zlib.crc32 of "field:value" into [13, N); numeric fields are ids
              0..12 with value log1p(max(x, 0))), TFRecord through the `tfrecord` package (its
              TFRecordDataset with an index, so W workers read disjoint parts). W = 0 parses on the
              trainer's core; W >= 1 worker processes are pinned to --data-cpu.
  tfds        tf.data.service: TextLineDataset / TFRecordDataset .batch(B).map(parse) distributed to a
              dispatcher + worker (started by the caller on --data-cpu, tf_data_service_peer.py server);
              the TSV parse is tf.strings (split, to_number, to_hash_bucket_fast): a TF user's.
  ctrain      ctrain's data service (dispatcher + worker started by the caller on --data-cpu):
              DataService(addr).pipeline(file, format=...).as_torch(prefetch=2).

Each run: --warmup steps untimed, then --steps timed steps of --batch-size. Per step, the input wait
is the time from the end of the previous step until the next batch is in hand, and the compute the
forward, backward and update. Prints one JSON line: feed, input, workers, steps, examples,
seconds, step_ms_median, step_ms_mean, input_wait_fraction, examples_per_sec.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import zlib

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "examples", "heterogeneous"))

F = 39


def tsv_batches(path, batch_size, feature_size, shard=0, shards=1):
    """Batches (labels f32[B], ids i64[B, F], values f32[B, F]) of raw Criteo TSV, parsed in Python."""
    buckets = feature_size - 13
    labels, ids, vals = [], [], []
    with open(path, "rb") as f:
        for n, line in enumerate(f):
            if n % shards != shard:
                continue
            cells = line.rstrip(b"\n").split(b"\t")
            labels.append(float(cells[0]))
            row_ids = list(range(13))
            row_vals = [math.log1p(max(int(c), 0)) if c else 0.0 for c in cells[1:14]]
            for j, c in enumerate(cells[14:40]):
                row_ids.append(13 + zlib.crc32(b"%d:%s" % (j, c)) % buckets)
                row_vals.append(1.0)
            ids.append(row_ids)
            vals.append(row_vals)
            if len(labels) == batch_size:
                yield np.array(labels, np.float32), np.array(ids, np.int64), np.array(vals, np.float32)
                labels, ids, vals = [], [], []
    if labels:
        yield np.array(labels, np.float32), np.array(ids, np.int64), np.array(vals, np.float32)


def dataloader_feed(a, torch):
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    def pin_worker(_):
        os.sched_setaffinity(0, {a.data_cpu})
        torch.set_num_threads(1)

    if a.input == "tsv":
        class Tsv(IterableDataset):
            def __iter__(self):
                info = get_worker_info()
                shard, shards = (info.id, info.num_workers) if info else (0, 1)
                for y, i, v in tsv_batches(a.file, a.batch_size, a.feature_size, shard, shards):
                    yield torch.from_numpy(y), torch.from_numpy(i), torch.from_numpy(v)

        loader = DataLoader(Tsv(), batch_size=None, num_workers=a.workers,
                            worker_init_fn=pin_worker if a.workers else None, prefetch_factor=2 if a.workers else None)
    else:
        from tfrecord.torch.dataset import TFRecordDataset

        ds = TFRecordDataset(a.file, a.file + ".idx", {"label": "float", "ids": "int", "values": "float"})
        loader = DataLoader(ds, batch_size=a.batch_size, num_workers=a.workers,
                            worker_init_fn=pin_worker if a.workers else None, prefetch_factor=2 if a.workers else None)
        return ((b["label"].reshape(-1).float(), b["ids"].long(), b["values"].float()) for b in loader)
    return iter(loader)


def tfds_feed(a, torch):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    if a.input == "tsv":
        def parse(lines):
            cells = tf.strings.split(lines, "\t").to_tensor(default_value="", shape=[None, 40])
            label = tf.strings.to_number(cells[:, 0], tf.float32)
            ints = tf.strings.to_number(tf.where(cells[:, 1:14] == "", "0", cells[:, 1:14]), tf.float32)
            num_vals = tf.math.log1p(tf.maximum(ints, 0.0))
            fields = tf.strings.as_string(tf.range(26))
            cat_ids = tf.strings.to_hash_bucket_fast(fields + ":" + cells[:, 14:40], a.feature_size - 13) + 13
            num_ids = tf.broadcast_to(tf.range(13, dtype=tf.int64), tf.shape(ints, out_type=tf.int64))
            ids = tf.concat([num_ids, cat_ids], axis=1)
            vals = tf.concat([num_vals, tf.ones_like(tf.cast(cat_ids, tf.float32))], axis=1)
            return label, ids, vals

        ds = tf.data.TextLineDataset([a.file]).batch(a.batch_size).map(parse)
    else:
        spec = {"label": tf.io.FixedLenFeature([], tf.float32), "ids": tf.io.FixedLenFeature([F], tf.int64),
                "values": tf.io.FixedLenFeature([F], tf.float32)}

        def parse(x):
            d = tf.io.parse_example(x, spec)
            return d["label"], d["ids"], d["values"]

        ds = tf.data.TFRecordDataset([a.file]).batch(a.batch_size).map(parse)
    ds = ds.prefetch(2).apply(tf.data.experimental.service.distribute(
        processing_mode="parallel_epochs", service=a.service, job_name=a.job_name))
    return ((torch.from_numpy(y.numpy()), torch.from_numpy(i.numpy()), torch.from_numpy(v.numpy())) for y, i, v in ds)


def ctrain_feed(a, torch):
    import ctrain

    reader = dict(format="criteo-tsv" if a.input == "tsv" else "tfrecord", feature_size=a.feature_size)
    pipeline = ctrain.DataService(a.service).pipeline(a.file, batch_size=a.batch_size, job_name=a.job_name, **reader)
    return iter(pipeline.as_torch(prefetch=2))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--feed", choices=["dataloader", "tfds", "ctrain"], required=True)
    p.add_argument("--input", choices=["tsv", "tfrecord"], required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--workers", type=int, default=0, help="dataloader: worker processes")
    p.add_argument("--service", default="", help="tfds: grpc://HOST:PORT; ctrain: HOST:PORT")
    p.add_argument("--job-name", default="")
    p.add_argument("--feature-size", type=int, default=1 << 20)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--embedding-size", type=int, default=16)
    p.add_argument("--deep-layers", default="128,128", help="hidden widths; a smaller model stands for an "
                   "accelerator's shorter step")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--trainer-cpu", type=int, default=0)
    p.add_argument("--data-cpu", type=int, default=1)
    a = p.parse_args(argv)
    os.sched_setaffinity(0, {a.trainer_cpu})
    import torch
    from pytorch_deepfm import DeepFM

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DeepFM(F, a.feature_size, a.embedding_size, [int(x) for x in a.deep_layers.split(",") if x])
    opt_sparse = torch.optim.SparseAdam([model.w.weight, model.v.weight], lr=1e-3)
    opt_dense = torch.optim.Adam([model.bias, *model.mlp.parameters()], lr=1e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    feed = {"dataloader": dataloader_feed, "tfds": tfds_feed, "ctrain": ctrain_feed}[a.feed](a, torch)
    if a.feed != "ctrain":  # with CTRAIN_MONITOR_DIR (the bench's report) each batch is a monitored step;
        import ctrain       # ctrain's data-service pipeline records its own

        feed = ctrain.monitor_steps(feed)
    waits, steps_ms, examples = [], [], 0
    t_end = time.perf_counter()
    t_start = None
    for step in range(a.warmup + a.steps):
        try:
            labels, ids, vals = next(feed)
        except StopIteration:
            sys.exit(f"heterogeneous_step: the input ended after {step} steps ({a.file}); give more rows or fewer steps")
        t_got = time.perf_counter()
        loss = loss_fn(model(ids, vals), labels)
        opt_sparse.zero_grad(set_to_none=True)
        opt_dense.zero_grad(set_to_none=True)
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        t_done = time.perf_counter()
        if step == a.warmup:
            t_start = t_end
        if step >= a.warmup:
            waits.append(t_got - t_end)
            steps_ms.append((t_done - t_end) * 1e3)
            examples += labels.shape[0]
        t_end = t_done
    seconds = t_end - t_start
    print(json.dumps({"feed": a.feed, "input": a.input, "workers": a.workers, "embedding_size": a.embedding_size,
                      "deep_layers": a.deep_layers, "steps": a.steps, "examples": examples,
                      "seconds": seconds, "step_ms_median": statistics.median(steps_ms),
                      "step_ms_mean": statistics.fmean(steps_ms), "input_wait_fraction": sum(waits) / seconds,
                      "examples_per_sec": examples / seconds}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
