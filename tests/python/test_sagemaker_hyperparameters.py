"""`ctrain launch` on hyperparameters.json as the real SageMaker Python SDK (v2) writes it.

The SDK's framework estimators JSON-encode every value
(sagemaker.estimator.EstimatorBase._json_encode_hyperparameters: json.dumps per value); the
launcher decodes them as the SageMaker training toolkit does (json.loads, else the raw string)
and maps them onto `ctrain train` flags (src/ctrain/launch/hyperparameters.h, docs/launch.md).
Checked here: the launched training equals `ctrain train` given the same flags by hand (the same
metrics, bit for bit: training is deterministic), and the toolkit reading the same /opt/ml tree
(SAGEMAKER_BASE_DIR) decodes the same values as ctrain.

Test-only dependencies: `sagemaker<3` and `sagemaker-training` (scripts/install-deps.sh).
The CLI: $CTRAIN_CLI when set (as ctrain.cli_path() honours it), else the installed package's."""

import json
import os
import subprocess
import sys

import pytest

estimator = pytest.importorskip(
    "sagemaker.estimator", reason="the SageMaker Python SDK is not installed (scripts/install-deps.sh installs it)"
)
pytest.importorskip(
    "sagemaker_training", reason="the SageMaker training toolkit is not installed (scripts/install-deps.sh installs it)"
)

# What a user passes to a framework estimator (hyperparameters={...}); the last two are the
# platform's (a tuning job's objective, the SDK's script-mode key).
USER_HPS = {
    "epochs": 2,
    "optimizer": "adam",
    "learning_rate": 0.001,
    "deep_layers": [32, 32],
    "batch_size": 64,
    "embedding_size": 4,
    "batch_norm": True,
    "shuffle": False,
    "seed": 7,
    "intra_op_parallelism_threads": 1,
    "progress": "none",
    "_tuning_objective_metric": "validation:auc",
    "sagemaker_region": "us-east-1",
}
# The same run as `ctrain train` flags, written by hand (not derived from the launcher).
TRAIN_FLAGS = [
    "--epochs", "2", "--optimizer", "adam", "--learning-rate", "0.001", "--deep-layers", "32,32",
    "--batch-size", "64", "--embedding-size", "4", "--batch-norm", "--shuffle", "false", "--seed", "7",
    "--intra-op-parallelism-threads", "1", "--progress", "none",
]
DECODED_PREFIX = "ctrain: launch: hyperparameters (decoded as the SageMaker training toolkit does): "


