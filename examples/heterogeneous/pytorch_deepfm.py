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
The hyperparameters arrive as --key value (the SageMaker toolkit's convention; job.py reads them).
"""

import os
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import job  # noqa: E402  (beside this script: its hyperparameters, data and outputs)


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


def main(argv):
    a = job.parse_args(argv, __doc__)
    torch.manual_seed(a.seed)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = DeepFM(a.field_size, a.feature_size, a.embedding_size, a.layers).to(device)
    opt_sparse = torch.optim.SparseAdam([model.w.weight, model.v.weight], lr=a.learning_rate)
    opt_dense = torch.optim.Adam([model.bias, *model.mlp.parameters()], lr=a.learning_rate)
    loss_fn = nn.BCEWithLogitsLoss()
    pipeline, source = job.training_pipeline(a)
    steps = examples = 0
    t0 = time.monotonic()
    model.train()
    for labels, ids, vals in pipeline.as_torch(pin_memory=device.type == "cuda", prefetch=2):
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
    if steps == 0:
        sys.exit(f"no training batch came from {source}")
    metrics = {"examples": examples, "steps": steps, "seconds": time.monotonic() - t0, "source": source}
    valid = job.validation_pipeline(a)
    if valid is not None:
        model.eval()
        ys, ps = [], []
        with torch.no_grad():
            for labels, ids, vals in valid.as_torch():
                ps.append(torch.sigmoid(model(ids.to(device), vals.to(device))).cpu().numpy())
                ys.append(labels.numpy())
        metrics["auc"], metrics["logloss"] = job.auc_logloss(np.concatenate(ys), np.concatenate(ps))
    if os.environ.get("SM_MODEL_DIR"):
        torch.save(model.state_dict(), os.path.join(os.environ["SM_MODEL_DIR"], "model.pt"))
    job.finish("pytorch_deepfm", metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
