"""ctrain.monitor / ctrain.monitor_steps (python/ctrain/_monitor.py, python/src/script_monitor.h): a
script under `ctrain launch` (CTRAIN_MONITOR_DIR) records its steps and its CPU as ctrain's own
roles do. Each case runs in a child process: the monitor is one per process and lives until exit."""

import json
import os
import re
import subprocess
import sys

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
    # 31 batches: the first is no step, then one line per 10 steps.
    assert [j["step"] for j in train] == [10, 20, 30], train
    for j in train:
        v = j["values"]
        assert "train/loss" not in v, v  # ctrain never sees the script's loss
        assert 38 <= v["train/step_time_ms"] <= 200, v  # 0.02 s waiting + 0.02 s computing
        assert 25 <= v["train/input_wait_percent"] <= 75, v
        assert v["train/examples_per_sec"] == pytest.approx(64 / (v["train/step_time_ms"] / 1000), rel=1e-6), v
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