def run(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    assert p.returncode == 0, f"{args} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def job(ctrain_cli, tmp_path_factory):
    """A one-host /opt/ml tree with the SDK-encoded hyperparameters, launched; and the same run
    as plain `ctrain train`."""
    d = tmp_path_factory.mktemp("sm")
    tr, va = d / "tr.libsvm", d / "va.libsvm"
    run([ctrain_cli, "synth", "--rows", "3000", "--format", "libsvm", "-o", str(tr)])
    run([ctrain_cli, "synth", "--rows", "1000", "--row-offset", "3000", "--format", "libsvm", "-o", str(va)])

    encoded = estimator.EstimatorBase._json_encode_hyperparameters(USER_HPS)
    # The SDK's encoding, as documented in hyperparameters.h (json.dumps of each value).
    assert encoded["optimizer"] == '"adam"' and encoded["deep_layers"] == "[32, 32]"
    assert encoded["batch_norm"] == "true" and encoded["epochs"] == "2" and encoded["learning_rate"] == "0.001"

    root = d / "ml"
    cfg = root / "input" / "config"
    cfg.mkdir(parents=True)
    (cfg / "hyperparameters.json").write_text(json.dumps(encoded))
    (cfg / "resourceconfig.json").write_text(
        json.dumps({"current_host": "algo-1", "hosts": ["algo-1"], "network_interface_name": "eth0"})
    )
    channel = {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}
    (cfg / "inputdataconfig.json").write_text(json.dumps({"train": channel, "validation": channel}))
    for name, f in (("train", tr), ("validation", va)):
        (root / "input" / "data" / name).mkdir(parents=True)
        os.link(f, root / "input" / "data" / name / f.name)

    launched = run([ctrain_cli, "launch", "--sm-root", str(root)])
    local_metrics = d / "local.json"
    run([ctrain_cli, "train", "--train", str(tr), "--valid", str(va), *TRAIN_FLAGS,
         "--model-dir", str(d / "local_model"), "--metrics-json", str(local_metrics)])
    return dict(root=root, log=launched.stderr, encoded=encoded,
                launched=json.loads((root / "output" / "data" / "metrics.json").read_text()),
                local=json.loads(local_metrics.read_text()))


def decoded_by_ctrain(log):
    lines = [line for line in log.splitlines() if line.startswith(DECODED_PREFIX)]
    assert len(lines) == 1, log
    return json.loads(lines[0][len(DECODED_PREFIX):])


def test_launch_trains_as_ctrain_train_with_the_same_flags(job):
    launched, local = job["launched"], job["local"]
    assert isinstance(local["logloss"], float) and isinstance(local["auc"], float), local  # validated
    for key in ("auc", "logloss", "train_loss", "examples", "steps", "epochs", "intra_op_parallelism_threads"):
        assert key in local, local
        assert launched[key] == local[key], (key, launched, local)  # bit-identical
    assert local["epochs"] == 2 and local["examples"] == 6000 and local["intra_op_parallelism_threads"] == 1
    # The effective command line is printed, with the decoded values.
    trainer = [line for line in job["log"].splitlines() if line.startswith("ctrain: launch: algo-1: trainer: ")]
    assert len(trainer) == 1, job["log"]
    for flag in ("--epochs=2", "--optimizer=adam", "--learning-rate=0.001", "--deep-layers=32,32", "--batch-size=64",
                 "--batch-norm=true", "--shuffle=false", "--progress=none"):
        assert f" {flag}" in trainer[0], (flag, trainer[0])
    assert "sagemaker_region" not in trainer[0] and "tuning" not in trainer[0]
    # The platform keys: skipped, counted, named.
    assert ("ctrain: launch: skipped 2 platform hyperparameter(s) (SageMaker's own, no ctrain train flags): "
            "_tuning_objective_metric, sagemaker_region") in job["log"]


def test_the_training_toolkit_decodes_the_tree_as_ctrain_does(job):
    script = (
        "import json, sys\n"
        "from sagemaker_training import environment\n"
        "env = environment.Environment()\n"
        "sys.stdout.write('\\nTOOLKIT ' + json.dumps({'all': environment.read_hyperparameters(),"
        " 'user': env.hyperparameters, 'base_dir': environment.base_dir}) + '\\n')\n"
    )
    env = dict(os.environ, SAGEMAKER_BASE_DIR=str(job["root"]), AWS_DEFAULT_REGION="us-east-1")
    p = run([sys.executable, "-c", script], env=env)
    out = json.loads([line for line in p.stdout.splitlines() if line.startswith("TOOLKIT ")][-1][len("TOOLKIT "):])
    assert out["base_dir"] == str(job["root"])
    ours = decoded_by_ctrain(job["log"])
    assert out["all"] == ours
    # ... which is the user's dict itself (the encoding round-trips).
    assert ours == USER_HPS
    # The toolkit's user hyperparameters (platform keys split off) are exactly the ones ctrain
    # turns into flags.
    assert out["user"] == {k: v for k, v in USER_HPS.items() if not k.startswith(("sagemaker_", "_"))}
    trainer = [line for line in job["log"].splitlines() if line.startswith("ctrain: launch: algo-1: trainer: ")][0]
    hp_flags = {a.split("=", 1)[0] for a in trainer.split() if a.startswith("--")} - {
        "--train", "--valid", "--model-dir", "--metrics-json", "--monitor-dir", "--monitor-interval-ms"}
    assert hp_flags == {"--" + k.replace("_", "-") for k in out["user"]}


TYPED_PREFIX = "ctrain: launch: training options from the hyperparameters (typed as ctrain train reads them): "


def test_the_typed_options_are_the_toolkits_user_hyperparameters(job):
    """The option schema's types give back exactly the values the SDK's user wrote (what the
    training toolkit hands a script as env.hyperparameters), and the Python Trainer reads the same
    values into the same effective options (ctrain.option_schema() names every key)."""
    import ctrain

    lines = [line for line in job["log"].splitlines() if line.startswith(TYPED_PREFIX)]
    assert len(lines) == 1, job["log"]
    typed = json.loads(lines[0][len(TYPED_PREFIX):])
    user = {k: v for k, v in USER_HPS.items() if not k.startswith(("sagemaker_", "_"))}
    assert typed == user
    names = {d["name"] for d in ctrain.option_schema()}
    assert set(user) <= names
    ctrain.Trainer(**user).close()  # the same typed values are valid Trainer options
