#!/usr/bin/env python3
"""Runs a model written by `ctrain export` outside ctrain, for tests/export/export_test.cc.

  export_check.py onnx MODEL.onnx INPUT.libsvm OUT.txt   # onnxruntime on the ONNX graph
  export_check.py npy  DIR        INPUT.libsvm OUT.txt   # a numpy DeepFM forward pass on the .npy files
  export_check.py multi_hot MODEL.onnx INPUT.libsvm OUT.txt
      # a graph exported with --multi-hot (any model kind) on the input's one-hot rows as 3 entries
      # per field, as (1) of padded below
  export_check.py padded MODEL.onnx NPY_DIR INPUT.libsvm OUT.txt
      # a graph exported with --multi-hot: (1) the input's one-hot rows as 3 entries per field (the
      # value split 1/4 + 3/4 on the same id, and a random id with value 0 as padding) -> OUT.txt;
      # (2) random multi-hot rows (0..3 of the input's ids per field, random weights), onnxruntime against the numpy
      # forward pass on NPY_DIR; exit 2 when they differ by 1e-5 or more
  export_check.py spread MODEL.onnx INPUT.libsvm OUT.txt
      # part (1) of padded alone, for a kind the numpy forward pass does not cover (dlrm)

Writes one click probability per input line to OUT.txt ("%.9g"). Ids are built the way the
model's training data was read: LibSVM "label id:value ..." with exactly F pairs per line,
model id = written id - id_base, both taken from the export's own record of the training data
(ONNX metadata "ctrain.data" / index.json "data"), which is what a serving system would use.
Exit status 2 with a message when the input or the export is not what it should be.
"""
import json
import os
import sys

import numpy as np


def fail(msg):
    print("export_check: " + msg, file=sys.stderr)
    sys.exit(2)


def read_libsvm(path, data, field_size):
    if data is None or data.get("format") != "libsvm":
        fail("the model was not trained on libsvm files (data: %r); this checker reads libsvm only" % (data,))
    id_base = int(data.get("id_base", 0))
    ids, values = [], []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            pairs = parts[1:]
            if len(pairs) != field_size:
                fail("%s:%d: %d features, the model has field_size %d" % (path, lineno, len(pairs), field_size))
            row_ids, row_values = [], []
            for p in pairs:
                i, v = p.split(":")
                row_ids.append(int(i) - id_base)
                row_values.append(float(v))
            ids.append(row_ids)
            values.append(row_values)
    return np.asarray(ids, dtype=np.int64), np.asarray(values, dtype=np.float32)


class OnnxModel:
    def __init__(self, model_path, rank):
        import onnxruntime as ort

        self.sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
        meta = self.sess.get_modelmeta().custom_metadata_map
        self.model = json.loads(meta["ctrain.model"])
        self.data = json.loads(meta["ctrain.data"])
        ins = {i.name: i for i in self.sess.get_inputs()}
        outs = [o.name for o in self.sess.get_outputs()]
        if sorted(ins) != ["ids", "values"] or outs != ["prediction"]:
            fail("graph inputs %s / outputs %s, expected ids, values / prediction" % (sorted(ins), outs))
        if ins["ids"].type != "tensor(int64)" or ins["values"].type != "tensor(float)":
            fail("input types %s %s" % (ins["ids"].type, ins["values"].type))
        if len(ins["ids"].shape) != rank or ins["ids"].shape[1] != self.model["field_size"]:
            fail("ids has shape %s, expected rank %d with F = %d" % (ins["ids"].shape, rank, self.model["field_size"]))

    def run(self, ids, values):
        (pred,) = self.sess.run(["prediction"], {"ids": ids, "values": values})
        if pred.dtype != np.float32 or pred.shape != (ids.shape[0],):
            fail("prediction has dtype %s shape %s, expected float32 [%d]" % (pred.dtype, pred.shape, ids.shape[0]))
        return pred


