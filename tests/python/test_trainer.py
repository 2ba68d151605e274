"""ctrain.Trainer: fit / evaluate / predict over the job layer, checkpoints shared with the CLI."""

import json
import subprocess

import numpy as np
import pytest

import ctrain

from conftest import VA10K

# A small model: seconds on one core (the real configuration is the slow test below).
SMALL = dict(feature_size=921, field_size=39, id_base=1, embedding_size=8, deep_layers=[32, 32], dropout=0.0,
             batch_size=256, epochs=2, learning_rate=0.002, progress="none", intra_op_parallelism_threads=1,
             shuffle_buffer_size=1000)


def cli_args(options):
    args = []
    for k, v in options.items():
        flag = "--" + k.replace("_", "-")
        if isinstance(v, list):
            v = ",".join(map(str, v))
        args += [flag, str(v).lower() if isinstance(v, bool) else str(v)]
    return args


def test_fit_equals_the_cli_and_checkpoints_go_both_ways(cli, va10k_split, tmp_path):
    tr, va = va10k_split
    # Python trains; the CLI evaluates and predicts from its model dir.
    t = ctrain.Trainer(model_dir=tmp_path / "py", **SMALL)
    logs = t.fit(tr, valid=va)
    assert logs["steps"] == 2 * 32 and logs["examples"] == 2 * 8000 and logs["valid_examples"] == 2040
    assert 0.6 < logs["auc"] < 1
    m = tmp_path / "m.json"
    r = subprocess.run([cli, "eval", "--model-dir", str(tmp_path / "py"), "--input", str(va), "--metrics-json", str(m)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli_eval = json.loads(m.read_text())
    ev = t.evaluate(va)
    assert ev["examples"] == 2040
    assert ev["auc"] == pytest.approx(cli_eval["auc"], abs=1e-6)
    assert ev["auc"] == pytest.approx(logs["auc"], abs=1e-6)
    out = tmp_path / "p.txt"
    r = subprocess.run([cli, "predict", "--model-dir", str(tmp_path / "py"), "--input", str(va), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    p_cli = np.loadtxt(out, dtype=np.float32)
    p_py = t.predict(va)
    assert p_py.shape == (2040,)
    np.testing.assert_allclose(p_py, p_cli, atol=1e-6)
    # predict from arrays (ids as the model sees them): the same probabilities.
    b = ctrain.read(va, **VA10K)
    np.testing.assert_allclose(t.predict((b.ids, b.values)), p_cli, atol=1e-6)

    # The CLI trains with the same options; Python's result is the same run's.
    cli_dir = tmp_path / "cli"
    m2 = tmp_path / "m2.json"
    r = subprocess.run([cli, "train", "--train", str(tr), "--valid", str(va), "--model-dir", str(cli_dir),
                        "--metrics-json", str(m2)] + cli_args(SMALL), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli_train = json.loads(m2.read_text())
    assert cli_train["auc"] == pytest.approx(logs["auc"], abs=1e-6)
    # ... and Python reads the CLI's checkpoint, and resumes it.
    t2 = ctrain.Trainer(model_dir=cli_dir, **dict(SMALL, epochs=3))
    assert t2.evaluate(va)["auc"] == pytest.approx(cli_train["auc"], abs=1e-6)
    logs3 = t2.fit(tr, valid=va)
    assert logs3["restored"] and logs3["steps"] == 3 * 32 and logs3["steps_this_run"] == 32


def test_trainer_option_errors(va10k_split, tmp_path):
    tr, _ = va10k_split
    with pytest.raises(TypeError, match="did you mean 'learning_rate'"):
        ctrain.Trainer(learning_rat=0.1)
    with pytest.raises(TypeError, match="give the data to fit"):
        ctrain.Trainer(train=str(tr))
    with pytest.raises(ValueError, match="^InvalidArgument: unknown optimizer .nope."):
        ctrain.Trainer(model_dir=tmp_path / "x", optimizer="nope", **VA10K).fit(tr)
    bad = tmp_path / "bad.libsvm"
    bad.write_text("1 1:1\n")
    with pytest.raises(ValueError, match=r"bad\.libsvm:1:"):
        ctrain.Trainer(model_dir=tmp_path / "y", **dict(SMALL, epochs=1)).fit(bad)


@pytest.mark.slow
def test_fit_on_the_real_split_reaches_the_cli_auc(cli, va10k_split, tmp_path):
    """The acceptance configuration (tests/train/acceptance_test.cc): K=32, 400-400-400,
    dropout 0.5, Adam 5e-4, batch 256, 5 epochs; the CLI's AUC (>= 0.72)."""
    tr, va = va10k_split
    real = dict(VA10K, embedding_size=32, deep_layers="400,400,400", dropout=0.5, learning_rate=5e-4,
                batch_size=256, epochs=5, progress="none")
    with ctrain.Trainer(**real) as t:
        logs = t.fit(ctrain.Pipeline(str(tr), **VA10K), valid=va)
    m = tmp_path / "m.json"
    r = subprocess.run([cli, "train", "--train", str(tr), "--valid", str(va), "--model-dir", str(tmp_path / "c"),
                        "--metrics-json", str(m)] + cli_args(real), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli_auc = json.loads(m.read_text())["auc"]
    print(f"Trainer.fit valid auc {logs['auc']:.5f}, ctrain train valid auc {cli_auc:.5f}")
    assert logs["auc"] >= 0.72 and cli_auc >= 0.72
    assert logs["auc"] == pytest.approx(cli_auc, abs=2e-3)


def test_trainer_option_values_are_checked_at_construction(tmp_path):
    # Once accepted here and refused only by fit(); now the CLI's parser checks them at once.
    with pytest.raises(ValueError, match=r"^InvalidArgument: .*--learning-rate.*abc"):
        ctrain.Trainer(model_dir=tmp_path / "x", learning_rate="abc")
    with pytest.raises(ValueError, match="--epochs"):
        ctrain.Trainer(model_dir=tmp_path / "x", epochs="two")
    assert not (tmp_path / "x").exists()
    t = ctrain.Trainer(model_dir=tmp_path / "x", learning_rate="0.01")
    assert t.options["learning_rate"] == "0.01"


def test_fit_with_a_feature_spec_on_deepctr_tfrecords(shared_data, cli, tmp_path):
    """Trainer(feature_spec=...) reads tf.Example TFRecords through a spec (the DeepCTR
    export: C1..C26 int64, I1..I13 float); evaluate/predict read them through the spec the
    checkpoint keeps."""
    spec = tmp_path / "spec.json"
    subprocess.run([cli, "inspect", str(shared_data / "criteo_deepctr_tr.tfrecords"), "--suggest-spec", str(spec)],
                   check=True, capture_output=True)
    assert len(json.loads(spec.read_text())["fields"]) == 39
    t = ctrain.Trainer(model_dir=tmp_path / "m", feature_spec=spec, embedding_size=4, deep_layers=[16],
                       batch_size=32, epochs=2, progress="none", intra_op_parallelism_threads=1)
    logs = t.fit(shared_data / "criteo_deepctr_tr.tfrecords", valid=shared_data / "criteo_deepctr_te.tfrecords")
    assert logs["examples"] == 320 and logs["steps"] == 10 and logs["valid_examples"] == 40
    ev = t.evaluate(shared_data / "criteo_deepctr_te.tfrecords")
    assert ev["examples"] == 40 and 0.0 <= ev["auc"] <= 1.0
    assert ev["logloss"] == pytest.approx(logs["logloss"], rel=1e-6)
    p = t.predict(shared_data / "criteo_deepctr_te.tfrecords")
    assert p.shape == (40,) and np.all((p > 0) & (p < 1))
    # The CLI reads the same model the same way.
    out = subprocess.run([cli, "eval", "--model-dir", str(tmp_path / "m"), "--input",
                          str(shared_data / "criteo_deepctr_te.tfrecords")], check=True, capture_output=True, text=True)
    assert f"logloss {ev['logloss']:.6f}" in out.stdout
