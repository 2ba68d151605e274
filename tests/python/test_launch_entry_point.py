"""A user's own training script in a launched job (#23): `ctrain launch --entry-point` runs it in the
trainer role of a heterogeneous cluster, fed by the data hosts' data service
(examples/heterogeneous/pytorch_deepfm.py and keras_deepfm.py on the real split), and a failing script fails the job
with its own reason while every data host exits.

Real processes: `ctrain launch --local-cluster` starts one launcher per simulated host on loopback
(2 data hosts, 1 trainer host); the script is a real PyTorch program using the installed package."""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import skip_unless_installed

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "heterogeneous"
# The model and data settings, as the job's hyperparameters and as the local run's flags.
SETTINGS = {"epochs": 3, "batch_size": 256, "embedding_size": 16, "deep_layers": "200,200", "feature_size": 921,
            "id_base": 1, "format": "libsvm", "threads": 1, "seed": 5}


def spec(tmp_path, train, valid, hyperparameters):
    hps = "\n".join(f'{k} = "{v}"' for k, v in dict(hyperparameters, data_group="data").items())
    text = f"""[[group]]
name = "data"
instance_type = "ml.c5.xlarge"
count = 2

[[group]]
name = "train"
instance_type = "ml.g5.xlarge"
count = 1

[hyperparameters]
{hps}

[channels.train]
mode = "File"
files = ["{train}"]

[channels.validation]
mode = "File"
files = ["{valid}"]
"""
    path = tmp_path / "job.toml"
    path.write_text(text)
    return path


def launch(cli, tmp_path, job, script, *args):
    return subprocess.run([cli, "launch", "--local-cluster", str(job), "--work-dir", str(tmp_path / "run"),
                           "--monitor-interval-ms", "500", "--python", sys.executable, "--entry-point", str(script),
                           *args], capture_output=True, text=True, timeout=600, cwd=tmp_path)


def leftover_processes(root):
    """Processes whose command line names `root` (none may outlive the job)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(root) in cmd:
            out.append(cmd)
    return out


@pytest.mark.slow  # ~10-20 s each: three launchers, two data workers, a dispatcher and a PyTorch or Keras job
@pytest.mark.parametrize("example,framework,model_file", [("pytorch_deepfm.py", "torch", "model.pt"),
                                                          ("keras_deepfm.py", "tensorflow", "model.keras")])
def test_example_trains_through_the_data_service_and_reaches_the_local_auc(ctrain_cli, va10k_split, tmp_path,
                                                                           example, framework, model_file):
    """The field report's two reference jobs: a PyTorch DeepFM on .as_torch() and a Keras one on .as_tf(),
    each the trainer role of 2 data hosts + 1 trainer host, against the same script fed from local files."""
    skip_unless_installed(framework, f"{framework} is not installed (the example is a {framework} program)")
    script = EXAMPLES / example
    train, valid = va10k_split
    # The same script fed from local files (no launcher, no service).
    local_out = tmp_path / "local"
    local_out.mkdir()
    flags = [a for k, v in SETTINGS.items() for a in (f"--{k}", str(v))]
    p = subprocess.run([sys.executable, str(script), *flags, "--train", str(train), "--valid", str(valid)],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, SM_OUTPUT_DATA_DIR=str(local_out)))
    assert p.returncode == 0, p.stderr
    local = json.loads((local_out / "metrics.json").read_text())
    assert local["source"] == "files" and local["examples"] == 3 * 8000 and local["steps"] == 3 * 32, local

    r = launch(ctrain_cli, tmp_path, spec(tmp_path, train, valid, SETTINGS), script)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log
    trainer = tmp_path / "run" / "algo-3"
    metrics = json.loads((trainer / "output" / "data" / "metrics.json").read_text())
    assert metrics["source"].startswith("data service 127.0.0.1:"), metrics
    assert metrics["examples"] == 3 * 8000 and metrics["steps"] == 3 * 32, metrics  # every row once per epoch
    # The batches come in the service's split order, not the file's: the AUC of the local run, within noise.
    assert metrics["auc"] >= local["auc"] - 0.01, (metrics, local)
    assert metrics["auc"] > 0.70, metrics
    assert (trainer / "model" / model_file).is_file()
    # The launcher ran the script (the toolkit's arguments after it) and both data hosts served it, then stopped.
    assert "a user entry point (--entry-point" in log, log
    assert "--data_group data --deep_layers 200,200 --embedding_size 16 --epochs 3" in log, log
    for h in ("algo-1", "algo-2"):
        assert not (tmp_path / "run" / h / "output" / "failure").exists()
    assert "the data service is shutting down" in log, log
    assert leftover_processes(tmp_path / "run") == []
    # The package's client monitored the script's steps (CTRAIN_MONITOR_DIR): no loss, which ctrain never
    # sees, and `ctrain report` gives the job's price-performance table and verdict as for ctrain's trainer.
    mon = trainer / "output" / "data" / "monitor" / "algo-3" / "trainer" / "metrics.jsonl"
    steps = [j for j in map(json.loads, mon.read_text().splitlines()) if j["kind"] == "train"]
    assert len(steps) == 3 * 32 - 1, steps  # a line per step: 3 epochs of 32 batches in one loop, the first no step
    assert all(j["values"]["train/examples_per_sec"] > 0 and "train/loss" not in j["values"] for j in steps), steps
    rep = subprocess.run([ctrain_cli, "report", str(tmp_path / "run"), "--prices", str(REPO / "examples" / "prices.toml"),
                          "--output-dir", str(tmp_path / "rep")], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "| train | ml.g5.xlarge | 1 | trainer |" in rep.stdout, rep.stdout
    assert "| data | ml.c5.xlarge | 2 | data-worker+dispatcher |" in rep.stdout, rep.stdout
    cluster = re.search(r"Cluster: \$([0-9.]+) per hour, ([0-9]+) examples/s, \$([0-9.]+) per million examples",
                        rep.stdout)
    assert cluster and float(cluster[1]) == pytest.approx(2 * 0.204 + 1.408, abs=1e-3), rep.stdout
    assert int(cluster[2]) > 0 and float(cluster[3]) > 0, rep.stdout
    assert re.search(r"Verdict: (compute|input)-bound: the trainer waits", rep.stdout), rep.stdout


FAILING = """import os, sys
import ctrain
batches = ctrain.DataService.from_env().pipeline(os.environ["CTRAIN_DATA_SERVICE_TRAIN"], batch_size=100,
                                                 format="libsvm", id_base=1, feature_size=921)
