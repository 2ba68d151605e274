"""The model zoo's peers (bench/peers/zoo_torch.py, fuxictr_zoo.py, sklearn_lr.py) and
bench/zoo_report.py, so they cannot rot: every kind trains two steps to a finite loss and
predicts probabilities. Run: python3 -m pytest tests/peers/test_zoo_peers.py -q
The torch / FuxiCTR / scikit-learn parts are skipped when that package is missing.
"""

import importlib.util
import json
import math
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import common  # noqa: E402
import make_synthetic  # noqa: E402
import zoo_report  # noqa: E402

F = 39
N_FEAT = 500
ROWS = 200
has = lambda m: importlib.util.find_spec(m) is not None  # noqa: E731
has_fuxictr = has("fuxictr") and has("torch")
if has_fuxictr:
    try:
        import fuxictr.pytorch.models  # noqa: F401  (its import chain needs ray, polars, ...)
    except ImportError:
        has_fuxictr = False


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("zoo")
    labels, ids, vals = make_synthetic.generate(ROWS, F, N_FEAT, 1.2, 3)
    tr, va = str(d / "tr.libsvm"), str(d / "va.libsvm")
    make_synthetic.write_libsvm(tr, labels[:150], ids[:150], vals[:150], False)
    make_synthetic.write_libsvm(va, labels[150:], ids[150:], vals[150:], False)
    return tr, va


def flags(kind, tr, va):
    return ["--model", kind, "--train", tr, "--valid", va, "--feature-size", str(N_FEAT),
            "--embedding-size", "4", "--deep-layers", "8,8", "--dropout", "0", "--cross-layers", "2",
            "--cin-layer-units", "3,2", "--bottom-mlp", "8", "--top-mlp", "8", "--batch-size", "32",
            "--max-steps", "2", "--warmup-steps", "0", "--threads", "1"]


def run(capsys, module, argv):
    module.main(argv)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1, lines
    return json.loads(lines[0])


def check(out, kind):
    assert out["model"] == kind
    assert out["steps"] == 2 and out["timed_steps"] == 2
    assert math.isfinite(out["final_loss"]) and out["final_loss"] > 0
    assert 0.0 <= out["auc"] <= 1.0
    assert math.isfinite(out["valid_logloss"]) and out["valid_logloss"] > 0
    assert out["examples_per_sec"] > 0


@pytest.mark.skipif(not has("torch"), reason="torch not installed")
@pytest.mark.parametrize("kind", common.ZOO_KINDS)
def test_zoo_torch_two_steps(tiny, capsys, kind):
    import zoo_torch
    check(run(capsys, zoo_torch, flags(kind, *tiny)), kind)


@pytest.mark.skipif(not has_fuxictr, reason="fuxictr (and its imports) not installed")
@pytest.mark.parametrize("kind", common.ZOO_KINDS)
def test_fuxictr_zoo_two_steps(tiny, capsys, kind):
    import fuxictr_zoo
    check(run(capsys, fuxictr_zoo, flags(kind, *tiny)), kind)


@pytest.mark.skipif(not has_fuxictr, reason="fuxictr (and its imports) not installed")
def test_fuxictr_fields_vocabulary():
    import fuxictr_zoo
    ids = np.array([[0, 7], [1, 9], [2, 7]], dtype=np.int64)
    tr = common.Dataset(np.array([1, 0, 1], np.float32), ids, np.array([[0.5, 1], [2, 1], [3, 1]], np.float32))
    fields = fuxictr_zoo.Fields(tr, num_dense=1)
    fm = fields.feature_map(4, "/tmp")
    assert list(fm.features) == ["I1", "C1"]
    assert fm.features["C1"]["vocab_size"] == 4  # padding, 7, 9, OOV
    va = common.Dataset(np.array([0, 1], np.float32), np.array([[0, 9], [0, 8]], np.int64),
                        np.array([[1.5, 1], [0, 1]], np.float32))
    t = fields.tensors(va)
    assert t["C1"].tolist() == [2, 3]  # 9 is the second training id; 8 was never seen: OOV
    assert t["I1"].shape == (2, 1) and t["I1"][0, 0].item() == 1.5


@pytest.mark.skipif(not (has("sklearn") and has("scipy")), reason="scikit-learn not installed")
def test_sklearn_lr(tiny, capsys):
    import sklearn_lr
    tr, va = tiny
    out = run(capsys, sklearn_lr, ["--train", tr, "--valid", va, "--feature-size", str(N_FEAT)])
    assert 0.0 <= out["auc"] <= 1.0 and out["valid_logloss"] > 0 and out["iterations"] > 0


def test_report_flops_match_deepfm_doc():
    # docs/model.md: DeepFM 1248-400-400-400-1 is 4 917 600 GEMM FLOPs per training example.
    assert zoo_report.mlp_flops(1248, [400, 400, 400], 1) == 4917600
    assert zoo_report.gemm_flops("lr") == 0
    assert zoo_report.gemm_flops("deepfm") == 6 * (624 * 200 + 200 * 200 + 200)
