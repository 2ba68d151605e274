"""ctrain.read / ctrain.Pipeline give the examples the CLI and the C++ reader give, on every
shared data file; errors carry the CLI's located messages."""

import numpy as np
import pytest

import ctrain

from conftest import SHARED, write_stripped_criteo

# Reader options per shared file (SOURCES.md); files not in the seed's layout fail, and
# must fail in Python with the CLI's message.
FILE_OPTIONS = {
    "agaricus_test.libsvm": dict(field_size=22, id_base=1),
    "agaricus_train.libsvm": dict(field_size=22, id_base=1),
    "criteo_deepfm_va10k.libsvm": dict(id_base=1),
}


def shared_files():
    if not SHARED.is_dir():
        return []
    return sorted(p.name for p in SHARED.iterdir() if p.suffix not in (".md", ".txt"))


def cli_examples(cli, path, options, tmp_path):
    """What `ctrain convert --output-format libsvm` reads from `path`: (labels, ids, values)
    with ids as the model sees them (output id base 0), or the CLI's error message."""
    import subprocess

    out = tmp_path / "cli.libsvm"
    args = [cli, "convert", "-i", str(path), "-o", str(out), "--output-format", "libsvm", "--output-id-base", "0"]
    for k, v in options.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return p.stderr.strip().splitlines()[-1][len("ctrain: "):]
    f = options.get("field_size", 39)
    rows = [l.split() for l in out.read_text().splitlines()]
    labels = np.array([float(r[0]) for r in rows], dtype=np.float32)
    ids = np.array([[int(t.split(":")[0]) for t in r[1:]] for r in rows], dtype=np.int64).reshape(-1, f)
    values = np.array([[float(t.split(":")[1]) for t in r[1:]] for r in rows], dtype=np.float32).reshape(-1, f)
    return labels, ids, values


@pytest.mark.parametrize("name", shared_files() or ["(no shared data)"])
def test_read_and_pipeline_equal_cli_on_shared_file(name, shared_data, cli, tmp_path):
    path = shared_data / name
    options = FILE_OPTIONS.get(name, {})
    want = cli_examples(cli, path, options, tmp_path)
    if isinstance(want, str):  # the CLI refuses the file: Python says the same
        with pytest.raises(ValueError) as e:
            ctrain.read(path, **options)
        assert str(e.value) == want
        with pytest.raises(ValueError) as e:
            list(ctrain.Pipeline(path, batch_size=64, **options))
        # The pipeline's sniffer words the libFFM refusal a little differently: same code and file.
        assert str(e.value).split(": ")[:2] == want.split(": ")[:2]
        return
    labels, ids, values = want
    got = ctrain.read(path, **options)
    assert got.labels.dtype == np.float32 and got.ids.dtype == np.int64 and got.values.dtype == np.float32
    assert got.ids.shape == ids.shape and got.values.shape == values.shape and got.labels.shape == labels.shape
    np.testing.assert_array_equal(got.labels, labels)
    np.testing.assert_array_equal(got.ids, ids)
    # LibSVM text prints values with %g-like shortest round-trip: equal as float32.
    np.testing.assert_array_equal(got.values, values)

    batches = list(ctrain.Pipeline(path, batch_size=64, num_parallel_calls=2, **options))
    assert [b.labels.shape[0] for b in batches[:-1]] == [64] * (len(batches) - 1)
    np.testing.assert_array_equal(np.concatenate([b.labels for b in batches]), labels)
    np.testing.assert_array_equal(np.concatenate([b.ids for b in batches]), ids)
    np.testing.assert_array_equal(np.concatenate([b.values for b in batches]), values)


def test_pipeline_shards_shuffle_epochs_and_reiteration(shared_data):
    path = shared_data / "criteo_deepfm_va10k.libsvm"
    whole = ctrain.read(path, id_base=1)
    rows = {tuple(r) for r in whole.ids.tolist()}
    p = ctrain.Pipeline(path, id_base=1, batch_size=1000, shuffle_buffer=512, seed=3, epochs=2)
    first = np.concatenate([b.ids for b in p])
    second = np.concatenate([b.ids for b in p])  # a new pass: same seed, same order
    assert first.shape == (2 * 10040, 39)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first[:10040], whole.ids)  # shuffled
    assert not np.array_equal(first[:10040], first[10040:])  # reshuffled each epoch
    assert {tuple(r) for r in first[:10040].tolist()} == rows
    # Three shards partition the records.
    parts = [np.concatenate([b.ids for b in ctrain.Pipeline(path, id_base=1, num_shards=3, shard_index=i)])
             for i in range(3)]
    assert sum(len(x) for x in parts) == 10040
    assert {tuple(r) for x in parts for r in x.tolist()} == rows
    assert p.stats()["records"] == 2 * 10040


def test_batches_are_zero_copy_and_outlive_the_pipeline(shared_data):
    p = ctrain.Pipeline(shared_data / "criteo_deepfm_va10k.libsvm", id_base=1, batch_size=100)
    it = iter(p)
    b = next(it)
    # The three arrays share one owner (the C++ batch), not copies of it.
    assert not b.ids.flags.owndata and not b.labels.flags.owndata
    assert b.ids.base is not None and type(b.ids.base) is type(b.labels.base)
    assert b.ids.flags.c_contiguous and b.ids.shape == (100, 39)
    keep = b.ids.copy()
    it.close()
    del it, p
    np.testing.assert_array_equal(b.ids, keep)  # still valid after the pipeline is gone


