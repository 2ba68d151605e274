"""Smoke + correctness tests for bench/peers (run: python3 -m pytest tests/peers -q).

Each script is run on a tiny file it writes itself; the TF / torch parts are
skipped when the framework is not installed.
"""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(ROOT, "bench", "peers")
sys.path.insert(0, PEERS)
import common  # noqa: E402
import make_synthetic  # noqa: E402

F = 39
N_FEAT = 500
ROWS = 300

has_torch = importlib.util.find_spec("torch") is not None
has_tf = importlib.util.find_spec("tensorflow") is not None


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("peers")
    labels, ids, vals = make_synthetic.generate(ROWS, F, N_FEAT, 1.2, 3)
    path = str(d / "tiny.libsvm")
    make_synthetic.write_libsvm(path, labels, ids, vals, False)
    return d, path, labels, ids, vals


def run_json(args):
    out = subprocess.run([sys.executable] + args, check=True, stdout=subprocess.PIPE,
                         text=True, timeout=300).stdout
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    return json.loads(lines[0])


def test_load_libsvm_roundtrip(data):
    _, path, labels, ids, vals = data
    ds = common.load_libsvm(path, F)
    assert len(ds) == ROWS
    np.testing.assert_array_equal(ds.labels, labels)
    np.testing.assert_array_equal(ds.ids, ids)
    np.testing.assert_allclose(ds.values, vals, rtol=1e-5)


def test_load_libsvm_rejects_short_line(tmp_path):
    p = tmp_path / "bad.libsvm"
    p.write_text("1 0:1 1:1\n0 0:1\n")
    with pytest.raises(ValueError, match=r"bad.libsvm: line 2: expected 2 id:val pairs, found 1"):
        common.load_libsvm(str(p), 2)


def test_load_libsvm_id_offset_and_negative(tmp_path):
    p = tmp_path / "one.libsvm"
    p.write_text("1 1:0.5 3:1\n0 2:1 4:1\n")
    ds = common.load_libsvm(str(p), 2, id_offset=1)
    np.testing.assert_array_equal(ds.ids, [[0, 2], [1, 3]])
    np.testing.assert_array_equal(ds.values, [[0.5, 1], [1, 1]])
    with pytest.raises(ValueError, match="line 1: negative id"):
        common.load_libsvm(str(p), 2, id_offset=2)


def test_auc_matches_pairwise_count():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200).astype(np.float32)
    s = np.round(rng.random(200), 1)  # many ties
    pos, neg = s[y == 1], s[y == 0]
    want = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) \
        / (pos.size * neg.size)
    assert common.auc(y, s) == pytest.approx(want, abs=1e-12)
    assert common.auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0


@pytest.mark.skipif(not has_torch, reason="torch not installed")
def test_torch_two_steps(data):
    _, path, *_ = data
    r = run_json([os.path.join(PEERS, "deepfm_torch.py"), "--train", path, "--valid", path,
                  "--feature-size", str(N_FEAT), "--batch-size", "64", "--max-steps", "2",
                  "--warmup-steps", "1", "--deep-layers", "16,16"])
    assert r["peer"] == "pytorch" and r["steps"] == 2 and r["timed_steps"] == 1
    assert r["examples_per_sec"] > 0 and np.isfinite(r["final_loss"])
    assert 0.0 <= r["auc"] <= 1.0


@pytest.mark.skipif(not has_tf, reason="tensorflow not installed")
def test_tf_two_steps(data):
    _, path, *_ = data
    r = run_json([os.path.join(PEERS, "deepfm_tf.py"), "--train", path, "--valid", path,
                  "--feature-size", str(N_FEAT), "--batch-size", "64", "--max-steps", "2",
                  "--warmup-steps", "1", "--deep-layers", "16,16"])
    assert r["peer"] == "tensorflow" and r["steps"] == 2 and r["timed_steps"] == 1
    assert r["examples_per_sec"] > 0 and np.isfinite(r["final_loss"])
    assert 0.0 <= r["auc"] <= 1.0


@pytest.mark.skipif(not has_tf, reason="tensorflow not installed")
@pytest.mark.parametrize("fmt,comp", [("libsvm", "NONE"), ("tfrecord", "NONE"),
                                      ("tfrecord", "GZIP")])
def test_tf_parse_counts_and_checksums(data, fmt, comp):
    d, path, labels, ids, vals = data
    if fmt == "tfrecord":
        path = str(d / f"tiny.{comp}.tfrecord")
        make_synthetic.write_tfrecord(path, labels, ids, vals,
                                      "GZIP" if comp == "GZIP" else None)
        assert common.count_tfrecords(path, comp == "GZIP") == ROWS
    r = run_json([os.path.join(PEERS, "tf_parse.py"), "--format", fmt, "--compression", comp,
                  "--batch-size", "128", "--repeat", "1", path])
    assert r["records"] == ROWS
    assert r["label_sum"] == float(labels.sum())
    assert r["id_sum"] == int(ids.sum())


@pytest.mark.skipif(not has_tf, reason="tensorflow not installed")
def test_tf_data_service_counts_and_checksums(data):
    d, _, labels, ids, vals = data
    path = str(d / "tiny.service.tfrecord")
    make_synthetic.write_tfrecord(path, labels, ids, vals, None)
    server = subprocess.Popen([sys.executable, os.path.join(PEERS, "tf_data_service_peer.py"), "server"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()  # "dispatcher grpc://HOST:PORT" (blocks until the server is up)
        assert line.startswith("dispatcher grpc://"), line
        r = run_json([os.path.join(PEERS, "tf_data_service_peer.py"), "client", "--service", line.split()[1],
                      "--file", path, "--batch-size", "128", "--repeat", "1"])
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert r["examples"] == ROWS and r["batches"] == -(-ROWS // 128)
    assert r["bytes"] == ROWS * (4 + 12 * F)
    assert r["label_sum"] == float(labels.sum())
    assert r["id_sum"] == int(ids.sum())
    assert len(r["seconds"]) == 1 and r["bytes_per_sec"] > 0
