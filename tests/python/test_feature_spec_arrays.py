"""Feature-spec data in Python and convert (issue #23): ctrain.read(..., feature_spec=),
ctrain.Pipeline(..., feature_spec=) and `ctrain convert --feature-spec ... --output-format npz`
give the same arrays, one per spec entry (multi-hot as EmbeddingBag ids/offsets[/weights]), on a
DeepCTR-style TFRecord and a multi-hot libFFM file written here by hand."""

import json
import struct
import subprocess

import numpy as np
import pytest

import ctrain

from conftest import run_with_tensorflow

# ---- a tf.train.Example TFRecord writer (wire format by hand) ------------------------------------


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _len_field(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _feature(value) -> bytes:
    kind, vals = value
    if kind == "float":
        return _len_field(2, _len_field(1, struct.pack(f"<{len(vals)}f", *vals)))
    if kind == "int64":
        return _len_field(3, _len_field(1, b"".join(_varint(v) for v in vals)))
    return _len_field(1, b"".join(_len_field(1, v) for v in vals))


def example(features: dict) -> bytes:
    entries = b"".join(_len_field(1, _len_field(1, k.encode()) + _len_field(2, _feature(v)))
                       for k, v in features.items())
    return _len_field(1, entries)


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC_TABLE = _crc32c_table()


def _masked_crc(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def write_tfrecord(path, records) -> None:
    with open(path, "wb") as f:
        for r in records:
            n = struct.pack("<Q", len(r))
            f.write(n + struct.pack("<I", _masked_crc(n)) + r + struct.pack("<I", _masked_crc(r)))


# ---- the inputs ----------------------------------------------------------------------------------

ROWS = 23


def deepctr_rows():
    """DeepCTR's criteo layout (label, I*, C*) plus a multi-hot tag list of 0..3 values."""
    rows = []
    for r in range(ROWS):
        rows.append({
            "label": ("float", [float(r % 3 == 0)]),
            "I1": ("float", [float(r * 7 % 11)]),
            "I2": ("float", [float(r) * 0.5]),
            "C1": ("bytes", [b"c1_%d" % (r % 4)]),
            "C2": ("bytes", [b"c2_%d" % (r % 6)]),
            "tags": ("bytes", [b"t%d" % ((r + k) % 5) for k in range(r % 4)]),
        })
    return rows


def libffm_lines():
    """label then 0..4 triples per field 0..2 (fields repeat within a line: multi-hot)."""
    lines = []
    for r in range(ROWS):
        triples = []
        for f in range(3):
            for k in range((r + f) % 4):
                triples.append((f, 10 * f + (r + k) % 7, 0.25 * (k + 1)))
        lines.append((r % 2, triples))
    return lines


def suggest_spec(cli, data, spec, tmp_path, extra=()):
    p = subprocess.run([cli, "inspect", "--suggest-spec", str(spec), *extra, str(data)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(spec.read_text())


# ---- helpers -------------------------------------------------------------------------------------


def concat(batches):
    """Pipeline batches joined into one dict like read()'s (bag offsets shifted)."""
    out = {}
    for k in batches[0]:
        parts = [b[k] for b in batches]
        if isinstance(parts[0], tuple):
            ids, offsets, rest = [], [], []
            base = 0
            for p in parts:
                ids.append(p[0])
                offsets.append(p[1] + base)
                base += len(p[0])
                if len(p) == 3:
                    rest.append(p[2])
            out[k] = (np.concatenate(ids), np.concatenate(offsets)) + ((np.concatenate(rest),) if rest else ())
        else:
            out[k] = np.concatenate(parts)
    return out


def from_npz(path, like):
    z = np.load(path)
    out = {}
    for k, v in like.items():
        if isinstance(v, tuple):
            t = (z[k + ".ids"], z[k + ".offsets"])
            out[k] = t + ((z[k + ".weights"],) if len(v) == 3 else ())
            assert (k + ".weights" in z.files) == (len(v) == 3)
        else:
            out[k] = z[k]
    assert sorted(z.files) == sorted(
        f for k, v in like.items() for f in ([k + s for s in (".ids", ".offsets", ".weights")[:len(v)]]
                                               if isinstance(v, tuple) else [k]))
    return out


def assert_same(a, b):
    assert list(a) == list(b)
    for k in a:
        if isinstance(a[k], tuple):
            assert len(a[k]) == len(b[k]), k
            for x, y in zip(a[k], b[k]):
                assert x.dtype == y.dtype and x.shape == y.shape, k
                np.testing.assert_array_equal(x, y, err_msg=k)
        else:
            assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def rows_of_bag(bag, n):
    ids, offsets = bag[0], bag[1]
    ends = list(offsets[1:]) + [len(ids)]
    return [list(range(offsets[i], ends[i])) for i in range(n)]


# ---- tests ---------------------------------------------------------------------------------------


def test_deepctr_tfrecord_arrays_equal_in_read_pipeline_and_npz(cli, tmp_path):
    data = tmp_path / "deepctr.tfrecord"
    rows = deepctr_rows()
    write_tfrecord(data, [example(r) for r in rows])
    spec = suggest_spec(cli, data, tmp_path / "spec.json", tmp_path)
    by_key = {f["key"]: f for f in spec["fields"]}
    assert by_key["tags"].get("var_len") and by_key["tags"]["pooling"] == "mean"

    got = ctrain.read(data, feature_spec=tmp_path / "spec.json")
    assert list(got) == ["label", "C1", "C2", "I1", "I2", "tags"]
    np.testing.assert_array_equal(got["label"], np.array([r["label"][1][0] for r in rows], np.float32))
    np.testing.assert_array_equal(got["I1"], np.array([r["I1"][1][0] for r in rows], np.float32))
    np.testing.assert_array_equal(got["I2"], np.array([r["I2"][1][0] for r in rows], np.float32))
    assert got["C1"].dtype == np.int64 and got["C1"].shape == (ROWS,)
    # Equal strings get equal ids; C1's block has buckets ids from 0 (the first entry).
    c1 = [r["C1"][1][0] for r in rows]
    assert all(got["C1"][i] == got["C1"][j] for i in range(ROWS) for j in range(ROWS) if c1[i] == c1[j])
    assert 0 <= got["C1"].min() and got["C1"].max() < by_key["C1"]["buckets"]
    ids, offsets, weights = got["tags"]  # pooling mean: weights 1/n
    assert offsets.shape == (ROWS,) and ids.shape == weights.shape
    for r, span in enumerate(rows_of_bag(got["tags"], ROWS)):
        n = len(rows[r]["tags"][1])
        assert len(span) == n
        np.testing.assert_array_equal(weights[span], np.full(n, 1.0 / n, np.float32) if n else np.zeros(0, np.float32))
    # Ids are the spec's: C1's block lies below C2's (spec order), the tags' after both.
    assert got["C1"].max() < got["C2"].min() and got["C2"].max() < ids.min()

    batches = list(ctrain.Pipeline(data, batch_size=5, feature_spec=tmp_path / "spec.json"))
    assert [len(b["label"]) for b in batches] == [5, 5, 5, 5, 3]
    assert_same(concat(batches), got)
    two = list(ctrain.Pipeline(data, batch_size=5, epochs=2, drop_remainder=True, feature_spec=tmp_path / "spec.json"))
    assert [len(b["label"]) for b in two] == [5] * 8  # each epoch drops its own remainder

    out = tmp_path / "deepctr.npz"
    ctrain.convert(data, out, feature_spec=tmp_path / "spec.json", output_format="npz")
    assert_same(from_npz(out, got), got)


def test_multi_hot_libffm_arrays_equal_in_read_pipeline_and_npz(cli, tmp_path):
    data = tmp_path / "mh.libffm"
    lines = libffm_lines()
    data.write_text("".join(f"{y} " + " ".join(f"{f}:{j}:{v}" for f, j, v in t) + "\n" for y, t in lines))
    spec = suggest_spec(cli, data, tmp_path / "ffm.json", tmp_path)
    assert [f["ffm_field"] for f in spec["fields"]] == [0, 1, 2]

    got = ctrain.read(data, feature_spec=tmp_path / "ffm.json")
    names = [f["name"] for f in spec["fields"]]
    assert list(got) == ["label"] + names
    np.testing.assert_array_equal(got["label"], np.array([y for y, _ in lines], np.float32))
    for f, name in enumerate(names):
        bag = got[name]
        assert len(bag) == 3  # libFFM values are weights
        for r, span in enumerate(rows_of_bag(bag, ROWS)):
            want = [(j, v) for ff, j, v in lines[r][1] if ff == f]
            assert bag[0][span].tolist() == [j for j, _ in want]  # features kept as written
            np.testing.assert_array_equal(bag[2][span], np.array([v for _, v in want], np.float32)
                                          * (np.float32(1) / len(want) if want and spec["fields"][f].get(
                                              "pooling") == "mean" else np.float32(1)))

    batches = list(ctrain.Pipeline(data, batch_size=4, feature_spec=tmp_path / "ffm.json"))
    assert sum(len(b["label"]) for b in batches) == ROWS
    assert_same(concat(batches), got)
    out = tmp_path / "mh.npz"
    ctrain.convert(data, out, feature_spec=tmp_path / "ffm.json", output_format="npz")
    assert_same(from_npz(out, got), got)


def test_seed_reader_names_the_keys_and_feature_spec(tmp_path):
    data = tmp_path / "deepctr.tfrecord"
    write_tfrecord(data, [example(r) for r in deepctr_rows()[:2]])
    with pytest.raises(ValueError) as e:
        ctrain.read(data)
    msg = str(e.value)
    assert "record 0 at offset 0: missing feature 'ids': the example's keys are 'label', 'I1', 'I2', 'C1', 'C2'" \
        in msg, msg
    assert "feature_spec=" in msg, msg


def test_feature_spec_refuses_settings_it_cannot_honour(tmp_path):
    data = tmp_path / "mh.libffm"
    data.write_text("1 0:1:1\n")
    spec = tmp_path / "s.json"
    spec.write_text('{"input": "libffm", "feature_size": 8, "fields": [{"ffm_field": 0}]}')
    with pytest.raises(ValueError, match=r"Pipeline\(shuffle_buffer=10\) does not apply with feature_spec="):
        ctrain.Pipeline(data, feature_spec=spec, shuffle_buffer=10)
    with pytest.raises(ValueError, match=r"read\(id_base=1\) does not apply with feature_spec="):
        ctrain.read(data, feature_spec=spec, id_base=1)
    b = ctrain.read(data, feature_spec=spec)
    assert b["field0"][0].tolist() == [1] and b["field0"][1].tolist() == [0] and b["field0"][2].tolist() == [1.0]


def write_both_inputs(cli, tmp_path):
    """The DeepCTR-layout TFRecord (tmp_path/deepctr.tfrecord, its spec spec.json) and the multi-hot
    libFFM file (mh.libffm, ffm.json), specs from --suggest-spec: (deepctr, ffm)."""
    deepctr = tmp_path / "deepctr.tfrecord"
    write_tfrecord(deepctr, [example(r) for r in deepctr_rows()])
    suggest_spec(cli, deepctr, tmp_path / "spec.json", tmp_path)
    ffm = tmp_path / "mh.libffm"
    ffm.write_text("".join(f"{y} " + " ".join(f"{f}:{j}:{v}" for f, j, v in t) + "\n" for y, t in libffm_lines()))
    suggest_spec(cli, ffm, tmp_path / "ffm.json", tmp_path)
    return deepctr, ffm


def test_as_tf_gives_one_tensor_per_spec_entry_and_multi_hot_ragged(cli, tmp_path):
    """Pipeline(feature_spec=).as_tf(): the element spec follows the spec (multi-hot entries as
    tf.RaggedTensor, with their weights ragged alike), and the batches joined equal read()."""
    deepctr, ffm = write_both_inputs(cli, tmp_path)
    empty = tmp_path / "empty.libffm"
    empty.write_text("")
    run_with_tensorflow("""
        rows = values["rows"]
        for data, spec in values["pairs"]:
            got = ctrain.read(data, feature_spec=spec)
            ds = ctrain.Pipeline(data, batch_size=5, feature_spec=spec).as_tf()
            es = ds.element_spec
            assert list(es) == list(got), (list(es), list(got))
            batches = list(ds)
            assert sum(int(b["label"].shape[0]) for b in batches) == rows
            for k, v in got.items():
                if not isinstance(v, tuple):
                    assert isinstance(es[k], tf.TensorSpec) and es[k].dtype == tf.as_dtype(v.dtype), k
                    assert es[k].shape.as_list() == [None] + list(v.shape[1:]), k
                    np.testing.assert_array_equal(np.concatenate([b[k].numpy() for b in batches]), v, err_msg=k)
                    continue
                arrays = (v[0],) + tuple(v[2:])  # ids (+ weights); the offsets became the row splits
                parts = es[k] if isinstance(es[k], tuple) else (es[k],)
                assert len(parts) == len(arrays), k
                lengths = np.diff(np.append(v[1], len(v[0])))
                for j, (spec_part, arr) in enumerate(zip(parts, arrays)):
                    assert isinstance(spec_part, tf.RaggedTensorSpec), k
                    assert spec_part.dtype == tf.as_dtype(arr.dtype) and spec_part.shape.as_list() == [None, None], k
                    rag = [b[k][j] if isinstance(b[k], tuple) else b[k] for b in batches]
                    assert all(isinstance(r, tf.RaggedTensor) for r in rag), k
                    np.testing.assert_array_equal(np.concatenate([r.flat_values.numpy() for r in rag]), arr, err_msg=k)
                    np.testing.assert_array_equal(np.concatenate([r.row_lengths().numpy() for r in rag]), lengths,
                                                  err_msg=k)
        # The signature comes from the spec, not from a first batch: an empty input is an empty
        # dataset with the same signature.
        empty = ctrain.Pipeline(values["empty"], feature_spec=values["pairs"][1][1]).as_tf()
        full = ctrain.Pipeline(values["pairs"][1][0], feature_spec=values["pairs"][1][1]).as_tf()
        assert empty.element_spec == full.element_spec, (empty.element_spec, full.element_spec)
        assert list(empty) == []
    """, rows=ROWS, pairs=[[str(deepctr), str(tmp_path / "spec.json")], [str(ffm), str(tmp_path / "ffm.json")]],
        empty=str(empty))
