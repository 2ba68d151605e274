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


# ---- fit(Pipeline): every setting given to the Pipeline is used, or refused by name ------------------

# SMALL without the data settings the tests below give to the Pipeline instead.
BARE = {k: v for k, v in SMALL.items() if k not in ("batch_size", "epochs", "shuffle_buffer_size")}


def test_fit_trains_with_the_pipelines_batch_size_epochs_and_drop_remainder(va10k_split, tmp_path):
    tr, _ = va10k_split  # 8000 rows
    with ctrain.Trainer(model_dir=tmp_path / "a", **BARE) as t:
        logs = t.fit(ctrain.Pipeline(tr, batch_size=64, epochs=3, shuffle_buffer=500, **VA10K))
    assert logs["steps"] == -(-8000 // 64) * 3 == 375 and logs["examples"] == 3 * 8000
    inp = logs["input"]
    assert (inp["batch_size"], inp["epochs"], inp["shuffle"], inp["shuffle_buffer_size"]) == (64, 3, True, 500)
    assert inp["format"] == "libsvm" and inp["id_base"] == 1
    # drop_remainder: 8000 rows in batches of 3000 are 2 full batches per epoch (not 3).
    with ctrain.Trainer(model_dir=tmp_path / "b", **BARE) as t:
        logs = t.fit(ctrain.Pipeline(tr, batch_size=3000, drop_remainder=True, epochs=2, **VA10K))
    assert logs["steps"] == 4 and logs["examples"] == 4 * 3000 and logs["input"]["drop_remainder"] is True
    # num_shards / shard_index (one file: every 2nd record) and cache.
    with ctrain.Trainer(model_dir=tmp_path / "s", **BARE) as t:
        logs = t.fit(ctrain.Pipeline(tr, batch_size=500, epochs=2, num_shards=2, shard_index=1, cache="memory",
                                     **VA10K))
    assert logs["examples"] == 2 * 4000 and logs["steps"] == 2 * 8
    assert (logs["input"]["num_shards"], logs["input"]["shard_index"], logs["input"]["cache"]) == (2, 1, "memory")
    # Settings with no `ctrain train` flag reach the run's pipeline too.
    with ctrain.Trainer(model_dir=tmp_path / "c", **BARE) as t:
        order = "shard,interleave,shuffle,batch,parse,repeat,prefetch"  # no cache stage
        logs = t.fit(ctrain.Pipeline(tr, batch_size=1000, deterministic=False, order=order, count_shard_records=True,
                                     **VA10K))
    inp = logs["input"]
    assert logs["steps"] == 8 and inp["order"] == order and inp["count_shard_records"] is True
    assert inp["pipeline_deterministic"] is False


def test_fit_takes_the_pipelines_shuffle_settings(va10k_split, tmp_path):
    tr, _ = va10k_split
    one = dict(BARE, batch_size=256, epochs=1)
    runs = {}
    for name, trainer, data in [
        ("trainer_noshuffle", dict(one, shuffle=False), tr),
        ("pipeline_noshuffle", one, ctrain.Pipeline(tr, shuffle_buffer=0, **VA10K)),
        ("pipeline_shuffle", one, ctrain.Pipeline(tr, shuffle_buffer=1000, **VA10K)),
        ("trainer_shuffle", dict(one, shuffle_buffer_size=1000), tr),
        ("pipeline_shuffle_seed", one, ctrain.Pipeline(tr, shuffle_buffer=1000, seed=7, **VA10K)),
        ("trainer_shuffle_seed", dict(one, shuffle_buffer_size=1000, seed=7), tr),
        ("pipeline_no_reshuffle", dict(one, epochs=2), ctrain.Pipeline(tr, shuffle_buffer=1000,
                                                                       reshuffle_each_iteration=False, **VA10K)),
        ("trainer_no_reshuffle", dict(one, epochs=2, shuffle_buffer_size=1000, reshuffle_each_iteration=False), tr),
    ]:
        with ctrain.Trainer(model_dir=tmp_path / name, **trainer) as t:
            runs[name] = t.fit(data)
    # Pipeline(shuffle_buffer=0) trains exactly as Trainer(shuffle=False), and differs from shuffling.
    assert runs["pipeline_noshuffle"]["input"]["shuffle"] is False
    assert runs["pipeline_noshuffle"]["input"]["shuffle_buffer_size"] == 0
    assert runs["pipeline_noshuffle"]["loss"] == runs["trainer_noshuffle"]["loss"]
    assert runs["pipeline_shuffle"]["loss"] != runs["pipeline_noshuffle"]["loss"]
    # shuffle_buffer, seed, reshuffle_each_iteration: the same run as the Trainer options.
    assert runs["pipeline_shuffle"]["input"]["shuffle_buffer_size"] == 1000
    assert runs["pipeline_shuffle"]["loss"] == runs["trainer_shuffle"]["loss"]
    assert runs["pipeline_shuffle_seed"]["input"]["seed"] == 7
    assert runs["pipeline_shuffle_seed"]["loss"] == runs["trainer_shuffle_seed"]["loss"]
    assert runs["pipeline_shuffle_seed"]["loss"] != runs["pipeline_shuffle"]["loss"]
    assert runs["pipeline_no_reshuffle"]["input"]["reshuffle_each_iteration"] is False
    assert runs["pipeline_no_reshuffle"]["loss"] == runs["trainer_no_reshuffle"]["loss"]


def test_fit_refuses_a_pipeline_setting_that_disagrees_with_the_trainer(va10k_split, tmp_path):
    tr, va = va10k_split
    t = ctrain.Trainer(model_dir=tmp_path / "m", **SMALL)  # batch_size=256, epochs=2, shuffle_buffer_size=1000
    cases = [
        (dict(batch_size=64), r"Trainer\(batch_size=256\) and Pipeline\(batch_size=64\) disagree: give batch_size once"),
        (dict(epochs=3), r"Trainer\(epochs=2\) and Pipeline\(epochs=3\) disagree"),
        (dict(shuffle_buffer=50), r"Trainer\(shuffle_buffer_size=1000\) and Pipeline\(shuffle_buffer=50\) disagree"),
        (dict(shuffle_buffer=0), r"Trainer\(shuffle_buffer_size=1000\) and Pipeline\(shuffle_buffer=0\) disagree"),
        (dict(id_base=0), r"Trainer\(id_base=1\) and Pipeline\(id_base=0\) disagree: give id_base once"),
        (dict(epochs=-1), r"Pipeline\(epochs=-1\) \(repeat forever\) cannot reach the trainer"),
    ]
    for settings, message in cases:
        with pytest.raises(ValueError, match=message):
            t.fit(ctrain.Pipeline(tr, **settings))
    # Equal values agree; "auto" is the same as not giving format.
    t2 = ctrain.Trainer(model_dir=tmp_path / "m2", **dict(SMALL, epochs=1, shuffle=False))
    with pytest.raises(ValueError, match=r"Trainer\(shuffle=False\) and Pipeline\(shuffle_buffer=10\) disagree"):
        t2.fit(ctrain.Pipeline(tr, shuffle_buffer=10))
    logs = t2.fit(ctrain.Pipeline(tr, batch_size=256, shuffle_buffer=0, format="auto", field_size=39, id_base=1))
    assert logs["steps"] == 32
    # A value from the Trainer's config file counts as set.
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"batch_size": 128}))
    t3 = ctrain.Trainer(model_dir=tmp_path / "m3", config=cfg, **BARE)
    with pytest.raises(ValueError, match=r"Trainer\(batch_size=128 from config .*c\.json'\) and Pipeline\(batch_size=64\)"):
        t3.fit(ctrain.Pipeline(tr, batch_size=64))
    # valid=, evaluate and predict read every example in order: a Pipeline there gives files and reader options.
    with pytest.raises(ValueError, match=r"fit\(valid=\): Pipeline\(batch_size=64\) cannot apply"):
        t.fit(tr, valid=ctrain.Pipeline(va, batch_size=64))
    with pytest.raises(ValueError, match=r"training data's id_base=1 .* and Pipeline\(id_base=0\) disagree"):
        t.fit(tr, valid=ctrain.Pipeline(va, id_base=0))
    with pytest.raises(ValueError, match=r"evaluate: Pipeline\(num_shards=2, shard_index=1\) cannot apply"):
        t.evaluate(ctrain.Pipeline(va, num_shards=2, shard_index=1))
    with pytest.raises(ValueError, match=r"Trainer\(id_base=1\) and Pipeline\(id_base=0\) disagree"):
        t.predict(ctrain.Pipeline(va, id_base=0))
    assert not (tmp_path / "m" / "checkpoint").exists()  # nothing ran


