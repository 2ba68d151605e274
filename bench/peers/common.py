"""Shared helpers for the peer benchmarks (PyTorch / TensorFlow side).

Everything here is framework-free (numpy + stdlib) so that the data loading
and the metrics are identical for every peer and are never part of a timed
region.

Data formats (the ones ctrain writes):
  * LibSVM, fixed length: `label id:val id:val ...` with exactly field_size
    pairs per line, ids 0-based (the lambdaji/tf_repos DeepFM layout).
  * .npz with arrays `labels` float32[N], `ids` int64[N,F], `values` float32[N,F].
"""

import gzip
import json
import os
import struct
import subprocess
import sys
import time
import warnings

import numpy as np


class Dataset:
    """In-memory fixed-length dataset: labels [N], ids [N,F], values [N,F]."""

    def __init__(self, labels, ids, values):
        self.labels = labels
        self.ids = ids
        self.values = values

    def __len__(self):
        return self.labels.shape[0]


def _read_bytes(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def load_libsvm(path, field_size, id_offset=0):
    """Loads a fixed-length LibSVM file into numpy arrays, vectorised.

    The whole text is tokenised by numpy's C parser (':' and '\\n' become
    separators), then checked: the token count must be lines*(1+2F), every
    line must have exactly F ':' and every id must be integral and >= 0 after
    subtracting id_offset. Any violation raises ValueError naming the file
    (and the first bad line where it can be located).
    """
    raw = _read_bytes(path)
    if not raw:
        raise ValueError(f"{path}: empty file")
    if not raw.endswith(b"\n"):
        raw += b"\n"
    n = raw.count(b"\n")
    colons = raw.count(b":")
    if colons != n * field_size:
        # Locate the first offending line (slow path, only on error).
        for i, line in enumerate(raw.split(b"\n")[:n]):
            if line.count(b":") != field_size:
                raise ValueError(
                    f"{path}: line {i + 1}: expected {field_size} id:val pairs, "
                    f"found {line.count(b':')}")
        raise ValueError(f"{path}: expected {n * field_size} pairs, found {colons}")
    text = raw.replace(b":", b" ").decode("ascii")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns (not raises) on bad tokens
        try:
            flat = np.fromstring(text, dtype=np.float64, sep=" ")
        except (DeprecationWarning, ValueError) as e:
            raise ValueError(f"{path}: unparsable number: {e}") from None
    width = 1 + 2 * field_size
    if flat.size != n * width:
        raise ValueError(f"{path}: expected {n * width} numbers on {n} lines, "
                         f"parsed {flat.size}")
    m = flat.reshape(n, width)
    labels = m[:, 0].astype(np.float32)
    ids_f = m[:, 1::2]
    ids = ids_f.astype(np.int64)
    if not np.array_equal(ids, ids_f):
        bad = int(np.argwhere(ids != ids_f)[0][0])
        raise ValueError(f"{path}: line {bad + 1}: non-integral feature id")
    ids -= id_offset
    if ids.min() < 0:
        bad = int(np.argwhere(ids < 0)[0][0])
        raise ValueError(f"{path}: line {bad + 1}: negative id after offset {id_offset}")
    values = np.ascontiguousarray(m[:, 2::2], dtype=np.float32)
    return Dataset(labels, np.ascontiguousarray(ids), values)


def load_data(path, field_size, id_offset=0):
    """Loads .npz (labels/ids/values) or LibSVM (.gz allowed)."""
    if path.endswith(".npz"):
        z = np.load(path)
        ds = Dataset(z["labels"].astype(np.float32),
                     z["ids"].astype(np.int64) - id_offset,
                     z["values"].astype(np.float32))
        if ds.ids.ndim != 2 or ds.ids.shape[1] != field_size:
            raise ValueError(f"{path}: ids shape {ds.ids.shape}, want [N,{field_size}]")
        return ds
    return load_libsvm(path, field_size, id_offset)


def check_ids(ds, feature_size, path):
    mx = int(ds.ids.max())
    if mx >= feature_size:
        bad = int(np.argwhere(ds.ids >= feature_size)[0][0])
        raise ValueError(f"{path}: line {bad + 1}: id {mx} >= feature_size {feature_size}")


def auc(labels, scores):
    """Rank-based (Mann-Whitney) ROC AUC with average ranks for ties."""
    labels = np.asarray(labels, dtype=np.float64).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    order = np.argsort(scores, kind="mergesort")
    s = scores[order]
    ranks = np.empty_like(s)
    # average rank (1-based) over runs of equal scores
    boundaries = np.flatnonzero(np.diff(s)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [s.size]))
    avg = (starts + ends + 1) / 2.0
    ranks[:] = np.repeat(avg, ends - starts)
    r = np.empty_like(ranks)
    r[order] = ranks
    pos = labels > 0.5
    n_pos = int(pos.sum())
    n_neg = labels.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((r[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def count_tfrecords(path, gzip_compressed):
    """Counts TFRecord records by walking the framing (u64 len|u32 crc|data|u32 crc).

    Independent of TensorFlow, used to check that a parser saw every record.
    """
    opener = gzip.open if gzip_compressed else open
    n = 0
    with opener(path, "rb") as f:
        while True:
            head = f.read(12)
            if not head:
                return n
            if len(head) != 12:
                raise ValueError(f"{path}: record {n}: truncated header")
            (length,) = struct.unpack("<Q", head[:8])
            body = f.read(length + 4)
            if len(body) != length + 4:
                raise ValueError(f"{path}: record {n}: truncated body")
            n += 1


def count_lines(path, gzip_compressed):
    raw = gzip.open(path, "rb").read() if gzip_compressed else open(path, "rb").read()
    n = raw.count(b"\n")
    if raw and not raw.endswith(b"\n"):
        n += 1
    return n


def add_train_args(p):
    """CLI shared by deepfm_torch.py and deepfm_tf.py."""
    p.add_argument("--train", required=True, help="LibSVM (.gz ok) or .npz")
    p.add_argument("--valid", default=None)
    p.add_argument("--field-size", type=int, default=39)
    p.add_argument("--feature-size", type=int, required=True)
    p.add_argument("--id-offset", type=int, default=0,
                   help="subtracted from every id (1 for 1-based files)")
    p.add_argument("--embedding-size", type=int, default=32)
    p.add_argument("--deep-layers", default="400,400,400")
    p.add_argument("--dropout", type=float, default=0.5, help="drop probability")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--learning-rate", type=float, default=5e-4)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=0, help="0 = no limit")
    p.add_argument("--warmup-steps", type=int, default=5,
                   help="first steps run but not timed")
    p.add_argument("--no-shuffle", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bf16", action="store_true",
                   help="pytorch: torch.autocast(cpu, bfloat16) mixed precision (ctrain's --mixed-precision bf16)")
    p.add_argument("--best-of", default=None,
                   help="e.g. 1,2: run each thread count in a subprocess, report all + best")


def epoch_order(n, epoch, seed, shuffle):
    if not shuffle:
        return None
    return np.random.default_rng(seed + epoch).permutation(n)


def run_best_of(script, argv, thread_list, peer):
    """Re-runs `script` once per thread count (fresh process each) and prints
    {"peer", "runs": [...], "best": run with max examples_per_sec}."""
    base = []
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a in ("--best-of", "--threads"):
            skip = True
            continue
        if a.startswith("--best-of=") or a.startswith("--threads="):
            continue
        base.append(a)
    runs = []
    for t in thread_list:
        out = subprocess.run([sys.executable, script] + base + ["--threads", str(t)],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    best = max(runs, key=lambda r: r["examples_per_sec"])
    print(json.dumps({"peer": peer, "runs": runs, "best": best}), flush=True)


def emit(obj):
    print(json.dumps(obj), flush=True)


now = time.perf_counter
cpu_now = time.process_time  # CPU seconds of the whole process, all threads


# ---- model zoo peers (zoo_torch.py, fuxictr_zoo.py) ----

ZOO_KINDS = ("deepfm", "lr", "fm", "wide_deep", "dcn", "dcn_v2", "dlrm", "xdeepfm")


def int_list(s):
    return [int(x) for x in s.split(",") if x]


def add_zoo_args(p):
    """CLI shared by zoo_torch.py and fuxictr_zoo.py: the training flags of
    add_train_args plus ctrain's zoo hyper-parameters (same names as `ctrain train`)."""
    add_train_args(p)
    p.add_argument("--model", required=True, choices=ZOO_KINDS)
    p.add_argument("--cross-layers", type=int, default=3, help="dcn, dcn_v2")
    p.add_argument("--cin-layer-units", default="16,16,16", help="xdeepfm")
    p.add_argument("--num-dense-fields", type=int, default=13,
                   help="the first N fields are numeric (one fixed id, value as stored); "
                        "dlrm feeds their values to the bottom MLP")
    p.add_argument("--bottom-mlp", default="64,64", help="dlrm: hidden widths (a layer to K follows)")
    p.add_argument("--top-mlp", default="64,64", help="dlrm: hidden widths (a layer to 1 follows)")


def logloss(labels, probs, eps=1e-7):
    p = np.clip(np.asarray(probs, dtype=np.float64).ravel(), eps, 1 - eps)
    y = np.asarray(labels, dtype=np.float64).ravel()
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def timed_loop(n, a, step_fn):
    """The training loop every zoo peer shares: a.epochs passes over n examples in
    batches of a.batch_size, a seeded permutation per epoch (epoch_order), the first
    a.warmup_steps steps untimed. step_fn(idx) trains one batch (idx: int64 numpy
    indices, the batch's gather is inside the timed region, as it is for a user) and
    returns its loss (a 0-d tensor or a float). Returns the timing and loss dict."""
    step = timed_steps = timed_examples = 0
    t0 = c0 = None
    losses = []
    for epoch in range(a.epochs):
        order = epoch_order(n, epoch, a.seed, not a.no_shuffle)
        if order is None:
            order = np.arange(n)
        for start in range(0, n, a.batch_size):
            if step == a.warmup_steps:
                t0, c0 = now(), cpu_now()
            idx = order[start:start + a.batch_size]
            losses.append(step_fn(idx))
            step += 1
            if step > a.warmup_steps:
                timed_steps += 1
                timed_examples += idx.shape[0]
            if a.max_steps and step >= a.max_steps:
                break
        if a.max_steps and step >= a.max_steps:
            break
    seconds = now() - t0 if t0 is not None else 0.0
    tail = [float(x) for x in losses[-50:]]
    return {"examples_per_sec": timed_examples / seconds if seconds > 0 else 0.0,
            "steps": step, "timed_steps": timed_steps, "seconds": seconds,
            "cpu_seconds": cpu_now() - c0 if t0 is not None else 0.0,
            "final_loss": float(np.mean(tail)) if tail else float("nan")}
