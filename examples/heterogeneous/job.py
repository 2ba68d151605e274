"""What the two example scripts share: their hyperparameters, where their batches come from, the
validation figures and the job's outputs (docs/launch.md#entry-points).

Inside `ctrain launch` (a job with a data_group) the batches come from the data service
(CTRAIN_DATA_SERVICE, CTRAIN_DATA_SERVICE_TRAIN); without one from the train channel's files
(SM_CHANNEL_TRAIN); by hand from --train FILES. Validation reads the validation channel
(SM_CHANNEL_VALIDATION) or --valid FILES. Outputs: SM_MODEL_DIR (the model) and
SM_OUTPUT_DATA_DIR/metrics.json (auc, logloss, examples, steps, seconds, source)."""

import argparse
import json
import os

import numpy as np

import ctrain


def parse_args(argv, description):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p.add_argument("--train", nargs="*", default=None, help="files (default: the data service or the train channel)")
    p.add_argument("--valid", nargs="*", default=None, help="files (default: the validation channel)")
    p.add_argument("--threads", type=int, default=0, help="the framework's threads (0: its default)")
    args, _ = p.parse_known_args(argv)  # the job's other hyperparameters (data_group, ...) are not ours
    args.layers = (json.loads(args.deep_layers) if args.deep_layers.startswith("[")
                   else [int(x) for x in args.deep_layers.split(",") if x])
    args.reader = dict(format=args.format, field_size=args.field_size, id_base=args.id_base,
                       feature_size=args.feature_size)
    return args


def training_pipeline(a):
    """(pipeline, source): the data service's batches when the job has one, else the files'."""
    if a.train is None and os.environ.get("CTRAIN_DATA_SERVICE"):
        service = ctrain.DataService.from_env()
        pipeline = service.pipeline(os.environ["CTRAIN_DATA_SERVICE_TRAIN"], batch_size=a.batch_size,
                                    epochs=a.epochs, seed=a.seed, **a.reader)
        return pipeline, "data service " + service.address
    files = a.train or [os.environ["SM_CHANNEL_TRAIN"]]
    return ctrain.Pipeline(files, batch_size=a.batch_size, epochs=a.epochs, **a.reader), "files"


def validation_pipeline(a):
    """The validation files' pipeline, or None without any."""
    valid = a.valid or ([os.environ["SM_CHANNEL_VALIDATION"]] if os.environ.get("SM_CHANNEL_VALIDATION") else None)
    return ctrain.Pipeline(valid, batch_size=4096, **a.reader) if valid else None


def auc_logloss(labels, probs):
    """ROC AUC (ties share their mean rank) and the mean log loss of float arrays [N]."""
    order = np.argsort(probs, kind="mergesort")
    sorted_p = probs[order]
    ranks = np.empty(len(probs))
    start = 0
    for end in np.append(np.nonzero(np.diff(sorted_p))[0] + 1, len(probs)):
        ranks[order[start:end]] = (start + 1 + end) / 2.0
        start = end
    pos = labels > 0.5
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    auc = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg) if n_pos and n_neg else float("nan")
    q = np.clip(probs, 1e-7, 1 - 1e-7)
    return float(auc), float(-np.mean(labels * np.log(q) + (1 - labels) * np.log(1 - q)))


def finish(name, metrics):
    """Prints the run's line and writes SM_OUTPUT_DATA_DIR/metrics.json when the job has one."""
    print(f"{name}: {metrics['steps']} steps, {metrics['examples']} examples from {metrics['source']} in "
          f"{metrics['seconds']:.1f} s" + (f"; validation AUC {metrics['auc']:.4f}, logloss {metrics['logloss']:.4f}"
                                           if "auc" in metrics else ""), flush=True)
    out = os.environ.get("SM_OUTPUT_DATA_DIR")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "metrics.json"), "w") as f:
            json.dump(metrics, f)