def test_fit_refuses_pipeline_settings_the_run_cannot_use(va10k_split, tmp_path):
    tr, _ = va10k_split
    mem = ctrain.Trainer(model_dir=tmp_path / "m", input_mode="memory", **BARE)
    with pytest.raises(ValueError, match=r"Pipeline\(num_parallel_reads=2, prefetch=4\) cannot reach the training run: "
                                         r"Trainer\(input_mode='memory'\)"):
        mem.fit(ctrain.Pipeline(tr, num_parallel_reads=2, prefetch=4, **VA10K))
    with pytest.raises(ValueError, match=r"Pipeline\(shuffle_buffer=100\) cannot reach"):
        mem.fit(ctrain.Pipeline(tr, shuffle_buffer=100, **VA10K))
    # What memory mode does use: batch size, epochs, no shuffling.
    logs = mem.fit(ctrain.Pipeline(tr, batch_size=1000, epochs=1, shuffle_buffer=0, **VA10K))
    assert logs["steps"] == 8 and logs["input"]["shuffle"] is False
    with pytest.raises(ValueError, match=r"Pipeline\(prefetch=4\) cannot reach the training run: the trainer replays a cache"):
        ctrain.Trainer(model_dir=tmp_path / "c", **BARE).fit(ctrain.Pipeline(tr, cache="memory", prefetch=4, **VA10K))
    # Through a data service (refused before it is called): the workers shard and parse themselves.
    remote = ctrain.Trainer(model_dir=tmp_path / "d", data_service="127.0.0.1:1", **BARE)
    with pytest.raises(ValueError, match=r"Pipeline\(num_shards=2, shard_index=0\) cannot reach the training run: "
                                         r"with Trainer\(data_service=...\)"):
        remote.fit(ctrain.Pipeline(tr, num_shards=2, shard_index=0, **VA10K))
    svc = ctrain.DataService("127.0.0.1:1")
    with pytest.raises(TypeError, match="DataServicePipeline cannot be given to the Trainer"):
        mem.fit(svc.pipeline([str(tr)]))


