#!/usr/bin/env python3
"""Runs a model written by `ctrain export` outside ctrain, for tests/export/export_test.cc.

  export_check.py onnx MODEL.onnx INPUT.libsvm OUT.txt   # onnxruntime on the ONNX graph
  export_check.py npy  DIR        INPUT.libsvm OUT.txt   # a numpy DeepFM forward pass on the .npy files

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


def onnx_predict(model_path, input_path):
    import onnxruntime as ort

    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    meta = sess.get_modelmeta().custom_metadata_map
    model = json.loads(meta["ctrain.model"])
    data = json.loads(meta["ctrain.data"])
    ins = {i.name: i for i in sess.get_inputs()}
    outs = [o.name for o in sess.get_outputs()]
    if sorted(ins) != ["ids", "values"] or outs != ["prediction"]:
        fail("graph inputs %s / outputs %s, expected ids, values / prediction" % (sorted(ins), outs))
    if ins["ids"].type != "tensor(int64)" or ins["values"].type != "tensor(float)":
        fail("input types %s %s" % (ins["ids"].type, ins["values"].type))
    ids, values = read_libsvm(input_path, data, model["field_size"])
    (pred,) = sess.run(["prediction"], {"ids": ids, "values": values})
    if pred.dtype != np.float32 or pred.shape != (ids.shape[0],):
        fail("prediction has dtype %s shape %s, expected float32 [%d]" % (pred.dtype, pred.shape, ids.shape[0]))
    return pred


def npy_predict(out_dir, input_path):
    with open(os.path.join(out_dir, "index.json")) as f:
        index = json.load(f)
    if index.get("format") != "ctrain-npy-export-v1":
        fail("index.json format %r" % index.get("format"))
    cfg = index["model"]
    t = {}
    for e in index["tensors"]:
        a = np.load(os.path.join(out_dir, e["file"]), allow_pickle=False)
        if a.dtype != np.float32 or list(a.shape) != e["shape"] or e["dtype"] != "float32":
            fail("%s: dtype %s shape %s, index says %s %s" % (e["file"], a.dtype, a.shape, e["dtype"], e["shape"]))
        t[e["name"]] = a.astype(np.float64)  # the reference runs in double
    F, K, N = cfg["field_size"], cfg["embedding_size"], cfg["feature_size"]
    ids, values = read_libsvm(input_path, index["data"], F)
    if ids.min() < 0 or ids.max() >= N:
        fail("ids outside [0, %d)" % N)
    x = values.astype(np.float64)
    logit = np.full(ids.shape[0], t["fm_bias"][0])
    if cfg["use_first_order"]:
        if t["embeddings/w"].shape != (N,):
            fail("embeddings/w shape %s" % (t["embeddings/w"].shape,))
        logit += (t["embeddings/w"][ids] * x).sum(axis=1)
    if cfg["use_fm"] or cfg["use_deep"]:
        if t["embeddings/V"].shape != (N, K):
            fail("embeddings/V shape %s" % (t["embeddings/V"].shape,))
        e = t["embeddings/V"][ids] * x[:, :, None]  # [B, F, K]
    if cfg["use_fm"]:
        s = e.sum(axis=1)
        logit += 0.5 * (s * s - (e * e).sum(axis=1)).sum(axis=1)
    if cfg["use_deep"]:
        h = e.reshape(ids.shape[0], F * K)
        for i in range(len(cfg["deep_layers"])):
            h = np.maximum(h @ t["mlp%d/weights" % i] + t["mlp%d/biases" % i], 0.0)
            if cfg["batch_norm"]:
                bn = "bn_%d/" % i
                scale = t[bn + "gamma"] / np.sqrt(t[bn + "moving_variance"] + cfg["batch_norm_epsilon"])
                h = (h - t[bn + "moving_mean"]) * scale + t[bn + "beta"]
        logit += (h @ t["deep_out/weights"] + t["deep_out/biases"])[:, 0]
    return 1.0 / (1.0 + np.exp(-logit))


def main(argv):
    if len(argv) != 5 or argv[1] not in ("onnx", "npy"):
        fail("usage: export_check.py onnx|npy MODEL INPUT OUT")
    mode, model, inp, out = argv[1:]
    pred = onnx_predict(model, inp) if mode == "onnx" else npy_predict(model, inp)
    with open(out, "w") as f:
        f.write("".join("%.9g\n" % p for p in pred))


if __name__ == "__main__":
    main(sys.argv)
