#!/usr/bin/env python3
"""Plain PyTorch peers of ctrain's model zoo: one small nn.Module per `--model`.

Written the way a PyTorch user would, with ctrain's shapes: one table of first-order
weights w = nn.Embedding(feature_size, 1, sparse=True) and one of embeddings
V = nn.Embedding(feature_size, K, sparse=True) over the whole id space, e = V[ids] * vals
[B, F, K], x0 = flatten(e) [B, D = F*K], SparseAdam on the tables and Adam on the dense
parameters (as deepfm_torch.py). Glorot-normal tables, Glorot-uniform kernels, zero biases.

  lr        bias + sum_f w[id_f] val_f
  fm        lr + 1/2 sum_k ((sum_f e)^2 - sum_f e^2)
  deepfm    fm + MLP(x0) -> 1
  wide_deep lr + MLP(x0) -> 1
  dcn       x_{l+1} = x0 * (x_l . w_l) + b_l + x_l (--cross-layers); parallel:
            Linear([x_L, MLP_hidden(x0)]) -> 1
  dcn_v2    x_{l+1} = x0 * (W_l x_l + b_l) + x_l, W_l [D, D]; parallel as dcn
  dlrm      the first --num-dense-fields values -> bottom MLP (ReLU, last layer to K, ReLU);
            the other fields' embeddings and it: the N(N-1)/2 pairwise dot products
            (upper triangle) and the bottom output -> top MLP -> 1
  xdeepfm   lr + CIN(e) + MLP(x0) -> 1; CIN layer l: Conv1d(kernel 1) over the
            outer products X0 (x) X_{l-1} [B, F*H_{l-1}, K], sum-pooled over K, -> Linear -> 1
MLPs: Linear + ReLU per hidden layer, dropout (drop probability) after each when > 0.

Prints one JSON line (see common.timed_loop; with --valid also auc and valid_logloss).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import numpy as np  # noqa: E402


def mlp(nn, in_dim, hidden, out_dim, dropout, out_act=False):
    mods = []
    for h in hidden:
        mods += [nn.Linear(in_dim, h), nn.ReLU()]
        if dropout > 0:
            mods.append(nn.Dropout(dropout))
        in_dim = h
    if out_dim is not None:
        mods.append(nn.Linear(in_dim, out_dim))
        if out_act:
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def build_model(torch, nn, a):
    """The nn.Module of a.model (forward(ids [B,F] int64, vals [B,F] f32) -> logits [B])."""
    kind, F, N, K = a.model, a.field_size, a.feature_size, a.embedding_size
    deep = common.int_list(a.deep_layers)
    D = F * K

    class Zoo(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(1))
            self.w = nn.Embedding(N, 1, sparse=True) if kind in ("lr", "fm", "deepfm", "wide_deep",
                                                                "xdeepfm") else None
            self.v = nn.Embedding(N, K, sparse=True) if kind != "lr" else None
            if kind in ("deepfm", "wide_deep", "xdeepfm"):
                self.mlp = mlp(nn, D, deep, 1, a.dropout)
            if kind in ("dcn", "dcn_v2"):
                self.mlp = mlp(nn, D, deep, None, a.dropout)
                if kind == "dcn":
                    self.cross_w = nn.ParameterList(nn.Parameter(torch.empty(D, 1)) for _ in range(a.cross_layers))
                    self.cross_b = nn.ParameterList(nn.Parameter(torch.zeros(D)) for _ in range(a.cross_layers))
                else:
                    self.cross = nn.ModuleList(nn.Linear(D, D) for _ in range(a.cross_layers))
                self.fc = nn.Linear(D + (deep[-1] if deep else 0), 1)
            if kind == "dlrm":
                nd = a.num_dense_fields
                self.bottom = mlp(nn, nd, common.int_list(a.bottom_mlp), K, a.dropout, out_act=True)
                n = F - nd + 1
                self.register_buffer("triu", torch.triu_indices(n, n, 1), persistent=False)
                self.top = mlp(nn, n * (n - 1) // 2 + K, common.int_list(a.top_mlp), 1, a.dropout)
            if kind == "xdeepfm":
                units = common.int_list(a.cin_layer_units)
                self.cin = nn.ModuleList(nn.Conv1d((F if i == 0 else units[i - 1]) * F, h, 1)
                                         for i, h in enumerate(units))
                self.cin_fc = nn.Linear(sum(units), 1)
            for m in self.modules():
                if isinstance(m, nn.Embedding):
                    nn.init.xavier_normal_(m.weight)
                elif isinstance(m, (nn.Linear, nn.Conv1d)):
                    nn.init.xavier_uniform_(m.weight)
                    nn.init.zeros_(m.bias)
            if kind == "dcn":
                for p in self.cross_w:
                    nn.init.xavier_uniform_(p)

        def forward(self, ids, vals):
            y = self.bias.expand(ids.shape[0])
            if self.w is not None:
                y = y + (self.w(ids).squeeze(-1) * vals).sum(1)
            if kind == "lr":
                return y
            if kind == "dlrm":
                nd = a.num_dense_fields
                dense = self.bottom(vals[:, :nd])                                    # [B, K]
                e = self.v(ids[:, nd:]) * vals[:, nd:].unsqueeze(-1)                 # [B, F-nd, K]
                t = torch.cat([e, dense.unsqueeze(1)], 1)                            # [B, n, K]
                dots = torch.bmm(t, t.transpose(1, 2))[:, self.triu[0], self.triu[1]]
                return y + self.top(torch.cat([dots, dense], 1)).squeeze(-1)
            e = self.v(ids) * vals.unsqueeze(-1)                                     # [B, F, K]
            x0 = e.flatten(1)
            if kind in ("fm", "deepfm"):
                s = e.sum(1)
                y = y + 0.5 * (s * s - (e * e).sum(1)).sum(1)
            if kind in ("deepfm", "wide_deep", "xdeepfm"):
                y = y + self.mlp(x0).squeeze(-1)
            if kind == "xdeepfm":
                B = e.shape[0]
                x, pooled = e, []
                for conv in self.cin:
                    z = torch.einsum("bhk,bmk->bhmk", e, x).reshape(B, -1, K)
                    x = conv(z)
                    pooled.append(x.sum(-1))
                y = y + self.cin_fc(torch.cat(pooled, 1)).squeeze(-1)
            if kind in ("dcn", "dcn_v2"):
                x = x0
                for l in range(a.cross_layers):
                    if kind == "dcn":
                        x = x0 * (x @ self.cross_w[l]) + self.cross_b[l] + x
                    else:
                        x = x0 * self.cross[l](x) + x
                out = torch.cat([x, self.mlp(x0)], 1) if deep else x
                y = y + self.fc(out).squeeze(-1)
            return y

    return Zoo()


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_zoo_args(p)
    a = p.parse_args(argv)

    import torch
    from torch import nn
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    tr = common.load_data(a.train, a.field_size, a.id_offset)
    common.check_ids(tr, a.feature_size, a.train)
    model = build_model(torch, nn, a)
    sparse = [t.weight for t in (model.w, model.v) if t is not None]
    sparse_ids = {id(t) for t in sparse}
    dense = [q for q in model.parameters() if id(q) not in sparse_ids]
    opts = [torch.optim.SparseAdam(sparse, lr=a.learning_rate), torch.optim.Adam(dense, lr=a.learning_rate)]
    loss_fn = nn.BCEWithLogitsLoss()
    labels, ids, vals = (torch.from_numpy(x) for x in (tr.labels, tr.ids, tr.values))

    def step(idx):
        i = torch.from_numpy(idx)
        loss = loss_fn(model(ids[i], vals[i]), labels[i])
        for o in opts:
            o.zero_grad(set_to_none=True)
        loss.backward()
        for o in opts:
            o.step()
        return loss.detach()

    model.train()
    out = {"peer": "pytorch", "model": a.model, "torch": torch.__version__, "threads": a.threads,
           "seed": a.seed}
    out.update(common.timed_loop(len(tr), a, step))
    if a.valid:
        va = common.load_data(a.valid, a.field_size, a.id_offset)
        common.check_ids(va, a.feature_size, a.valid)
        model.eval()
        with torch.no_grad():
            pr = torch.sigmoid(model(torch.from_numpy(va.ids), torch.from_numpy(va.values))).numpy()
        out["auc"] = common.auc(va.labels, pr)
        out["valid_logloss"] = common.logloss(va.labels, pr)
    common.emit(out)


if __name__ == "__main__":
    main(sys.argv[1:])