def test_pipeline_options_names_and_aliases(va10k_split):
    tr, _ = va10k_split
    # PipelineOptions names given as such are used (they were overwritten by the keywords' defaults).
    p = ctrain.Pipeline(tr, shuffle_buffer_size=7, prefetch_buffer_size=3, shuffle_seed=5, **VA10K)
    assert (p._pipeline["shuffle_buffer_size"], p._pipeline["prefetch_buffer_size"], p._pipeline["shuffle_seed"]) == (7, 3, 5)
    assert set(p._given) >= {"shuffle_buffer_size", "prefetch_buffer_size", "shuffle_seed", "id_base"}
    assert "batch_size" not in p._given
    with pytest.raises(TypeError, match="shuffle_buffer and shuffle_buffer_size are the same option"):
        ctrain.Pipeline(tr, shuffle_buffer=1, shuffle_buffer_size=2)


def test_options_are_typed_values_read_through_the_option_schema(tmp_path):
    """Trainer(**options) passes typed values (tuples, numpy scalars, paths) through the option schema,
    not flag strings; a value of the wrong type is a ValueError naming the option, before fit()."""
    schema = {d["name"]: d for d in ctrain.option_schema()}
    assert schema["deep_layers"]["type"] == "int list" and schema["deep_layers"]["default"] == [400, 400, 400]
    assert schema["batch_size"]["default"] == 256 and schema["batch_size"]["unit"] == "examples"
    assert "memory" not in schema["shuffle_buffer_size"]["modes"].split("|")
    assert "stream" in schema["shuffle_buffer_size"]["modes"].split("|")
    assert schema["lr_scaling"]["needs"] == "mpirun"
    t = ctrain.Trainer(deep_layers=(8, 4), learning_rate=np.float32(0.01), batch_size=np.int64(64),
                       model_dir=tmp_path / "m")
    t.close()
    with pytest.raises(ValueError, match="--batch-size: expected a whole number, got 2.5"):
        ctrain.Trainer(batch_size=2.5)
    with pytest.raises(ValueError, match="--deep-layers: expected positive whole numbers"):
        ctrain.Trainer(deep_layers=[8, 0])


