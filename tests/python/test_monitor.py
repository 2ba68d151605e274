"""ctrain.monitor / ctrain.monitor_steps (python/ctrain/_monitor.py, python/src/script_monitor.h): a
script under `ctrain launch` (CTRAIN_MONITOR_DIR) records its steps and its CPU as ctrain's own
roles do. Each case runs in a child process: the monitor is one per process and lives until exit."""

import json
import os
import re
import statistics
import subprocess
import sys

import numpy as np
import pytest

import ctrain

LOOP = """import sys, time
import numpy as np
import ctrain

def batches():  # 0.02 s to make each batch: the loop waits for it
    for _ in range(31):
        time.sleep(0.02)
        yield (np.zeros(64, np.float32), np.zeros((64, 3), np.int64))

n = 0
for labels, ids in ctrain.monitor_steps(batches()):
    time.sleep(0.02)  # the step's compute
    n += len(labels)
print("examples", n)
"""


def run(code, tmp_path, **env):
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **env), cwd=tmp_path)
    return p


def lines(path):
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()]


def test_monitor_steps_records_step_time_input_wait_and_examples(tmp_path):
    mon = tmp_path / "mon"
    p = run(LOOP, tmp_path, CTRAIN_MONITOR_DIR=str(mon), CTRAIN_MONITOR_INTERVAL_MS="50")
    assert p.returncode == 0, p.stderr
    assert "examples 1984" in p.stdout  # every batch reached the loop
    got = lines(mon / "metrics.jsonl")
    assert got[0]["kind"] == "start" and got[0]["role"] == "trainer", got[0]
    train = [j for j in got if j["kind"] == "train"]
    # 31 batches: the first is no step, then a line per step.
    assert [j["step"] for j in train] == list(range(1, 31)), train
    for j in train:
        v = j["values"]
        assert "train/loss" not in v, v  # ctrain never sees the script's loss
        assert v["train/examples_per_sec"] == pytest.approx(64 / (v["train/step_time_ms"] / 1000), rel=1e-6), v
    step_ms = statistics.median(j["values"]["train/step_time_ms"] for j in train)
    wait = statistics.median(j["values"]["train/input_wait_percent"] for j in train)
    assert 38 <= step_ms <= 200, step_ms  # 0.02 s waiting + 0.02 s computing
    assert 25 <= wait <= 75, wait
    system = [j for j in got if j["kind"] == "system"]
    assert system and all("cpu/process_percent" in j["values"] for j in system), system