def test_errors_are_located_and_typed(tmp_path):
    bad = tmp_path / "bad.libsvm"
    bad.write_text("1 0:1 1:1\n0 0:1 1:x\n")
    with pytest.raises(ValueError, match=r"^InvalidArgument: .*bad\.libsvm:2:"):
        ctrain.read(bad, field_size=2)
    with pytest.raises(ValueError, match=r"bad\.libsvm:2:"):
        list(ctrain.Pipeline(bad, field_size=2))
    with pytest.raises(FileNotFoundError, match="nope.libsvm"):
        ctrain.read(tmp_path / "nope.libsvm")
    with pytest.raises(ValueError, match="--field-size must be in"):
        ctrain.read(bad, field_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        iter(ctrain.Pipeline(bad, field_size=2, batch_size=0))
    with pytest.raises(TypeError, match="unknown reader option 'fieldsize'"):
        ctrain.read(bad, fieldsize=2)


def test_inspect_and_convert_mirror_the_cli(shared_data, tmp_path):
    docs = ctrain.inspect(shared_data / "criteo_deepfm_va10k.libsvm")
    assert len(docs) == 1 and docs[0]["format"] == "libsvm" and docs[0]["records"] == 10040
    out = tmp_path / "va.tfrecord"
    ctrain.convert(shared_data / "criteo_deepfm_va10k.libsvm", out, id_base=1, output_format="tfrecord")
    a = ctrain.read(shared_data / "criteo_deepfm_va10k.libsvm", id_base=1)
    b = ctrain.read(out)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.labels, b.labels)
    with pytest.raises(ValueError, match="expected 39 'id:value' pairs, found 22"):
        ctrain.convert(shared_data / "agaricus_test.libsvm", tmp_path / "x.tfrecord")


def test_python_m_ctrain_runs_the_cli(shared_data):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "ctrain", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "ctrain 0.1.0"
    p = subprocess.run([sys.executable, "-m", "ctrain", "inspect", "--bogus"], capture_output=True, text=True)
    assert p.returncode == 2 and "--bogus" in p.stderr


def test_pipeline_options_are_checked_at_construction(tmp_path):
    # An unknown name or a bad value once surfaced only at the first next().
    f = tmp_path / "a.libsvm"
    f.write_text("1 0:1 1:0.5\n0 0:1 1:1\n")
    with pytest.raises(TypeError, match=r"^Pipeline: unknown option 'batch_sise' \(did you mean 'batch_size'\?\)$"):
        ctrain.Pipeline(f, batch_sise=3)
    with pytest.raises(TypeError, match=r"did you mean 'cache_max_bytes'"):
        ctrain.Pipeline(f, cache_max_byte=10)
    # feature_spec= reads in file order: a setting it cannot honour is refused by name
    # (tests/python/test_feature_spec_arrays.py); the spec file itself is read at iter().
    with pytest.raises(ValueError, match=r"Pipeline\(num_parallel_reads=2\) does not apply with feature_spec="):
        ctrain.Pipeline(f, feature_spec="spec.json", num_parallel_reads=2)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        iter(ctrain.Pipeline(f, feature_spec=tmp_path / "nope.json"))
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        ctrain.Pipeline(f, batch_size=0)
    with pytest.raises(ValueError, match="lz4"):
        ctrain.Pipeline(f, compression="lz4")
    with pytest.raises(ValueError, match="--field-size must be in"):
        ctrain.Pipeline(f, field_size=0)
    with pytest.raises(ValueError, match="unknown stage 'bogus'"):
        ctrain.Pipeline(f, order="shard,bogus")
    # Checking opens nothing: a missing file or feature map is still found at iter().
    p = ctrain.Pipeline(tmp_path / "nope.libsvm", feature_map=tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError):
        list(p)
    batches = list(ctrain.Pipeline(f, field_size=2, batch_size=2, cache_max_bytes=1000))
    assert batches[0].ids.tolist() == [[0, 1], [0, 1]]
    np.testing.assert_array_equal(batches[0].values, [[1.0, 0.5], [1.0, 1.0]])


def test_criteo_rows_with_stripped_trailing_cells(tmp_path):
    # Some public copies of Kaggle's train.txt drop a row's trailing empty cells (37-39 cells).
    write_stripped_criteo(tmp_path, 12)
    with pytest.raises(ValueError, match=r"stripped.tsv:2: expected 40 cells, got 39 .*--criteo-pad-missing-trailing"):
        ctrain.read(tmp_path / "stripped.tsv")
    want = ctrain.read(tmp_path / "full.tsv")
    got = ctrain.read(tmp_path / "stripped.tsv", criteo_pad_missing_trailing=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    p = ctrain.Pipeline(tmp_path / "stripped.tsv", batch_size=5, criteo_pad_missing_trailing=True)
    batches = list(p)
    np.testing.assert_array_equal(np.concatenate([b.ids for b in batches]), want.ids)
    assert p.stats()["criteo_padded_rows"] == 9  # rows 1-3, 5-7, 9-11 lacked 1-3 cells
