#!/usr/bin/env python3
"""PyTorch DeepFM peer: the way a PyTorch user would write it.

Model (Guo et al. 2017, DeepFM; layout of lambdaji/tf_repos DeepFM):
  w  = nn.Embedding(feature_size, 1, sparse=True)   first-order weights
  V  = nn.Embedding(feature_size, K, sparse=True)   factor embeddings
  e  = V[ids] * vals                                 [B, F, K]
  y  = bias + sum_f w[ids]*vals + 1/2 sum_k((sum_f e)^2 - sum_f e^2) + MLP(flatten(e))
  MLP: F*K -> 400 -> 400 -> 400 -> 1, ReLU, dropout (drop prob) after each hidden layer.
Loss BCEWithLogitsLoss (mean); SparseAdam on the two embedding tables,
Adam on the dense parameters (MLP + bias). No L2 (SparseAdam has no weight
decay; see README).

The whole data set is loaded into numpy first; only the training loop is
timed (after --warmup-steps untimed steps). Prints one JSON line.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import numpy as np  # noqa: E402


def build_model(torch, nn, field_size, feature_size, k, layers, dropout):
    class DeepFM(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Embedding(feature_size, 1, sparse=True)
            self.v = nn.Embedding(feature_size, k, sparse=True)
            nn.init.xavier_normal_(self.w.weight)  # glorot_normal, as the seed
            nn.init.xavier_normal_(self.v.weight)
            self.bias = nn.Parameter(torch.zeros(1))
            mods = []
            width = field_size * k
            for h in layers:
                lin = nn.Linear(width, h)
                nn.init.xavier_uniform_(lin.weight)  # tf fully_connected default
                nn.init.zeros_(lin.bias)
                mods += [lin, nn.ReLU(inplace=True), nn.Dropout(dropout)]
                width = h
            out = nn.Linear(width, 1)
            nn.init.xavier_uniform_(out.weight)
            nn.init.zeros_(out.bias)
            mods.append(out)
            self.mlp = nn.Sequential(*mods)

        def forward(self, ids, vals):
            first = (self.w(ids).squeeze(-1) * vals).sum(1)           # [B]
            e = self.v(ids) * vals.unsqueeze(-1)                       # [B,F,K]
            s = e.sum(1)                                               # [B,K]
            second = 0.5 * (s * s - (e * e).sum(1)).sum(1)             # [B]
            deep = self.mlp(e.flatten(1)).squeeze(-1)                  # [B]
            return self.bias + first + second + deep

    return DeepFM()


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_train_args(p)
    a = p.parse_args(argv)
    if a.best_of:
        common.run_best_of(os.path.abspath(__file__), argv,
                           [int(t) for t in a.best_of.split(",")], "pytorch")
        return

    import torch
    from torch import nn
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(a.threads)
    torch.manual_seed(a.seed)

    tr = common.load_data(a.train, a.field_size, a.id_offset)
    common.check_ids(tr, a.feature_size, a.train)
    va = None
    if a.valid:
        va = common.load_data(a.valid, a.field_size, a.id_offset)
        common.check_ids(va, a.feature_size, a.valid)

    layers = [int(x) for x in a.deep_layers.split(",") if x]
    model = build_model(torch, nn, a.field_size, a.feature_size, a.embedding_size,
                        layers, a.dropout)
    sparse_params = [model.w.weight, model.v.weight]
    dense_params = [model.bias] + list(model.mlp.parameters())
    opt_sparse = torch.optim.SparseAdam(sparse_params, lr=a.learning_rate,
                                        betas=(0.9, 0.999), eps=1e-8)
    opt_dense = torch.optim.Adam(dense_params, lr=a.learning_rate,
                                 betas=(0.9, 0.999), eps=1e-8)
    loss_fn = nn.BCEWithLogitsLoss()

    labels_all = torch.from_numpy(tr.labels)
    ids_all = torch.from_numpy(tr.ids)
    vals_all = torch.from_numpy(tr.values)
    n = len(tr)
    b = a.batch_size

    model.train()
    step = 0
    timed_steps = 0
    timed_examples = 0
    t0 = None
    losses = []
    done = False
    for epoch in range(a.epochs):
        order = common.epoch_order(n, epoch, a.seed, not a.no_shuffle)
        if order is not None:
            perm = torch.from_numpy(order)
            ep_labels, ep_ids, ep_vals = labels_all[perm], ids_all[perm], vals_all[perm]
        else:
            ep_labels, ep_ids, ep_vals = labels_all, ids_all, vals_all
        for start in range(0, n, b):
            if step == a.warmup_steps:
                t0, c0 = common.now(), common.cpu_now()
            y = ep_labels[start:start + b]
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
                logits = model(ep_ids[start:start + b], ep_vals[start:start + b])
            loss = loss_fn(logits.float(), y)
            opt_sparse.zero_grad(set_to_none=True)
            opt_dense.zero_grad(set_to_none=True)
            loss.backward()
            opt_sparse.step()
            opt_dense.step()
            losses.append(loss.detach())
            step += 1
            if step > a.warmup_steps:
                timed_steps += 1
                timed_examples += y.shape[0]
            if a.max_steps and step >= a.max_steps:
                done = True
                break
        if done:
            break
    seconds = common.now() - t0 if t0 is not None else 0.0
    cpu_seconds = common.cpu_now() - c0 if t0 is not None else 0.0

    tail = torch.stack(losses[-50:]).mean().item() if losses else float("nan")
    out = {
        "peer": "pytorch",
        "torch": torch.__version__,
        "threads": a.threads,
        "precision": "bf16-autocast" if a.bf16 else "f32",
        "examples_per_sec": timed_examples / seconds if seconds > 0 else 0.0,
        "steps": step,
        "timed_steps": timed_steps,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "final_loss": tail,
    }
    if va is not None:
        model.eval()
        preds = []
        with torch.no_grad():
            vi, vv = torch.from_numpy(va.ids), torch.from_numpy(va.values)
            for s in range(0, len(va), 8192):
                preds.append(torch.sigmoid(model(vi[s:s + 8192], vv[s:s + 8192])))
        pr = torch.cat(preds).numpy()
        out["auc"] = common.auc(va.labels, pr)
        eps = 1e-7
        pc = np.clip(pr, eps, 1 - eps)
        out["valid_logloss"] = float(-np.mean(va.labels * np.log(pc) +
                                              (1 - va.labels) * np.log(1 - pc)))
    common.emit(out)


if __name__ == "__main__":
    main(sys.argv[1:])
