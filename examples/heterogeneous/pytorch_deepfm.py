#!/usr/bin/env python3
"""A user's PyTorch DeepFM fed by ctrain's data service: the trainer role of a SageMaker
heterogeneous job (docs/launch.md#entry-points).

Run under `ctrain launch` (the hyperparameter sagemaker_program, or `--entry-point`):
  - in a job with a data_group, the data hosts read and batch the train channel, and this script
    reads the batches from the service (CTRAIN_DATA_SERVICE, CTRAIN_DATA_SERVICE_TRAIN);
  - without one, it reads the train channel's files itself (SM_CHANNEL_TRAIN), as it does when
    run by hand with --train FILES.
It validates on the validation channel (SM_CHANNEL_VALIDATION, or --valid FILES), writes the
model's state_dict to SM_MODEL_DIR/model.pt and its figures to SM_OUTPUT_DATA_DIR/metrics.json
(auc, logloss, examples, steps, source). CUDA when present (pinned batches, non-blocking copies).

Model (Guo et al. 2017, DeepFM): first-order weights w and factors V over the ids,
  e = V[ids] * values                     [B, F, K]
  y = b + sum_f w[ids] values + 1/2 sum_k((sum_f e)^2 - sum_f e^2) + MLP(flatten(e))
with Adam (SparseAdam on the two tables) and BCE-with-logits, the model of bench/peers.
The hyperparameters arrive as --key value (the SageMaker toolkit's convention); others are ignored.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
from torch import nn

import ctrain


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--learning_rate", type=float, default=1e-3)
    p.add_argument("--embedding_size", type=int, default=8)
    p.add_argument("--deep_layers", default="64,64", help="hidden widths, comma-separated or a JSON list")
    p.add_argument("--field_size", type=int, default=39)
    p.add_argument("--feature_size", type=int, required=True, help="ids are in [0, feature_size) after id_base")
    p.add_argument("--id_base", type=int, default=0)
    p.add_argument("--format", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train", nargs="*", default=None, help="files (default: the train channel or the data service)")
    p.add_argument("--valid", nargs="*", default=None, help="files (default: the validation channel)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args, _ = p.parse_known_args(argv)  # the job's other hyperparameters (data_group, ...) are not ours
    return args


class DeepFM(nn.Module):
    def __init__(self, field_size, feature_size, k, layers):
        super().__init__()
        self.w = nn.Embedding(feature_size, 1, sparse=True)
        self.v = nn.Embedding(feature_size, k, sparse=True)
        nn.init.xavier_normal_(self.w.weight)
        nn.init.xavier_normal_(self.v.weight)
        self.bias = nn.Parameter(torch.zeros(1))
        mods, width = [], field_size * k
        for h in layers:
            mods += [nn.Linear(width, h), nn.ReLU()]
            width = h
        mods.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*mods)

    def forward(self, ids, vals):
        first = (self.w(ids).squeeze(-1) * vals).sum(1)
        e = self.v(ids) * vals.unsqueeze(-1)
        s = e.sum(1)
        second = 0.5 * (s * s - (e * e).sum(1)).sum(1)
        return self.bias + first + second + self.mlp(e.flatten(1)).squeeze(-1)


def training_batches(a, reader, pin):
    """The data service's batches when the job has one, else the channel's (or --train's) files."""
    if a.train is None and os.environ.get("CTRAIN_DATA_SERVICE"):
        service = ctrain.DataService.from_env()
        pipeline = service.pipeline(os.environ["CTRAIN_DATA_SERVICE_TRAIN"], batch_size=a.batch_size,
                                    epochs=a.epochs, seed=a.seed, **reader)
        return pipeline.as_torch(pin_memory=pin, prefetch=2), "data service " + service.address
    files = a.train or [os.environ["SM_CHANNEL_TRAIN"]]
    pipeline = ctrain.Pipeline(files, batch_size=a.batch_size, epochs=a.epochs, **reader)
    return pipeline.as_torch(pin_memory=pin, prefetch=2), "files"


def auc_logloss(labels, probs):
    order = np.argsort(probs, kind="mergesort")
    ranks = np.empty(len(probs))
    ranks[order] = np.arange(1, len(probs) + 1)
    for p in np.unique(probs):  # ties share their mean rank
        tied = probs == p
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    pos = labels > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    auc = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg) if n_pos and n_neg else float("nan")
    q = np.clip(probs, 1e-7, 1 - 1e-7)
    return float(auc), float(-np.mean(labels * np.log(q) + (1 - labels) * np.log(1 - q)))


def main(argv):
    a = parse_args(argv)
    torch.manual_seed(a.seed)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    layers = json.loads(a.deep_layers) if a.deep_layers.startswith("[") else [int(x) for x in a.deep_layers.split(",")]
    reader = dict(format=a.format, field_size=a.field_size, id_base=a.id_base, feature_size=a.feature_size)
    model = DeepFM(a.field_size, a.feature_size, a.embedding_size, layers).to(device)
    opt_sparse = torch.optim.SparseAdam([model.w.weight, model.v.weight], lr=a.learning_rate)
    opt_dense = torch.optim.Adam([model.bias, *model.mlp.parameters()], lr=a.learning_rate)
    loss_fn = nn.BCEWithLogitsLoss()
    batches, source = training_batches(a, reader, pin=device.type == "cuda")
    steps = examples = 0
    t0 = time.monotonic()
    model.train()
    for labels, ids, vals in batches:
        labels = labels.to(device, non_blocking=True)
        logits = model(ids.to(device, non_blocking=True), vals.to(device, non_blocking=True))
        loss = loss_fn(logits, labels)
        opt_sparse.zero_grad(set_to_none=True)
        opt_dense.zero_grad(set_to_none=True)
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        steps += 1
        examples += labels.shape[0]
    seconds = time.monotonic() - t0
    if steps == 0:
        sys.exit(f"no training batch came from {source}")
    metrics = {"examples": examples, "steps": steps, "seconds": seconds, "source": source}
    valid = a.valid or ([os.environ["SM_CHANNEL_VALIDATION"]] if os.environ.get("SM_CHANNEL_VALIDATION") else None)
    if valid:
        model.eval()
        ys, ps = [], []
        with torch.no_grad():
            for labels, ids, vals in ctrain.Pipeline(valid, batch_size=4096, **reader).as_torch():
                ps.append(torch.sigmoid(model(ids.to(device), vals.to(device))).cpu().numpy())
                ys.append(labels.numpy())
        metrics["auc"], metrics["logloss"] = auc_logloss(np.concatenate(ys), np.concatenate(ps))
    print(f"pytorch_deepfm: {steps} steps, {examples} examples from {source} in {seconds:.1f} s"
          + (f"; validation AUC {metrics['auc']:.4f}, logloss {metrics['logloss']:.4f}" if valid else ""), flush=True)
    model_dir = os.environ.get("SM_MODEL_DIR")
    if model_dir:
        torch.save(model.state_dict(), os.path.join(model_dir, "model.pt"))
    out = os.environ.get("SM_OUTPUT_DATA_DIR")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "metrics.json"), "w") as f:
            json.dump(metrics, f)
    return 0 if valid is None or math.isfinite(metrics["auc"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
