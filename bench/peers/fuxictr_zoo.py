#!/usr/bin/env python3
"""FuxiCTR 2.3.10 peers of ctrain's model zoo, on FuxiCTR's own BaseModel and layers.

The pip package ships fuxictr.pytorch.models.BaseModel and the layers but not the
model_zoo, so each class below is our own thin composition of those layers, written
after reading the model_zoo file named in its docstring (github.com/reczoo/FuxiCTR,
model_zoo/...). What stays FuxiCTR's: one embedding table per field (FeatureEmbedding:
nn.Embedding(vocab + padding + OOV) for a categorical field, nn.Linear(1, K, bias=False)
for a numeric one, normal(std 1e-4) tables, xavier-normal Linear/Conv1d via
BaseModel.reset_parameters), torch.optim.Adam over every parameter (dense, the tables
too), sigmoid + binary_crossentropy, and BaseModel.train_step (clip_grad_norm_ 10).

Data: ctrain's fixed-length LibSVM (or .npz). The first --num-dense-fields fields are
FuxiCTR "numeric" features (the value as stored, float32 of shape (B, 1)); every other
field is "categorical" with a vocabulary built from the training file as FuxiCTR's
preprocessing does (index 0 padding, 1..n the ids seen in training, n+1 OOV: a
validation id unseen in training maps to OOV). Batches are fed as tensors (a dict per
batch, as FuxiCTR's loaders yield), shuffled by a seeded permutation per epoch, instead
of the parquet loader (unseeded shuffle). FuxiCTR's fit() is not used: it keeps the
best-validation checkpoint and lowers the learning rate on a plateau; here every model
trains exactly --epochs and is evaluated once at the end, like ctrain.

Prints one JSON line (see common.timed_loop; with --valid also auc and valid_logloss).
"""

import argparse
import os
import sys
import tempfile
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from fuxictr.features import FeatureMap  # noqa: E402
from fuxictr.pytorch.models import BaseModel  # noqa: E402
from fuxictr.pytorch.layers import (FeatureEmbedding, LogisticRegression, FactorizationMachine,  # noqa: E402
                                    MLP_Block, CrossNet, CrossNetV2, InnerProductInteraction,
                                    CompressedInteractionNet)


class Fields:
    """FuxiCTR's view of ctrain's fields: names I1.. (numeric) and C1.. (categorical), the
    per-field vocabulary of the training ids, and the conversion of a Dataset to tensors."""

    def __init__(self, train, num_dense):
        F = train.ids.shape[1]
        self.num_dense = num_dense
        self.names = [f"I{f + 1}" for f in range(num_dense)] + [f"C{f + 1}" for f in range(F - num_dense)]
        self.vocab = [np.unique(train.ids[:, f]) for f in range(num_dense, F)]

    def feature_map(self, K, tmp):
        fm = FeatureMap("ctrain_zoo", tmp)
        feats = OrderedDict()
        for f, name in enumerate(self.names):
            if f < self.num_dense:
                feats[name] = {"source": "", "type": "numeric"}
            else:
                n = len(self.vocab[f - self.num_dense])
                feats[name] = {"source": "", "type": "categorical", "vocab_size": n + 2, "padding_idx": 0}
        fm.features = feats
        fm.labels = ["label"]
        fm.default_emb_dim = K
        fm.num_fields = fm.get_num_fields()
        fm.total_features = sum(s.get("vocab_size", 1) for s in feats.values())
        return fm

    def tensors(self, ds):
        """{name: tensor} for the whole set: numeric float32 (N, 1), categorical int64 (N,), label float32 (N,)."""
        out = {}
        for f, name in enumerate(self.names):
            if f < self.num_dense:
                out[name] = torch.from_numpy(np.ascontiguousarray(ds.values[:, f:f + 1]))
            else:
                v = self.vocab[f - self.num_dense]
                pos = np.searchsorted(v, ds.ids[:, f])
                known = (pos < v.size) & (v[np.minimum(pos, v.size - 1)] == ds.ids[:, f])
                out[name] = torch.from_numpy(np.where(known, pos + 1, v.size + 1).astype(np.int64))
        out["label"] = torch.from_numpy(ds.labels)
        return out