def test_an_option_the_mode_cannot_honour_is_refused_by_name(tmp_path):
    """input_mode="memory" does not run the input pipeline: its options are refused, naming option and mode."""
    t = ctrain.Trainer(input_mode="memory", shuffle_buffer_size=10, field_size=4, feature_size=64,
                       embedding_size=4, deep_layers=[8], progress="none", model_dir=tmp_path / "m")
    f = tmp_path / "tr.libsvm"
    f.write_text("".join(f"{i % 2} {1 + i % 2}:1 {10 + i % 7}:1 {20 + i % 5}:1 {30 + i % 3}:1\n" for i in range(64)))
    with pytest.raises(ValueError, match="--shuffle-buffer-size is not supported with local memory"):
        t.fit([str(f)])
    t.close()


def test_every_option_of_the_schema_is_a_trainer_keyword_argument():
    """The Python front end of the option matrix: every option of the schema (but the data, which
    fit() takes) is a typed keyword argument; its default given explicitly is accepted as it is."""
    for d in ctrain.option_schema():
        if d["name"] in ("train", "valid", "config"):
            continue
        value = d["default"]
        if value == "" or value == []:
            continue  # "not set"; a value of its own is probed by the C++ matrix (same path)
        ctrain.Trainer(**{d["name"]: value}).close()
        for alias in d["aliases"]:
            ctrain.Trainer(**{alias: value}).close()
    with pytest.raises(TypeError, match="give the data to fit"):
        ctrain.Trainer(train=["a.libsvm"])


# Every model kind from Python (issue #22): `model=` and its own options as typed keyword arguments; the
# checkpoint records the kind, and the CLI evaluates it to the same AUC.
ZOO = {
    "lr": dict(),
    "fm": dict(embedding_size=8),
    "wide_deep": dict(embedding_size=8, deep_layers=[32, 32], dropout=0.0),
    "dcn": dict(embedding_size=8, deep_layers=[32, 32], dropout=0.0, cross_layers=2),
    "dcn_v2": dict(embedding_size=8, deep_layers=[32], dropout=0.0, cross_layers=2, low_rank=8, num_experts=2,
                   model_structure="stacked"),
    "dlrm": dict(embedding_size=8, dropout=0.0, num_dense_fields=13, bottom_mlp=[32], top_mlp=[32]),
    "xdeepfm": dict(embedding_size=8, deep_layers=[32], dropout=0.0, cin_layer_units=[8, 8]),
}