def onnx_predict(model_path, input_path):
    m = OnnxModel(model_path, 2)
    ids, values = read_libsvm(input_path, m.data, m.model["field_size"])
    return m.run(ids, values)


class NpyModel:
    def __init__(self, out_dir):
        with open(os.path.join(out_dir, "index.json")) as f:
            index = json.load(f)
        if index.get("format") != "ctrain-npy-export-v1":
            fail("index.json format %r" % index.get("format"))
        self.cfg, self.data = index["model"], index["data"]
        self.t = {}
        self.keys = None  # a keyed table: the sorted keys; keys[i] -> row num_dense_fields + 1 + i
        for e in index["tensors"]:
            a = np.load(os.path.join(out_dir, e["file"]), allow_pickle=False)
            if e["name"] == "embeddings/keys":
                if a.dtype != np.int64 or e["dtype"] != "int64" or list(a.shape) != e["shape"]:
                    fail("%s: dtype %s shape %s, index says %s %s" % (e["file"], a.dtype, a.shape, e["dtype"], e["shape"]))
                self.keys = a
                continue
            if a.dtype != np.float32 or list(a.shape) != e["shape"] or e["dtype"] != "float32":
                fail("%s: dtype %s shape %s, index says %s %s" % (e["file"], a.dtype, a.shape, e["dtype"], e["shape"]))
            self.t[e["name"]] = a.astype(np.float64)  # the reference runs in double

    def predict(self, ids, values):
        """ids, values: [B, F] (one-hot) or [B, F, M] (multi-hot: sum of M weighted rows per field)."""
        cfg, t = self.cfg, self.t
        F, K, N = cfg["field_size"], cfg["embedding_size"], cfg["feature_size"]
        if self.keys is not None:  # keys -> rows: the numeric fields' ids stay, unknown keys read the zero row D
            D = cfg["num_dense_fields"]
            pos = np.searchsorted(self.keys, ids)
            found = (pos < len(self.keys)) & (self.keys[np.minimum(pos, len(self.keys) - 1)] == ids)
            rows = np.where(found, D + 1 + pos, D)
            rows[:, :D] = ids[:, :D]
            ids, N = rows, D + 1 + len(self.keys)
        if cfg.get("oov_buckets"):  # --oov bucket: an id at or above the vocabulary reads its field's row V + f
            V = N - F
            field = np.arange(F).reshape((1, F) + (1,) * (ids.ndim - 2))
            ids = np.where(ids >= V, V + field, ids)
        if ids.ndim == 2:
            ids, values = ids[:, :, None], values[:, :, None]
        if ids.min() < 0 or ids.max() >= N:
            fail("ids outside [0, %d)" % N)
        x = values.astype(np.float64)
        logit = np.full(ids.shape[0], t["fm_bias"][0])
        if cfg["use_first_order"]:
            if t["embeddings/w"].shape != (N,):
                fail("embeddings/w shape %s" % (t["embeddings/w"].shape,))
            logit += (t["embeddings/w"][ids] * x).sum(axis=(1, 2))
        if cfg["use_fm"] or cfg["use_deep"]:
            if t["embeddings/V"].shape != (N, K):
                fail("embeddings/V shape %s" % (t["embeddings/V"].shape,))
            e = (t["embeddings/V"][ids] * x[..., None]).sum(axis=2)  # [B, F, K]
        return self._rest(ids.shape[0], logit, e if (cfg["use_fm"] or cfg["use_deep"]) else None)

    def _rest(self, B, logit, e):
        cfg, t = self.cfg, self.t
        F, K = cfg["field_size"], cfg["embedding_size"]
        if cfg["use_fm"]:
            s = e.sum(axis=1)
            logit += 0.5 * (s * s - (e * e).sum(axis=1)).sum(axis=1)
        if cfg["use_deep"]:
            h = e.reshape(B, F * K)
            for i in range(len(cfg["deep_layers"])):
                h = np.maximum(h @ t["mlp%d/weights" % i] + t["mlp%d/biases" % i], 0.0)
                if cfg["batch_norm"]:
                    bn = "bn_%d/" % i
                    scale = t[bn + "gamma"] / np.sqrt(t[bn + "moving_variance"] + cfg["batch_norm_epsilon"])
                    h = (h - t[bn + "moving_mean"]) * scale + t[bn + "beta"]
            logit += (h @ t["deep_out/weights"] + t["deep_out/biases"])[:, 0]
        return 1.0 / (1.0 + np.exp(-logit))