class ZooModel(BaseModel):
    def __init__(self, feature_map, a, model_id):
        super().__init__(feature_map, model_id=model_id, gpu=-1, verbose=0,
                         model_root=tempfile.gettempdir(), metrics=["logloss", "AUC"])
        self.a = a

    def finish(self):
        self.compile("adam", "binary_crossentropy", self.a.learning_rate)
        self.reset_parameters()
        self.model_to_device()
        self._max_gradient_norm = 10.0  # fit()'s default, read by train_step

    def embed(self, X):
        return self.embedding_layer(X)  # [B, F, K]

    def mlp(self, in_dim, hidden, out_dim, out_act=None):
        return MLP_Block(input_dim=in_dim, output_dim=out_dim, hidden_units=hidden, hidden_activations="ReLU",
                         output_activation=out_act, dropout_rates=self.a.dropout, batch_norm=False)

    def forward(self, inputs):
        X = self.get_inputs(inputs)
        return {"y_pred": self.output_activation(self.logit(X))}


class LR(ZooModel):
    """model_zoo/LR/src/LR.py: LogisticRegression(feature_map, use_bias=True)."""

    def __init__(self, fm, a):
        super().__init__(fm, a, "LR")
        self.lr_layer = LogisticRegression(fm, use_bias=True)
        self.finish()

    def logit(self, X):
        return self.lr_layer(X)


class FM(ZooModel):
    """model_zoo/FM/src/FM.py: FactorizationMachine (LR with bias + the pairwise product sum)."""

    def __init__(self, fm, a):
        super().__init__(fm, a, "FM")
        self.embedding_layer = FeatureEmbedding(fm, a.embedding_size)
        self.fm = FactorizationMachine(fm)
        self.finish()

    def logit(self, X):
        return self.fm(X, self.embed(X))


class DeepFM(ZooModel):
    """model_zoo/DeepFM/src/DeepFM.py: FactorizationMachine + MLP_Block(flatten(e)) -> 1."""

    def __init__(self, fm, a):
        super().__init__(fm, a, "DeepFM")
        self.embedding_layer = FeatureEmbedding(fm, a.embedding_size)
        self.fm = FactorizationMachine(fm)
        self.dnn = self.mlp(fm.sum_emb_out_dim(), common.int_list(a.deep_layers), 1)
        self.finish()

    def logit(self, X):
        e = self.embed(X)
        return self.fm(X, e) + self.dnn(e.flatten(start_dim=1))


class WideDeep(ZooModel):
    """model_zoo/WideDeep/src/WideDeep.py: LogisticRegression (wide, with bias) + MLP_Block(flatten(e)) -> 1."""

    def __init__(self, fm, a):
        super().__init__(fm, a, "WideDeep")
        self.embedding_layer = FeatureEmbedding(fm, a.embedding_size)
        self.lr_layer = LogisticRegression(fm, use_bias=True)
        self.dnn = self.mlp(fm.sum_emb_out_dim(), common.int_list(a.deep_layers), 1)
        self.finish()

    def logit(self, X):
        return self.lr_layer(X) + self.dnn(self.embed(X).flatten(start_dim=1))


class DCN(ZooModel):
    """model_zoo/DCN/DCN_torch/src/DCN.py: CrossNet(x0) and MLP_Block(x0) side by side, Linear -> 1.
    (dcn_v2 with --model-structure parallel: model_zoo/DCNv2/src/DCNv2.py, CrossNetV2 full rank.)"""

    def __init__(self, fm, a, v2=False):
        super().__init__(fm, a, "DCNv2" if v2 else "DCN")
        self.embedding_layer = FeatureEmbedding(fm, a.embedding_size)
        D = fm.sum_emb_out_dim()
        deep = common.int_list(a.deep_layers)
        self.crossnet = CrossNetV2(D, a.cross_layers) if v2 else CrossNet(D, a.cross_layers)
        self.dnn = self.mlp(D, deep, None) if deep else None
        self.fc = nn.Linear(D + (deep[-1] if deep else 0), 1)
        self.finish()

    def logit(self, X):
        x0 = self.embedding_layer(X, flatten_emb=True)
        out = self.crossnet(x0)
        if self.dnn is not None:
            out = torch.cat([out, self.dnn(x0)], dim=-1)
        return self.fc(out)


