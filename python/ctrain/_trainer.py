"""ctrain.Trainer: DeepFM training, evaluation and prediction from Python, over the same job
code as ``ctrain train | eval | predict`` (src/ctrain/job)."""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _ctrain

_READER_KEYS = ("format", "compression", "field_size", "id_base", "feature_size", "feature_map",
                "skip_corrupt_records", "max_skipped_records", "max_line_bytes", "pipe_timeout_ms")


def _flag_args(options: Dict[str, Any]) -> List[str]:
    args: List[str] = []
    for k, v in options.items():
        if v is None:
            continue
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            args.append(f"{flag}={'true' if v else 'false'}")
        elif isinstance(v, (list, tuple)):
            args += [flag, ",".join(str(x) for x in v)]
        else:
            args += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    return args


class Trainer:
    """DeepFM (Guo et al. 2017) trained by ctrain's engine; ``Trainer(**options)``.

    Options are ``ctrain train``'s flags with underscores, with the same defaults, checks and
    messages (docs/training.md): feature_size, field_size, embedding_size, deep_layers
    ("400,400,400" or [400, 400, 400]), dropout, batch_norm, l2_reg, optimizer, learning_rate,
    batch_size, epochs, max_steps, seed, shuffle, model_dir, save_checkpoints_steps,
    keep_checkpoints, eval_every_steps, metrics_json, progress, input_mode, the pipeline options
    (num_parallel_reads, shuffle_buffer_size, cache, ...), the reader options (format, id_base,
    feature_map, ...), intra_op_parallelism_threads, towers, hogwild, autotune, mixed_precision,
    data_service (+ its options), config (a TOML/JSON file; explicit options win).
    An unknown name raises TypeError (with the closest name), a value the CLI's parser rejects
    (learning_rate="abc") ValueError naming the flag, both here rather than at fit().

    Checkpoints are the CLI's: ``model_dir`` may come from ``ctrain train`` (fit resumes it,
    evaluate/predict use it) and ``ctrain eval/predict --model-dir`` read what fit wrote. Without
    model_dir, a temporary directory is used (``trainer.model_dir``; removed by ``close()``).
    """

    def __init__(self, **options: Any):
        names = set(_ctrain.train_option_names())
        for k in options:
            if k not in names or k in ("train", "valid"):
                close = difflib.get_close_matches(k, sorted(names), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                where = " (give the data to fit())" if k in ("train", "valid") else ""
                raise TypeError(f"Trainer: unknown option '{k}'{hint}{where}")
        # The values too, now, by the CLI's parser (ValueError naming the flag), not at fit().
        _ctrain.check_train_options(_flag_args(options))
        self.options = dict(options)
        self._own_dir = None
        if not self.options.get("model_dir"):
            self._own_dir = tempfile.mkdtemp(prefix="ctrain_model.")
            self.options["model_dir"] = self._own_dir
        self.model_dir = os.fspath(self.options["model_dir"])
        self.history: List[Dict[str, Any]] = []

    # ---- data arguments -------------------------------------------------------------------
    def _files_and_reader(self, data) -> tuple:
        """(files, reader options) for data: a path, a list of paths, or a ctrain.Pipeline."""
        from . import Pipeline, _files

        if isinstance(data, Pipeline):
            reader = {k: v for k, v in data._reader.items() if v is not None and k not in self.options}
            if reader.get("format") == "auto":
                del reader["format"]
            return data.files, reader
        return _files(data), {}

    def fit(self, train, valid=None, callbacks: Optional[Sequence[Any]] = None) -> Dict[str, Any]:
        """Trains on `train` (paths, globs, directories or a ctrain.Pipeline: its files and reader
        options), evaluating on `valid` at each epoch end; resumes from model_dir's latest
        checkpoint as ``ctrain train`` does. Runs with the GIL released.

        Returns the run's figures: steps, examples, epochs, seconds, examples_per_sec, loss
        (mean training loss of the last epoch), and with valid: auc, logloss, valid_examples.
        callbacks: callables (or objects with on_train_end(logs)) called with that dict at the
        end of training (per-epoch hooks are not available yet).

        Raises ValueError with the CLI's message for bad options or data, FileNotFoundError, ...
        Ctrl-C stops between two steps, writes the checkpoint, then raises KeyboardInterrupt;
        fit again with the same model_dir resumes."""
        files, reader = self._files_and_reader(train)
        args = _flag_args(dict(reader, **self.options)) + ["--train"] + files
        if valid is not None:
            vfiles, _ = self._files_and_reader(valid)
            args += ["--valid"] + vfiles
        logs = _ctrain.run_train(args)
        self.history.append(logs)
        for cb in callbacks or ():
            (cb.on_train_end if hasattr(cb, "on_train_end") else cb)(logs)
        return logs

    def _data_options(self, extra: Dict[str, Any]) -> Dict[str, Any]:
        # field_size / feature_size / id_base / format given to the Trainer apply to its inputs;
        # the rest comes from the checkpoint (as `ctrain eval` without those flags).
        d = {k: v for k, v in self.options.items() if k in _READER_KEYS}
        d.update(extra)
        return d

    def evaluate(self, data) -> Dict[str, Any]:
        """AUC and logloss of the model in model_dir on `data` (paths or a ctrain.Pipeline), read
        as the training data was (the checkpoint's data options). Returns {"auc", "logloss",
        "examples", "label_mean", "prediction_mean"} (auc None with one class only)."""
        files, reader = self._files_and_reader(data)
        return _ctrain.run_eval(self.model_dir, files, self._data_options(reader))

    def predict(self, data) -> np.ndarray:
        """Click probabilities float32[N], one per input example, in input order.

        data: paths or a ctrain.Pipeline (read as the training data was), or arrays: a
        ctrain.Batch, (ids, values) or (labels, ids, values) with ids int64[N, F] as the model
        sees them (0-based) and values float32[N, F]. A record dropped by skip_corrupt_records
        gets nan."""
        tmp = tempfile.mkdtemp(prefix="ctrain_predict.")
        try:
            out = os.path.join(tmp, "predictions.txt")
            if isinstance(data, tuple) and len(data) in (2, 3) and all(isinstance(a, np.ndarray) for a in data):
                ids, values = data[-2], data[-1]
                labels = data[0] if len(data) == 3 else np.zeros(ids.shape[0], np.float32)
                path = os.path.join(tmp, "input.tfrecord")
                _ctrain.write_examples(path, np.ascontiguousarray(labels, np.float32),
                                       np.ascontiguousarray(ids, np.int64), np.ascontiguousarray(values, np.float32))
                files, reader = [path], {"format": "tfrecord"}
            else:
                files, reader = self._files_and_reader(data)
            _ctrain.run_predict(self.model_dir, files, self._data_options(reader), out)
            return np.loadtxt(out, dtype=np.float32, ndmin=1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def close(self) -> None:
        """Removes the temporary model_dir (only one the Trainer made itself)."""
        if self._own_dir is not None:
            shutil.rmtree(self._own_dir, ignore_errors=True)
            self._own_dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
