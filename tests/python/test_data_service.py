"""ctrain.DataService: the client against a real dispatcher and worker (`ctrain data-service`
processes on 127.0.0.1, free ports, bounded waits, every process stopped and reaped)."""

import collections
import json
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import ctrain

from conftest import VA10K, skip_without_tensorflow, write_stripped_criteo


class Server:
    """A `ctrain data-service <role>` process; address() waits for its 'listening on' line."""

    def __init__(self, cli, args, log):
        self.log = open(log, "w")
        self.p = subprocess.Popen([cli, "data-service"] + args, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.line = None
        got = threading.Event()

        def read():
            for line in self.p.stdout:
                if self.line is None and " listening on " in line:
                    self.line = line.strip()
                    got.set()

        threading.Thread(target=read, daemon=True).start()
        if not got.wait(20):
            self.stop()
            raise AssertionError(f"{args[0]} did not start in 20 s: see {log}")

    def address(self):
        return self.line.rsplit(" ", 1)[1]

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()  # SIGTERM: every process exits cleanly
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


@pytest.fixture
def service(cli, tmp_path):
    servers = []
    try:
        d = Server(cli, ["dispatcher", "--port", "0", "--work-dir", str(tmp_path / "ds")], tmp_path / "d.err")
        servers.append(d)
        w = Server(cli, ["worker", "--dispatcher", d.address(), "--port", "0", "--heartbeat-ms", "200"],
                   tmp_path / "w.err")
        servers.append(w)
        yield d.address()
    finally:
        for s in reversed(servers):
            s.stop()


def rows(batches):
    c = collections.Counter()
    for b in batches:
        for label, ids, values in zip(b.labels.tolist(), b.ids.tolist(), b.values.tolist()):
            c[(label, tuple(ids), tuple(values))] += 1
    return c


def test_data_service_pipeline_gives_every_example_once(service, va10k_split):
    tr, _ = va10k_split
    want = rows([ctrain.read(tr, **VA10K)])
    p = ctrain.DataService(service).pipeline(str(tr), batch_size=256, num_splits=4, **VA10K)
    got = list(p)
    assert all(b.ids.shape[1] == 39 and b.ids.dtype == np.int64 for b in got)
    assert rows(got) == want
    # 8000 examples in 4 splits of 2000: 8 batches per split (7 of 256 and one of 208).
    assert len(got) == 32


def test_data_service_state_dict_resumes_mid_epoch(service, va10k_split):
    tr, _ = va10k_split
    want = rows([ctrain.read(tr, **VA10K)])
    ds = ctrain.DataService(service)
    first = ds.pipeline(str(tr), batch_size=256, num_splits=4, job_name="resume", epochs=1, **VA10K)
    it = iter(first)
    head = [next(it) for _ in range(11)]
    state = first.state_dict()
    cur = state["data_cursor"]
    assert cur["job"] == "resume" and cur["epoch"] == 0
    assert len(cur["done"]) + len(cur["partial"]) >= 1
    del it, first  # the "process" ends without releasing the job
    second = ds.pipeline(str(tr), batch_size=256, num_splits=4, job_name="resume", epochs=1, **VA10K)
    second.load_state_dict(state)
    tail = list(second)
    assert rows(head) + rows(tail) == want  # every example exactly once


@pytest.mark.parametrize("depth", [0, 4])
def test_as_torch_with_prefetch_resumes_at_the_batches_it_handed_out(service, va10k_split, depth):
    """The torch dataset's cursor is the last batch the loop took, not the last one read ahead:
    the batches prefetched but never taken come again after the resume, so each example is seen once."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/install-deps.sh installs it)")
    tr, _ = va10k_split
    want = rows([ctrain.read(tr, **VA10K)])
    svc = ctrain.DataService(service)
    job = f"torch-resume-{depth}"
    first = svc.pipeline(str(tr), batch_size=256, num_splits=4, job_name=job, epochs=1, **VA10K)
    ds = first.as_torch(prefetch=depth)
    it = iter(ds)
    head = [next(it) for _ in range(11)]
    state = ds.state_dict()
    time.sleep(1.0)  # the prefetch thread fills its places meanwhile
    it.close()  # stops and joins the prefetch thread
    assert (first.state_dict() != state) == (depth > 0)  # with prefetch, the pipeline read ahead of the loop
    del it, ds, first
    second = svc.pipeline(str(tr), batch_size=256, num_splits=4, job_name=job, epochs=1, **VA10K)
    ds2 = second.as_torch(prefetch=depth)
    ds2.load_state_dict(state)
    tail = list(ds2)
    as_batches = [ctrain.Batch(*(t.numpy() for t in b)) for b in head + tail]
    assert isinstance(head[0][1], torch.Tensor)
    assert rows(as_batches) == want  # every example exactly once


def test_data_service_errors(cli, va10k_split):
    tr, _ = va10k_split
    with pytest.raises(ValueError, match="--data-service"):
        list(ctrain.DataService("no-port").pipeline(str(tr), **VA10K))
    with pytest.raises(ValueError, match="--num-splits"):
        list(ctrain.DataService("127.0.0.1:1").pipeline(str(tr), num_splits=0, **VA10K))
    with pytest.raises(TypeError):
        ctrain.DataService("127.0.0.1:1").pipeline(str(tr), bogus=1)


def test_data_service_pads_stripped_criteo_rows(service, tmp_path):
    # The dataset definition carries criteo_pad_missing_trailing to the workers: the stripped rows arrive as the
    # full file's rows (without it, the workers refuse the first short row).
    write_stripped_criteo(tmp_path, 40)
    want = rows([ctrain.read(tmp_path / "full.tsv")])
    ds = ctrain.DataService(service)
    got = list(ds.pipeline(str(tmp_path / "stripped.tsv"), batch_size=8, num_splits=2, job_name="padded",
                           criteo_pad_missing_trailing=True))
    assert rows(got) == want
    with pytest.raises(Exception, match=r"stripped.tsv:2: expected 40 cells, got 39"):
        list(ds.pipeline(str(tmp_path / "stripped.tsv"), batch_size=8, num_splits=2, job_name="refused"))


TF_FIRST = """import sys
import tensorflow as tf  # first: its own gRPC, protobuf and abseil enter the global scope
import ctrain
pipeline = ctrain.DataService(sys.argv[1]).pipeline(sys.argv[2], batch_size=256, num_splits=4, field_size=39,
                                                    format="libsvm", id_base=1, feature_size=921)
n = 0
for y, ids, vals in pipeline.as_tf():
    assert ids.shape[1] == 39 and ids.dtype == tf.int64
    n += int(tf.shape(y)[0])
print("rows", n)
"""


def test_a_data_service_client_after_tensorflow_as_tf(service, va10k_split, tmp_path):
    """TensorFlow imported before ctrain (a Keras user's script): the client works, and
    DataServicePipeline.as_tf() gives every row (it crashed with SIGSEGV before ctrain's module was
    loaded with RTLD_DEEPBIND)."""
    skip_without_tensorflow()
    tr, _ = va10k_split
    script = tmp_path / "tf_first.py"
    script.write_text(TF_FIRST)
    p = subprocess.run([sys.executable, str(script), service, str(tr)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "rows 8000" in p.stdout, p.stdout


# ---- feature-spec batches (issue #23) ------------------------------------------------------------


def _spec_rows(d, n):
    """Row r of a spec batch dict as a hashable tuple (label, then each entry's values of row r)."""
    out = []
    for r in range(n):
        row = [float(d["label"][r])]
        for k, v in d.items():
            if k == "label":
                continue
            if isinstance(v, tuple):
                ends = list(v[1][1:]) + [len(v[0])]
                lo, hi = int(v[1][r]), int(ends[r])
                row.append(tuple(tuple(a[lo:hi].tolist()) for a in (v[0],) + tuple(v[2:])))
            else:
                row.append(tuple(np.atleast_1d(v[r]).tolist()))
        out.append(tuple(row))
    return out


def test_feature_spec_batches_through_the_data_service(service, cli, tmp_path):
    """DataService(...).pipeline(feature_spec=): the workers read a DeepCTR-layout TFRecord and a
    multi-hot libFFM file through the spec. With one split the batches are the file's rows in order and
    their arrays equal `ctrain convert --output-format npz`'s; with three splits of one file (record
    level) and over two epochs every row comes once per epoch; as_torch gives the same tensors; what a
    spec read cannot honour is refused by name."""
    from test_feature_spec_arrays import ROWS, assert_same, concat, from_npz, write_both_inputs

    deepctr, ffm = write_both_inputs(cli, tmp_path)
    ds = ctrain.DataService(service)
    for i, (data, spec) in enumerate([(deepctr, tmp_path / "spec.json"), (ffm, tmp_path / "ffm.json")]):
        want = ctrain.read(data, feature_spec=spec)
        npz = tmp_path / f"{i}.npz"
        ctrain.convert(data, npz, feature_spec=spec, output_format="npz")
        want = from_npz(npz, want)

        one = list(ds.pipeline(data, batch_size=5, num_splits=1, job_name=f"one{i}", feature_spec=spec))
        assert all(isinstance(b, dict) for b in one)
        assert [len(b["label"]) for b in one] == [5] * (ROWS // 5) + ([ROWS % 5] if ROWS % 5 else [])
        assert_same(concat(one), want)

        three = concat(list(ds.pipeline(data, batch_size=4, num_splits=3, epochs=2, job_name=f"three{i}",
                                        feature_spec=spec)))
        assert len(three["label"]) == 2 * ROWS
        assert sorted(_spec_rows(three, 2 * ROWS)) == sorted(_spec_rows(want, ROWS) * 2)

        # Resumed mid-epoch from state_dict(): every row once, as without spec.
        first = ds.pipeline(data, batch_size=4, num_splits=3, job_name=f"resume{i}", feature_spec=spec)
        it = iter(first)
        head = [next(it) for _ in range(3)]
        state = first.state_dict()
        del it, first
        second = ds.pipeline(data, batch_size=4, num_splits=3, job_name=f"resume{i}", feature_spec=spec)
        second.load_state_dict(state)
        both = concat(head + list(second))
        assert sorted(_spec_rows(both, ROWS)) == sorted(_spec_rows(want, ROWS))

        torch = pytest.importorskip("torch", reason="PyTorch is not installed")
        tb = list(ds.pipeline(data, batch_size=5, num_splits=1, job_name=f"torch{i}", feature_spec=spec)
                  .as_torch(prefetch=2))
        got = concat([{k: tuple(t.numpy() for t in v) if isinstance(v, tuple) else v.numpy() for k, v in b.items()}
                      for b in tb])
        assert_same(got, want)
        assert all(isinstance(t, torch.Tensor) for b in tb for v in b.values()
                   for t in (v if isinstance(v, tuple) else (v,)))

    spec = tmp_path / "ffm.json"
    for bad, kw in [("shuffle_buffer=8", dict(shuffle_buffer=8)), ("num_parallel_reads=2", dict(num_parallel_reads=2)),
                    ("id_base=1", dict(id_base=1)), ("format='libsvm'", dict(format="libsvm"))]:
        with pytest.raises(ValueError, match=rf"DataService.pipeline\({re.escape(bad)}\) does not apply with "
                                             r"feature_spec="):
            ds.pipeline(ffm, feature_spec=spec, **kw)
    # A file the spec does not read: the worker's error names it and the record.
    with pytest.raises((ValueError, RuntimeError), match=r"deepctr.tfrecord"):
        list(ds.pipeline(deepctr, num_splits=1, job_name="wrong", feature_spec=spec))


MONITORED = """import sys, time
import ctrain
def pipeline(job_name):
    return ctrain.DataService(sys.argv[1]).pipeline(sys.argv[2], batch_size=256, num_splits=4, job_name=job_name,
                                                    field_size=39, format="libsvm", id_base=1, feature_size=921)
n = 0
for b in pipeline("direct"):  # 32 batches: 31 steps
    time.sleep(0.03)
    n += len(b.labels)
import torch
for labels, ids, values in pipeline("torch").as_torch(prefetch=2):  # 31 more, timed where the loop takes them
    time.sleep(0.03)
    n += labels.shape[0]
print("rows", n)
"""


def test_a_launched_scripts_data_service_batches_are_monitored_steps(service, va10k_split, tmp_path):
    """Under `ctrain launch` (CTRAIN_MONITOR_DIR), each batch a script's loop takes from a
    DataServicePipeline, directly or through .as_torch(prefetch=), is a monitored step with no loss."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    tr, _ = va10k_split
    mon = tmp_path / "mon"
    p = subprocess.run([sys.executable, "-c", MONITORED, service, str(tr)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, CTRAIN_MONITOR_DIR=str(mon)))
    assert p.returncode == 0, p.stderr
    assert "rows 16000" in p.stdout, p.stdout
    train = [j for j in map(json.loads, (mon / "metrics.jsonl").read_text().splitlines()) if j["kind"] == "train"]
    assert [j["step"] for j in train] == list(range(1, 63)), train  # a line per step: 31 + 31
    sizes = []
    for j in train:
        v = j["values"]
        assert "train/loss" not in v and v["train/step_time_ms"] >= 30, v
        sizes.append(v["train/examples_per_sec"] * v["train/step_time_ms"] / 1000)
    # Each step's batch: 256 rows, or the partial last batch of one of the 4 splits.
    assert all(abs(n - round(n)) < 1e-6 and 1 <= round(n) <= 256 for n in sizes), sizes
    assert sum(round(n) == 256 for n in sizes) >= 62 - 2 * 4, sizes