class DLRM(ZooModel):
    """model_zoo/DLRM/src/DLRM.py, interaction_op "dot": numeric features -> bottom MLP_Block (ReLU out,
    width K); categorical embeddings + it -> InnerProductInteraction("inner_product"), concatenated with
    the bottom output -> top MLP_Block -> 1."""

    def __init__(self, fm, a):
        super().__init__(fm, a, "DLRM")
        self.dense_feats = [f for f, s in fm.features.items() if s["type"] == "numeric"]
        self.embedding_layer = FeatureEmbedding(fm, a.embedding_size, not_required_feature_columns=self.dense_feats)
        K = a.embedding_size
        n = fm.num_fields - len(self.dense_feats) + 1
        self.bottom_mlp = self.mlp(len(self.dense_feats), common.int_list(a.bottom_mlp), K, "ReLU")
        self.interact = InnerProductInteraction(num_fields=n, output="inner_product")
        self.top_mlp = self.mlp(n * (n - 1) // 2 + K, common.int_list(a.top_mlp), 1)
        self.finish()

    def logit(self, X):
        e = self.embed(X)
        dense = self.bottom_mlp(torch.cat([X[k] for k in self.dense_feats], dim=-1))
        inter = self.interact(torch.cat([e, dense.unsqueeze(1)], dim=1))
        return self.top_mlp(torch.cat([inter, dense], dim=-1))


class XDeepFM(ZooModel):
    """model_zoo/xDeepFM/src/xDeepFM.py: LogisticRegression (no bias) + CompressedInteractionNet -> 1 +
    MLP_Block(flatten(e)) -> 1."""

    def __init__(self, fm, a):
        super().__init__(fm, a, "xDeepFM")
        self.embedding_layer = FeatureEmbedding(fm, a.embedding_size)
        self.lr_layer = LogisticRegression(fm, use_bias=False)
        self.cin = CompressedInteractionNet(fm.num_fields, common.int_list(a.cin_layer_units), output_dim=1)
        deep = common.int_list(a.deep_layers)
        self.dnn = self.mlp(fm.sum_emb_out_dim(), deep, 1) if deep else None
        self.finish()

    def logit(self, X):
        e = self.embed(X)
        y = self.lr_layer(X) + self.cin(e)
        if self.dnn is not None:
            y = y + self.dnn(e.flatten(start_dim=1))
        return y


MODELS = {"lr": LR, "fm": FM, "deepfm": DeepFM, "wide_deep": WideDeep, "dcn": DCN,
          "dcn_v2": lambda fm, a: DCN(fm, a, v2=True), "dlrm": DLRM, "xdeepfm": XDeepFM}


def build(a, train):
    fields = Fields(train, a.num_dense_fields)
    model = MODELS[a.model](fields.feature_map(a.embedding_size, tempfile.gettempdir()), a)
    return fields, model


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_zoo_args(p)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)

    tr = common.load_data(a.train, a.field_size, a.id_offset)
    fields, model = build(a, tr)
    data = fields.tensors(tr)

    def step(idx):
        i = torch.from_numpy(idx)
        return model.train_step({k: v[i] for k, v in data.items()}).detach()

    model.train()
    import fuxictr
    out = {"peer": "fuxictr", "model": a.model, "fuxictr": fuxictr.__version__, "torch": torch.__version__,
           "threads": a.threads, "seed": a.seed}
    out.update(common.timed_loop(len(tr), a, step))
    if a.valid:
        va = common.load_data(a.valid, a.field_size, a.id_offset)
        vd = fields.tensors(va)
        model.eval()
        with torch.no_grad():
            pr = model.forward(vd)["y_pred"].numpy().ravel()
        out["auc"] = common.auc(va.labels, pr)
        out["valid_logloss"] = common.logloss(va.labels, pr)
    common.emit(out)


if __name__ == "__main__":
    main(sys.argv[1:])
