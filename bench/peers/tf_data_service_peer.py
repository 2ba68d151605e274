#!/usr/bin/env python3
"""tf.data.service throughput peer: 1 worker -> 1 client on loopback.

Two roles, two processes (as tf.data.service is deployed):

  server  starts a tf.data.experimental.service.DispatchServer (port 0) and one
          WorkerServer registered with it, prints "dispatcher grpc://HOST:PORT"
          on stdout and serves until SIGTERM/SIGINT.
  client  builds the dataset
              TFRecordDataset(file).batch(B).map(parse_example)
          (labels f32[B], ids i64[B,F], values f32[B,F] -- ctrain's Batch layout,
          B*(4+12F) bytes, 483,328 for B=1024 F=39), ships it to the service with
              dataset.apply(distribute(processing_mode="parallel_epochs", service=...))
          so that reading and parsing run in the worker, and drains it in the
          client inside the TF runtime (Dataset.reduce in a tf.function: no
          Python per batch). One untimed warm-up pass, then --repeat timed passes;
          each pass is a new job, i.e. the worker re-reads the file. A job's
          set-up (the client learns its tasks about once a second) is timed
          separately by a take(1) pass before each full pass; "steady_*" is the
          full pass minus the median set-up, for the batches after the first. Every pass
          must see exactly the record count of the file (TFRecord framing walk).
          With --prebuilt the worker serves tensors built before the job
          instead: the file's first batch, parsed once in the client, is a
          constant of the dataset (Dataset.from_tensors(batch).repeat(n), then
          a partial batch to the file's record count), and the worker only
          sends it: the transport's ceiling, without reading or parsing
          ("peer": "tf.data.service prebuilt").

Prints one JSON line:
  {"peer":"tf.data.service","examples","batches","bytes" (tensor bytes per pass),
   "seconds" [per pass],"seconds_min","seconds_median","bytes_per_sec" (best),
   "batches_per_sec" (best),"examples_per_sec" (best),"label_sum","id_sum",
   "setup_seconds" [take(1) passes],"steady_seconds" [per pass],"steady_bytes_per_sec" (best)}
"""

import argparse
import os
import signal
import statistics
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def serve(a):
    import tensorflow as tf
    svc = tf.data.experimental.service
    d = svc.DispatchServer(svc.DispatcherConfig(port=0))
    host_port = d.target.split("://", 1)[1]
    w = svc.WorkerServer(svc.WorkerConfig(dispatcher_address=host_port, worker_address="localhost:%port%",
                                          heartbeat_interval_ms=100))
    print("dispatcher " + d.target, flush=True)
    if os.environ.get("CTRAIN_MONITOR_DIR"):  # heterogeneous_step_bench.sh: this host's CPU for `ctrain report`
        import ctrain
        ctrain.monitor("data-worker")
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    del w, d


def client(a):
    import tensorflow as tf
    F = a.field_size
    spec = {
        "label": tf.io.FixedLenFeature([], tf.float32),
        "ids": tf.io.FixedLenFeature([F], tf.int64),
        "values": tf.io.FixedLenFeature([F], tf.float32),
    }

    def parse(x):
        d = tf.io.parse_example(x, spec)
        return d["label"], d["ids"], d["values"]

    expected = common.count_tfrecords(a.file, False)
    ds = (tf.data.TFRecordDataset([a.file]).batch(a.batch_size)
          .map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
    if a.prebuilt:  # the file's first batch, parsed here once, served as often as the file has full batches
        first_batch = next(ds.as_numpy_iterator())
        full, rest = divmod(expected, a.batch_size)
        ds = tf.data.Dataset.from_tensors(tuple(tf.constant(x) for x in first_batch)).repeat(full)
        if rest:
            ds = ds.concatenate(tf.data.Dataset.from_tensors(tuple(tf.constant(x[:rest]) for x in first_batch)))
    ds = ds.apply(tf.data.experimental.service.distribute(processing_mode="parallel_epochs", service=a.service))

    def reducer(acc, batch):
        labels, ids, _ = batch
        return (acc[0] + tf.cast(tf.shape(labels)[0], tf.int64), acc[1] + 1,
                acc[2] + tf.reduce_sum(tf.cast(labels, tf.float64)), acc[3] + tf.reduce_sum(ids))

    init = (tf.constant(0, tf.int64), tf.constant(0, tf.int64), tf.constant(0.0, tf.float64),
            tf.constant(0, tf.int64))

    @tf.function
    def drain():
        return ds.reduce(init, reducer)

    @tf.function
    def first():
        return ds.take(1).reduce(init, reducer)

    times, setup = [], []
    result = None
    for i in range(a.repeat + 1):
        t0 = common.now()
        int(first()[0].numpy())  # a new job, its first batch: job set-up + task assignment latency
        if i > 0:
            setup.append(common.now() - t0)
        t0 = common.now()
        n, nb, lsum, isum = drain()
        n = int(n.numpy())
        dt = common.now() - t0
        if n != expected:
            sys.exit(f"tf_data_service_peer: read {n} examples, expected {expected} ({a.file})")
        if i > 0:
            times.append(dt)
        result = (n, int(nb.numpy()), float(lsum.numpy()), int(isum.numpy()))
    n, nb = result[0], result[1]
    nbytes = n * (4 + 8 * F + 4 * F)
    best = min(times)
    # Steady state: a pass minus the set-up latency of a job (median of the take(1) passes), for
    # the batches after the first.
    steady = [(t - statistics.median(setup)) for t in times]
    common.emit({
        "peer": "tf.data.service prebuilt" if a.prebuilt else "tf.data.service", "tensorflow": tf.__version__, "processing_mode": "parallel_epochs",
        "examples": n, "batches": nb, "bytes": nbytes, "seconds": times, "seconds_min": best,
        "seconds_median": statistics.median(times), "bytes_per_sec": nbytes / best,
        "batches_per_sec": nb / best, "examples_per_sec": n / best,
        "label_sum": result[2], "id_sum": result[3],
        "setup_seconds": setup, "steady_seconds": steady,
        "steady_bytes_per_sec": nbytes * (nb - 1) / nb / min(steady),
    })


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="role", required=True)
    sub.add_parser("server", help="dispatcher + 1 worker; prints 'dispatcher grpc://HOST:PORT'")
    c = sub.add_parser("client", help="read FILE through the service, timed")
    c.add_argument("--service", required=True, help="grpc://HOST:PORT of the dispatcher")
    c.add_argument("--file", required=True, help="TFRecord file (tf.train.Example label/ids/values)")
    c.add_argument("--field-size", type=int, default=39)
    c.add_argument("--batch-size", type=int, default=1024)
    c.add_argument("--repeat", type=int, default=3)
    c.add_argument("--prebuilt", action="store_true",
                   help="serve tensors built before the job (the worker neither reads nor parses)")
    a = p.parse_args(argv)
    serve(a) if a.role == "server" else client(a)


if __name__ == "__main__":
    main(sys.argv[1:])