n = sum(len(b.labels) for b in batches)
print("read", n, "rows", flush=True)
raise ValueError(f"no positive label in {n} rows")
"""


@pytest.mark.slow  # ~15 s
def test_a_failing_script_fails_the_job_with_its_reason_and_every_data_host_exits(ctrain_cli, va10k_split, tmp_path):
    train, valid = va10k_split
    script = tmp_path / "fails.py"
    script.write_text(FAILING)
    r = launch(ctrain_cli, tmp_path, spec(tmp_path, train, valid, {"lr": 0.1}), script)
    log = r.stdout + r.stderr
    assert r.returncode != 0, log
    assert "read 8000 rows" in log, log  # it ran, through the data service
    failure = (tmp_path / "run" / "algo-3" / "output" / "failure").read_text()
    assert failure.startswith("algo-3 fails.py exited with status 1: ValueError: no positive label in 8000 rows"), failure
    assert leftover_processes(tmp_path / "run") == []


RANKS = """import json, os
rank = os.environ["OMPI_COMM_WORLD_RANK"]
keep = {k: v for k, v in os.environ.items() if k.startswith(("SM_", "CTRAIN_", "OMPI_COMM_WORLD_"))}
with open(os.path.join(os.environ["SM_OUTPUT_DATA_DIR"], f"rank{rank}.json"), "w") as f:
    json.dump(dict(keep, cwd=os.getcwd()), f)
"""


def test_a_script_runs_under_mpirun_with_processes_per_host(ctrain_cli, tmp_path):
    """distribution mpi processes_per_host 2 on one host: mpirun starts the script twice, each rank with the
    job's variables (mpirun -x, as the toolkit's MPI runner) and the hyperparameters as arguments."""
    script = tmp_path / "ranks.py"
    script.write_text(RANKS)
    data = tmp_path / "tr.libsvm"
    subprocess.run([ctrain_cli, "synth", "--rows", "50", "--format", "libsvm", "-o", str(data)], check=True,
                   capture_output=True, timeout=60)
    job = tmp_path / "job.toml"
    job.write_text(f"""[[group]]
name = "train"
instance_type = "ml.m5.xlarge"
count = 1

[hyperparameters]
sagemaker_mpi_enabled = "true"
sagemaker_mpi_num_of_processes_per_host = "2"
lr = "0.5"

[channels.train]
mode = "File"
files = ["{data}"]
""")
    r = launch(ctrain_cli, tmp_path, job, script)
    log = r.stdout + r.stderr
    if "built without MPI" in log:
        pytest.skip("this ctrain has no MPI")
    assert r.returncode == 0, log
    out = tmp_path / "run" / "algo-1" / "output" / "data"
    ranks = [json.loads((out / f"rank{k}.json").read_text()) for k in range(2)]
    for k, env in enumerate(ranks):
        assert env["OMPI_COMM_WORLD_RANK"] == str(k) and env["OMPI_COMM_WORLD_SIZE"] == "2"
        assert env["OMPI_COMM_WORLD_LOCAL_RANK"] == str(k)
        assert env["SM_HP_LR"] == "0.5" and env["SM_USER_ARGS"] == '["--lr","0.5"]'
        assert env["SM_CHANNEL_TRAIN"] == str(tmp_path / "run" / "algo-1" / "input" / "data" / "train")
        assert env["SM_CURRENT_HOST"] == "algo-1" and env["CTRAIN_TRAINING_JOB_NAME"]
    assert " -x SM_HPS " in log and " -np 2 " in log, log
    assert leftover_processes(tmp_path / "run") == []
