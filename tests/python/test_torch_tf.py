"""The framework adapters: .as_torch() feeds the PyTorch DeepFM peer (bench/peers) to the same
AUC as the peer's own loader; .as_tf() gives a tf.data.Dataset with the batches' signature."""

import importlib.util
import sys
import threading

import numpy as np
import pytest

import ctrain

from conftest import REPO, VA10K, run_with_tensorflow

torch = pytest.importorskip("torch", reason="PyTorch is not installed (scripts/install-deps.sh installs it)")

sys.path.insert(0, str(REPO / "bench" / "peers"))
import common  # noqa: E402  (bench/peers/common.py: the peer's loader and AUC)
import deepfm_torch  # noqa: E402


def train_peer(batches, valid, seed=1, epochs=3):
    """bench/peers/deepfm_torch.py's model and optimizers (small layers: seconds on one core),
    trained on `batches()` (an iterable of (labels, ids, values) tensors per epoch); valid AUC."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    model = deepfm_torch.build_model(torch, torch.nn, 39, 921, 8, [64, 64], 0.0)
    opt_sparse = torch.optim.SparseAdam([model.w.weight, model.v.weight], lr=2e-3)
    opt_dense = torch.optim.Adam([model.bias] + list(model.mlp.parameters()), lr=2e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    steps = 0
    for _ in range(epochs):
        for y, ids, vals in batches():
            loss = loss_fn(model(ids, vals), y)
            opt_sparse.zero_grad(set_to_none=True)
            opt_dense.zero_grad(set_to_none=True)
            loss.backward()
            opt_sparse.step()
            opt_dense.step()
            steps += 1
    model.eval()
    with torch.no_grad():
        p = torch.sigmoid(model(torch.from_numpy(valid.ids), torch.from_numpy(valid.values))).numpy()
    return common.auc(valid.labels, p), steps


def test_torch_deepfm_from_as_torch_reaches_the_auc_of_its_own_loader(va10k_split):
    tr, va = va10k_split
    # The peer's own loader: numpy arrays from its LibSVM parser, batches in file order.
    own = common.load_libsvm(str(tr), 39, id_offset=1)
    valid = common.load_libsvm(str(va), 39, id_offset=1)
    L, I, V = (torch.from_numpy(a) for a in (own.labels, own.ids, own.values))

    def own_batches():
        for s in range(0, len(own), 256):
            yield L[s:s + 256], I[s:s + 256], V[s:s + 256]

    ds = ctrain.Pipeline(str(tr), batch_size=256, **VA10K).as_torch()
    assert isinstance(ds, torch.utils.data.IterableDataset)
    loader = torch.utils.data.DataLoader(ds, batch_size=None)

    auc_own, steps_own = train_peer(own_batches, valid)
    auc_ctrain, steps_ctrain = train_peer(lambda: iter(loader), valid)
    print(f"PyTorch DeepFM valid auc: own loader {auc_own:.6f}, ctrain .as_torch() {auc_ctrain:.6f}")
    assert steps_own == steps_ctrain == 3 * 32
    assert auc_own > 0.70, auc_own
    # Same batches in the same order, same seed: the same model up to float rounding.
    assert abs(auc_ctrain - auc_own) < 1e-4, (auc_ctrain, auc_own)


def test_as_torch_shards_over_dataloader_workers(va10k_split):
    tr, _ = va10k_split
    ds = ctrain.Pipeline(str(tr), batch_size=500, **VA10K).as_torch()
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
    got = [b for b in loader]
    ids = torch.cat([b[1] for b in got]).numpy()
    want = ctrain.read(tr, **VA10K).ids
    assert ids.shape == want.shape
    assert sorted(map(tuple, ids.tolist())) == sorted(map(tuple, want.tolist()))


def _same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for s, t in zip(x, y):
            assert s.dtype == t.dtype and s.shape == t.shape
            assert torch.equal(s, t)


def test_as_torch_prefetch_gives_the_same_batches_in_order(va10k_split):
    tr, _ = va10k_split
    plain = list(ctrain.Pipeline(str(tr), batch_size=256, **VA10K).as_torch())
    for depth in (1, 3):
        ahead = list(ctrain.Pipeline(str(tr), batch_size=256, **VA10K).as_torch(prefetch=depth))
        _same_batches(plain, ahead)
    assert len(plain) == 32
    # Through a DataLoader (batch_size=None) as a training loop uses it.
    loader = torch.utils.data.DataLoader(ctrain.Pipeline(str(tr), batch_size=256, **VA10K).as_torch(prefetch=2),
                                         batch_size=None)
    _same_batches(plain, list(loader))


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "ctrain-prefetch"]


def test_as_torch_prefetch_thread_ends_when_the_loop_breaks(va10k_split):
    tr, _ = va10k_split
    ds = ctrain.Pipeline(str(tr), batch_size=100, **VA10K).as_torch(prefetch=4)
    for i, _ in enumerate(ds):
        if i == 2:
            assert len(_prefetch_threads()) == 1
            break
    assert _prefetch_threads() == []  # stopped and joined when the iteration closed
    assert sum(1 for _ in ds) == 80  # and the dataset iterates again from the start


def test_as_torch_prefetch_raises_the_sources_error_in_the_loop(tmp_path):
    bad = tmp_path / "bad.libsvm"
    good = "1 1:1 5:1\n"
    bad.write_text(good * 300 + "1 1:1 oops:1\n" + good * 10)
    opts = dict(format="libsvm", field_size=2, feature_size=10)
    with pytest.raises(ValueError, match=r"bad\.libsvm.*301") as plain:
        list(ctrain.Pipeline(str(bad), batch_size=50, **opts).as_torch())
    got = []
    with pytest.raises(ValueError, match=r"bad\.libsvm.*301") as ahead:
        for b in ctrain.Pipeline(str(bad), batch_size=50, **opts).as_torch(prefetch=2):
            got.append(b)
    assert str(ahead.value) == str(plain.value)
    assert len(got) == 6  # the 300 good rows, then the error, nothing dropped or invented
    assert _prefetch_threads() == []


def test_as_torch_pin_memory_needs_an_accelerator(va10k_split):
    tr, _ = va10k_split
    p = ctrain.Pipeline(str(tr), batch_size=1000, **VA10K)
    if not (torch.cuda.is_available() or (hasattr(torch, "accelerator") and torch.accelerator.is_available())):
        with pytest.raises(ValueError, match="no accelerator is available"):
            p.as_torch(pin_memory=True)
        return
    batches = list(p.as_torch(pin_memory=True, prefetch=2))
    assert len(batches) == 8 and all(t.is_pinned() for b in batches for t in b)
    _same_batches(list(p.as_torch()), batches)


def test_as_torch_refuses_bad_settings(va10k_split):
    tr, _ = va10k_split
    p = ctrain.Pipeline(str(tr), batch_size=1000, **VA10K)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="prefetch"):
            p.as_torch(prefetch=bad)
    with pytest.raises(TypeError, match="no cursor"):
        p.as_torch().state_dict()


def test_as_tf_has_the_batch_signature(va10k_split):
    tr, _ = va10k_split
    run_with_tensorflow("""
        ds = ctrain.Pipeline(values["tr"], batch_size=1000, **values["opts"]).as_tf()
        spec = ds.element_spec
        assert spec[0].dtype == tf.float32 and spec[0].shape.as_list() == [None]
        assert spec[1].dtype == tf.int64 and spec[1].shape.as_list() == [None, 39]
        assert spec[2].dtype == tf.float32 and spec[2].shape.as_list() == [None, 39]
        ids = np.concatenate([b[1].numpy() for b in ds])
        np.testing.assert_array_equal(ids, ctrain.read(values["tr"], **values["opts"]).ids)
    """, tr=str(tr), opts=VA10K)