@pytest.mark.parametrize("kind", sorted(ZOO))
def test_every_model_kind_trains_from_python(kind, cli, va10k_split, tmp_path):
    tr, va = va10k_split
    base = {k: v for k, v in SMALL.items() if k not in ("embedding_size", "deep_layers", "dropout")}
    t = ctrain.Trainer(model=kind, model_dir=tmp_path / kind, max_steps=40, **base, **ZOO[kind])
    logs = t.fit(tr, valid=va)
    assert logs["steps"] == 40
    assert 0.55 < logs["auc"] < 1, logs
    m = tmp_path / "m.json"
    r = subprocess.run([cli, "eval", "--model-dir", str(tmp_path / kind), "--input", str(va), "--metrics-json",
                        str(m)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(m.read_text())["auc"] == pytest.approx(logs["auc"], abs=1e-6)
    # Another kind's option is refused by name.
    with pytest.raises(ValueError, match="--cin-layer-units applies to --model xdeepfm"):
        ctrain.Trainer(model=kind if kind != "xdeepfm" else "lr", cin_layer_units=[4], **base).fit(tr)


# The tables' start (issue #22): FuxiCTR's normal(1e-4) for the categorical rows and a start of their own for the
# numeric fields' rows change what trains; the checkpoint records both; a bad spelling is a ValueError naming it.
def test_embedding_initializers_from_python(va10k_split, tmp_path):
    tr, va = va10k_split
    default = ctrain.Trainer(model_dir=tmp_path / "glorot", max_steps=30, **SMALL).fit(tr, valid=va)
    t = ctrain.Trainer(model_dir=tmp_path / "normal", max_steps=30, embedding_initializer="normal:1e-4",
                       num_dense_fields=13, numeric_embedding_initializer="normal:0.05", **SMALL)
    logs = t.fit(tr, valid=va)
    assert logs["steps"] == 30 and 0.55 < logs["auc"] < 1, logs
    assert logs["auc"] != default["auc"]
    meta = ctrain.inspect(tmp_path / "normal")[0]["meta"]
    assert meta["model"]["embedding_initializer"] == "normal:1e-4"
    assert meta["model"]["numeric_embedding_initializer"] == "normal:0.05"
    assert meta["model"]["num_dense_fields"] == 13
    with pytest.raises(ValueError, match="embedding_initializer 'normal:0': the scale must be finite and > 0"):
        ctrain.Trainer(embedding_initializer="normal:0", max_steps=1, **SMALL).fit(tr)
    with pytest.raises(ValueError, match="numeric field 0"):  # va10k's numeric fields carry ids 1..13 (id_base 0)
        ctrain.Trainer(num_dense_fields=13, numeric_embedding_initializer="normal:0.05", max_steps=1,
                       **{**SMALL, "id_base": 0, "feature_size": 1000}).fit(tr)


def test_oov_bucket_from_python(va10k_split, tmp_path):
    """--oov bucket through the Python Trainer: a vocabulary of the first 600 ids trains on data whose ids reach
    921 (each field's unknown ids read its own row; the tables have 600 + 39 rows); --oov error stops naming the
    record and the way out."""
    tr, va = va10k_split
    opts = dict(SMALL, feature_size=600, max_steps=20)
    r = ctrain.Trainer(model_dir=tmp_path / "oov", oov="bucket", **opts).fit(tr, valid=va)
    assert r["steps"] == 20 and 0.5 < r["auc"] < 1.0, r
    meta = ctrain.inspect(tmp_path / "oov")[0]["meta"]
    assert meta["model"]["oov_buckets"] is True and meta["model"]["feature_size"] == 600 + 39, meta["model"]
    with pytest.raises(ValueError, match="or pass --oov bucket"):
        ctrain.Trainer(**opts).fit(tr)


def test_keyed_embedding_table_from_python(va10k_split, tmp_path):
    """--embedding-table keyed through the Python Trainer: the same model as the positional table when every key
    gets a row (a start that depends on (seed, id) alone), counters in the logs' metrics, eval from the checkpoint,
    and a refusal naming the option where keyed tables are not built (the parameter servers)."""
    tr, va = va10k_split
    opts = dict(SMALL, embedding_initializer="normal:0.01", max_steps=40)
    fixed = ctrain.Trainer(model_dir=tmp_path / "fixed", **opts).fit(tr, valid=va)
    keyed = ctrain.Trainer(model_dir=tmp_path / "keyed", embedding_table="keyed", **opts).fit(tr, valid=va)
    assert keyed["auc"] == fixed["auc"] and keyed["logloss"] == fixed["logloss"], (keyed, fixed)
    meta = ctrain.inspect(tmp_path / "keyed")[0]["meta"]
    assert meta["embedding_table"]["embedding_table"] == "keyed"
    assert 0 < meta["keyed_table"]["live_rows"] <= 921
    assert meta["keyed_table"]["admitted"] == meta["keyed_table"]["live_rows"]
    # Admission by count: 10,048 examples x 39 fields over 921 ids is about 425 sightings an id, so a count of 1000
    # admits only the frequent ids; the others' sightings are counted as filtered.
    sparse = ctrain.Trainer(model_dir=tmp_path / "min", embedding_table="keyed", min_count=1000, **opts).fit(tr)
    meta5 = ctrain.inspect(tmp_path / "min")[0]["meta"]
    assert 0 < meta5["keyed_table"]["live_rows"] < meta["keyed_table"]["live_rows"], meta5["keyed_table"]
    assert meta5["keyed_table"]["filtered"] > 0
    assert sparse["steps"] == 40
    with pytest.raises(ValueError, match="--embedding-table"):
        ctrain.Trainer(embedding_table="hashed", max_steps=1, **SMALL).fit(tr)