def npy_predict(out_dir, input_path):
    m = NpyModel(out_dir)
    ids, values = read_libsvm(input_path, m.data, m.cfg["field_size"])
    return m.predict(ids, values)


def spread_predict(m, ids, values, rng):
    """The --multi-hot graph m on one-hot rows as three entries per field: the same prediction as
    the one-hot model."""
    pad = rng.integers(0, m.model["feature_size"], size=ids.shape)
    # The numeric fields' ids are rows as they are (0..num_dense_fields-1; a keyed table passes them through):
    # pad them with their own id.
    D = m.model.get("num_dense_fields", 0)
    pad[:, :D] = ids[:, :D]
    ids3 = np.stack([ids, ids, pad], axis=2)
    values3 = np.stack([values * 0.25, values * 0.75, np.zeros_like(values)], axis=2).astype(np.float32)
    return m.run(ids3, values3)


def multi_hot_predict(model_path, input_path):
    m = OnnxModel(model_path, 3)
    ids, values = read_libsvm(input_path, m.data, m.model["field_size"])
    return spread_predict(m, ids, values, np.random.default_rng(7))


def padded_predict(model_path, npy_dir, input_path):
    m = OnnxModel(model_path, 3)
    ref = NpyModel(npy_dir)
    rng = np.random.default_rng(7)
    # (1) one-hot rows as three entries per field.
    ids, values = read_libsvm(input_path, m.data, m.model["field_size"])
    pred = spread_predict(m, ids, values, rng)
    # (2) genuinely multi-hot rows against the numpy forward pass: field f draws its ids from the
    # input's field f (ids the model was trained on, so predictions vary).
    B, F, M = 300, m.model["field_size"], 3
    mids = ids[rng.integers(0, ids.shape[0], size=(B, F, M)), np.arange(F)[None, :, None]]
    lengths = rng.integers(0, M + 1, size=(B, F))
    mvalues = (rng.random((B, F, M)) * (np.arange(M)[None, None, :] < lengths[:, :, None])).astype(np.float32)
    got, want = m.run(mids, mvalues), ref.predict(mids, mvalues)
    worst = float(np.abs(got - want).max())
    print("export_check: multi-hot rows: max |onnxruntime - numpy| = %.3g, predictions in [%.3f, %.3f]"
          % (worst, want.min(), want.max()), file=sys.stderr)
    if not worst < 1e-5:
        fail("multi-hot rows: onnxruntime and numpy differ by %g" % worst)
    if want.max() - want.min() < 0.05:
        fail("multi-hot rows: predictions barely vary (%g..%g): the check says little" % (want.min(), want.max()))
    return pred


def main(argv):
    if len(argv) == 6 and argv[1] == "padded":
        pred = padded_predict(argv[2], argv[3], argv[4])
        out = argv[5]
    elif len(argv) == 5 and argv[1] in ("onnx", "npy", "multi_hot"):
        mode, model, inp, out = argv[1:]
        predict = {"onnx": onnx_predict, "npy": npy_predict, "multi_hot": multi_hot_predict}[mode]
        pred = predict(model, inp)
    else:
        fail("usage: export_check.py onnx|npy|multi_hot MODEL INPUT OUT | padded MODEL.onnx NPY_DIR INPUT OUT")
    with open(out, "w") as f:
        f.write("".join("%.9g\n" % p for p in pred))


if __name__ == "__main__":
    main(sys.argv)