def test_monitor_steps_without_the_launcher_only_yields(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CTRAIN_MONITOR_DIR"}
    p = subprocess.run([sys.executable, "-c", LOOP + "assert ctrain.monitor() is False\n"], capture_output=True,
                       text=True, timeout=120, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "examples 1984" in p.stdout
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_data_host_process_records_its_cpu_as_its_role(tmp_path):
    mon = tmp_path / "mon"
    code = """import time, ctrain
assert ctrain.monitor("data-worker") is True
t = time.time()
while time.time() - t < 0.4:
    pass  # busy: the CPU samples see it
"""
    p = run(code, tmp_path, CTRAIN_MONITOR_DIR=str(mon), CTRAIN_MONITOR_INTERVAL_MS="100")
    assert p.returncode == 0, p.stderr
    got = lines(mon / "metrics.jsonl")
    assert got[0]["role"] == "data-worker"
    cpu = [j["values"]["cpu/process_percent"] for j in got if j["kind"] == "system"]
    assert len(cpu) >= 2 and max(cpu) > 30, cpu


@pytest.mark.parametrize("code,env,error", [
    ("ctrain.monitor('data-worker'); list(ctrain.monitor_steps([[1]]))", {},
     r'monitored as "data-worker", not "trainer"'),
    ("ctrain.monitor()", {"CTRAIN_MONITOR_INTERVAL_MS": "1s"}, r'CTRAIN_MONITOR_INTERVAL_MS="1s": a whole number'),
    ("ctrain.monitor('a/b')", {}, r'monitor role "a/b"'),
])
def test_monitor_errors_name_what_is_wrong(tmp_path, code, env, error):
    p = run("import ctrain\n" + code, tmp_path, CTRAIN_MONITOR_DIR=str(tmp_path / "mon"), **env)
    assert p.returncode != 0
    assert "ValueError" in p.stderr and re.search(error, p.stderr), p.stderr


def test_monitor_steps_refuses_a_data_service_pipeline():
    pipeline = ctrain.DataService("127.0.0.1:1").pipeline("/nonexistent/x.libsvm", batch_size=8)
    with pytest.raises(TypeError, match="records its batches itself"):
        ctrain.monitor_steps(pipeline)


def test_monitor_steps_refuses_a_data_service_torch_dataset_and_a_dataloader_over_it():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    ds = ctrain.DataService("127.0.0.1:1").pipeline("/nonexistent/x.libsvm", batch_size=8).as_torch()
    for wrapped in (ds, torch.utils.data.DataLoader(ds, batch_size=None)):
        with pytest.raises(TypeError, match="records its batches itself"):
            ctrain.monitor_steps(wrapped)


class _Batch:
    def __init__(self, n):
        self.labels = np.zeros(n, np.float32)


@pytest.mark.parametrize("batch,n", [
    ((np.zeros(64), np.zeros((64, 3))), 64),                       # (labels, ids)
    ([np.zeros(64), np.zeros((64, 3))], 64),                       # a DataLoader's collated list
    ({"label": np.zeros(64), "x": np.zeros((64, 2))}, 64),
    ({"labels": np.zeros(64), "input_ids": np.zeros((64, 7))}, 64),
    ({"a": np.zeros((64, 5)), "b": np.zeros(64)}, 64),             # features only
    (({"a": np.zeros((64, 5)), "b": np.zeros(64)}, np.zeros(64)), 64),  # Keras's (features, labels)
    ([{"x": 1, "y": 0}] * 64, 64),                                 # a list of row dicts
    ([[1, 2, 3]] * 64, 64),                                        # a list of rows
    (list(range(64)), 64),
    (_Batch(64), 64),
])
def test_a_batch_counts_its_examples_in_the_usual_shapes(batch, n):
    assert ctrain._monitor._examples(batch) == n


def test_a_batch_that_cannot_be_counted_fails_with_or_without_the_launcher(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CTRAIN_MONITOR_DIR"}
    for extra in ({}, {"CTRAIN_MONITOR_DIR": str(tmp_path / "mon")}):
        p = subprocess.run([sys.executable, "-c", "import ctrain\nlist(ctrain.monitor_steps([1, 2]))\n"],
                           capture_output=True, text=True, timeout=120, env=dict(env, **extra), cwd=tmp_path)
        assert p.returncode != 0 and "pass examples=lambda batch" in p.stderr, (extra, p.stderr)
    assert list(ctrain.monitor_steps([1, 2], examples=lambda b: 1)) == [1, 2]


NESTED = """import time
import numpy as np
import ctrain

def loader(n, size):
    for _ in range(n):
        time.sleep(0.005)
        yield (np.zeros(size),)

for (labels,) in ctrain.monitor_steps(loader(11, 64)):
    for _ in ctrain.monitor_steps(loader(3, 8)):  # a validation pass inside a step: not steps
        pass
    time.sleep(0.01)
"""


def test_a_loop_inside_a_monitored_loop_is_not_recorded(tmp_path):
    mon = tmp_path / "mon"
    p = run(NESTED, tmp_path, CTRAIN_MONITOR_DIR=str(mon))
    assert p.returncode == 0, p.stderr
    train = [j for j in lines(mon / "metrics.jsonl") if j["kind"] == "train"]
    assert [j["step"] for j in train] == list(range(1, 11)), train  # the outer loop's 10 steps only
    for j in train:
        v = j["values"]
        assert v["train/examples_per_sec"] == pytest.approx(64 / (v["train/step_time_ms"] / 1000), rel=1e-6), v


def test_a_rejected_role_is_not_remembered_and_an_unwritable_directory_is_an_oserror(tmp_path):
    code = """import ctrain
try:
    ctrain.monitor("a/b")
    raise SystemExit("no error")
except ValueError:
    pass
assert ctrain.monitor("trainer") is True
"""
    p = run(code, tmp_path, CTRAIN_MONITOR_DIR=str(tmp_path / "mon"))
    assert p.returncode == 0, p.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = """import sys, ctrain
from ctrain._monitor import _examples, _monitored
try:
    ctrain.monitor()
    raise SystemExit("no error")
except OSError as e:
    print("OSError", e)
# What a DataServicePipeline does with it: said once, the batches still flow.
assert list(_monitored([(b"x",)] * 3, _examples, strict=False)) == [(b"x",)] * 3
"""
    p = run(code, tmp_path, CTRAIN_MONITOR_DIR=str(blocker / "mon"))
    assert p.returncode == 0, p.stderr
    assert "OSError" in p.stdout and "a-file" in p.stdout, p.stdout
    assert p.stderr.count("not monitoring this pipeline's batches") == 1, p.stderr
