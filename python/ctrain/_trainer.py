"""ctrain.Trainer: CTR model training (every ``model=`` kind), evaluation and prediction from Python, over the same job
code as ``ctrain train | eval | predict`` (src/ctrain/job)."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _ctrain

_READER_KEYS = ("format", "compression", "field_size", "id_base", "feature_size", "feature_map",
                "skip_corrupt_records", "max_skipped_records", "max_line_bytes", "pipe_timeout_ms",
                "criteo_pad_missing_trailing")


# How fit() takes a ctrain.Pipeline's settings (the ones given to Pipeline(...) explicitly; its
# defaults do not count): PipelineOptions / reader name -> the Trainer option it becomes.
_AS_TRAINER_OPTION = {
    "batch_size": "batch_size",
    "epochs": "epochs",
    "shuffle_seed": "seed",
    "reshuffle_each_iteration": "reshuffle_each_iteration",
    "num_parallel_reads": "num_parallel_reads",
    "num_parallel_calls": "num_parallel_calls",
    "prefetch_buffer_size": "prefetch_buffer_size",
    "cache": "cache",
    "cache_max_bytes": "cache_max_bytes",
    "num_shards": "num_shards",
    "shard_index": "shard_index",
    "drop_remainder": "drop_remainder",
    "feature_spec": "feature_spec",  # Pipeline(feature_spec=...): the run reads through the same spec
}
_AS_TRAINER_OPTION.update({k: k for k in _READER_KEYS})
# PipelineOptions with no `ctrain train` flag: handed to the run's pipeline as they are.
_PIPELINE_ONLY = ("deterministic", "order", "count_shard_records")
# What memory mode (input_mode="memory", feature_spec, ps) does not use: the streaming pipeline's
# settings (the option schema's modes, src/ctrain/job/train_option_schema.cc, and the above). It uses batch_size, epochs, seed, shuffle.
_STREAM_ONLY = ("num_parallel_reads", "num_parallel_calls", "shuffle_buffer_size", "reshuffle_each_iteration",
                "prefetch_buffer_size", "cache", "cache_max_bytes", "num_shards", "shard_index",
                "drop_remainder") + _PIPELINE_ONLY
# What the data service's workers do not take from the trainer (dataservice/dataset_def.cc: they
# parse with their own threads, the dispatcher splits the data, the client buffers by bytes).
_NOT_THROUGH_SERVICE = ("num_parallel_calls", "prefetch_buffer_size", "cache", "cache_max_bytes", "num_shards",
                        "shard_index") + _PIPELINE_ONLY


def _text(v: Any) -> str:
    """A setting's value as the CLI's parser reads it (to compare a Trainer's and a Pipeline's)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    s = str(v).strip()
    return s.lower() if s.lower() in ("true", "false") else s


def _plain(v: Any) -> Any:
    """A keyword argument's value as JSON: paths as strings, tuples as lists, numpy scalars as
    Python numbers; everything else as it is (the schema converts it to the option's type)."""
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _option_values(options: Dict[str, Any]) -> str:
    """The options as typed values (a JSON object) for the C++ side, which sets them through
    the option schema (src/ctrain/job/option_schema.h); None means "not given"."""
    return json.dumps({k: _plain(v) for k, v in options.items() if v is not None})


def option_schema() -> List[Dict[str, Any]]:
    """``ctrain train``'s options, one dict each, in declaration order: name, aliases, type
    (bool|int|float|string|int list|string list), default, unit, help, modes (where the option
    is honoured, e.g. "memory|stream|towers"), needs (a mode the run must be in, "" = none) and
    set_by_launch (where ``ctrain launch`` takes it from, "" = a hyperparameter). The same
    table the CLI's flags, config files and SageMaker hyperparameters are read with."""
    out = []
    for d in _ctrain.train_option_schema():
        d = dict(d)
        d["default"] = json.loads(d["default"])
        out.append(d)
    return out


class Trainer:
    """A CTR model trained by ctrain's engine; ``Trainer(**options)``. ``model`` picks it: deepfm
    (Guo et al. 2017, the default), lr, fm (Rendle 2010), wide_deep (Cheng et al. 2016), dcn (Wang et al.
    2017), dcn_v2 (Wang et al. 2021), dlrm (Naumov et al. 2019), xdeepfm (Lian et al. 2018); shapes,
    formulas and each model's options in docs/model.md.

    Options are ``ctrain train``'s flags with underscores, with the same defaults, checks and
    messages (docs/training.md): model, feature_size, oov ("error" or "bucket": ids at or
    above feature_size read as their field's out-of-vocabulary row), field_size, embedding_size, deep_layers
    ("400,400,400" or [400, 400, 400]), cross_layers, low_rank, num_experts, model_structure,
    cin_layer_units, num_dense_fields, bottom_mlp, top_mlp, embedding_initializer ("glorot_normal",
    "normal:1e-4", "truncated_normal:S", "uniform:L"), numeric_embedding_initializer, dropout, batch_norm,
    l2_reg, optimizer, learning_rate,
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
        names = set()
        for d in _ctrain.train_option_schema():
            names.add(d["name"])
            names.update(d["aliases"])
        for k in options:
            if k not in names or k in ("train", "valid"):
                close = difflib.get_close_matches(k, sorted(names), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                where = " (give the data to fit())" if k in ("train", "valid") else ""
                raise TypeError(f"Trainer: unknown option '{k}'{hint}{where}")
        # The values too, now, through the option schema (ValueError naming the option), not at fit().
        _ctrain.check_train_options(_option_values(options))
        self.options = dict(options)
        self._own_dir = None
        if not self.options.get("model_dir"):
            self._own_dir = tempfile.mkdtemp(prefix="ctrain_model.")
            self.options["model_dir"] = self._own_dir
        self.model_dir = os.fspath(self.options["model_dir"])
        self.history: List[Dict[str, Any]] = []

    # ---- data arguments -------------------------------------------------------------------
    def _settings(self, options: Optional[Dict[str, Any]] = None) -> tuple:
        """(values, given): the data settings as the CLI's parser reads `options` (default: the
        Trainer's; config= files included) and the names set explicitly."""
        s = _ctrain.train_settings(_option_values(self.options if options is None else options))
        return s["values"], set(s["given"])

    def _show(self, name: str, values: Dict[str, Any]) -> str:
        if name in self.options:
            return f"Trainer({name}={self.options[name]!r})"
        return f"Trainer({name}={values[name]!r} from config {os.fspath(self.options.get('config', ''))!r})"

    @staticmethod
    def _pipeline_value(p, name: str) -> Any:
        if name == "feature_spec":
            return p.feature_spec
        return p._reader[name] if name in p._reader else p._pipeline[name]

    @staticmethod
    def _check_data(data, what: str) -> None:
        from . import DataServicePipeline

        if isinstance(data, DataServicePipeline):
            raise TypeError(f"{what}: a DataServicePipeline cannot be given to the Trainer (its batches come from "
                            "the service, and the Trainer runs its own client): give Trainer(data_service="
                            "'HOST:PORT', job_name=..., num_splits=...) and the files")

    def _refuse_pipeline_settings(self, p, role: str, why: str) -> None:
        """A Pipeline whose batching settings cannot apply (valid=, evaluate, predict) may give only
        reader options: anything else is refused by name."""
        bad = [f"{spelled}={self._pipeline_value(p, n)!r}" for n, spelled in p._given.items() if n not in _READER_KEYS]
        if bad:
            raise ValueError(f"{role}: Pipeline({', '.join(bad)}) cannot apply: {why}; give that Pipeline only "
                             "files and reader options (format, id_base, ...)")

    @staticmethod
    def _reader_conflicts(p, have: Dict[str, Any], given, against) -> Dict[str, Any]:
        """The Pipeline's given reader options not in `given` (to use); ValueError for one that
        `given` sets to another value (against(name) names that side)."""
        use: Dict[str, Any] = {}
        for name, spelled in p._given.items():
            if name not in _READER_KEYS:
                continue
            v = p._reader[name]
            if name in ("format", "compression") and _text(v) == "auto":
                continue  # detect: the same as not giving it
            if name in given:
                if _text(have[name]) != _text(v):
                    raise ValueError(f"{against(name)} and Pipeline({spelled}={v!r}) disagree: give {name} once")
            else:
                use[name] = v
        return use

    def _files_and_reader(self, data, role: str) -> tuple:
        """(files, reader options) for evaluate/predict: paths, or a ctrain.Pipeline giving files and
        reader options only (its reader options must agree with the Trainer's)."""
        from . import Pipeline, _files

        self._check_data(data, role)
        if isinstance(data, Pipeline):
            self._refuse_pipeline_settings(data, role, f"{role} reads every example once, in file order")
            given = {k for k in self.options if k in _READER_KEYS}
            have = {k: self.options[k] for k in given}
            return data.files, self._reader_conflicts(data, have, given, lambda n: f"Trainer({n}={have[n]!r})")
        return _files(data), {}

    def _fit_options(self, p) -> tuple:
        """(Trainer options to add, pipeline-only options) that make the run use Pipeline p's
        given settings; ValueError naming both for a conflict, or naming the setting when the run
        cannot use it."""
        values, given = self._settings()
        extra: Dict[str, Any] = {}
        pipe: Dict[str, Any] = {}

        def conflict(tname: str, spelled: str, v: Any) -> ValueError:
            once = tname if tname == spelled else f"{spelled} / {tname}"
            return ValueError(f"{self._show(tname, values)} and Pipeline({spelled}={v!r}) disagree: give {once} once")

        for name, spelled in p._given.items():
            if name in _READER_KEYS:
                continue  # below
            v = self._pipeline_value(p, name)
            if name == "shuffle_buffer_size":
                n = int(v)
                if "shuffle" in given and bool(values["shuffle"]) != (n > 0):
                    raise conflict("shuffle", spelled, v)
                if "shuffle_buffer_size" in given and int(values["shuffle_buffer_size"]) != n and \
                        (n > 0 or "shuffle" not in given):
                    raise conflict("shuffle_buffer_size", spelled, v)
                if "shuffle" not in given:
                    extra["shuffle"] = n > 0
                if n > 0 and "shuffle_buffer_size" not in given:
                    extra["shuffle_buffer_size"] = n
                continue
            if name == "epochs" and int(v) == -1:
                raise ValueError(f"Pipeline({spelled}=-1) (repeat forever) cannot reach the trainer: give "
                                 "Trainer(epochs=N), and max_steps to stop earlier")
            if name in _PIPELINE_ONLY:
                if name == "deterministic" and _text(v) != "true" and "deterministic" in given and \
                        values["deterministic"]:
                    raise ValueError(f"{self._show('deterministic', values)} and Pipeline({spelled}={v!r}) disagree: "
                                     "a non-deterministic interleave order changes results from run to run")
                pipe[name] = v
                continue
            tname = _AS_TRAINER_OPTION.get(name)
            if tname is None:
                raise ValueError(f"Pipeline({spelled}={v!r}) cannot reach the trainer (it has no such setting)")
            if tname in given:
                if _text(values[tname]) != _text(v):
                    raise conflict(tname, spelled, v)
            else:
                extra[tname] = v
        extra.update(self._reader_conflicts(p, values, given, lambda n: self._show(n, values)))

        # What the run's input mode uses: refuse, by name, what it would ignore.
        eff = dict(values, **extra)
        mode = _text(eff["input_mode"])
        if mode == "auto":
            mode = "memory" if eff["feature_spec"] or eff["ps"] else "stream"
        used = {n: s for n, s in p._given.items() if n not in _READER_KEYS}
        if "shuffle_buffer_size" in used and int(p._pipeline["shuffle_buffer_size"]) == 0:
            del used["shuffle_buffer_size"]  # "no shuffling" reaches every mode (shuffle=False)
        bad: List[str] = []
        why = ""
        if mode == "memory":
            bad = [n for n in used if n in _STREAM_ONLY]
            if eff["feature_spec"]:
                why = "Trainer(feature_spec=...) reads the training data in memory"
            elif eff["ps"]:
                why = "a parameter-server worker (Trainer(ps=...)) reads its training data in memory"
            else:
                why = "Trainer(input_mode='memory') loads the training data first"
            why += ", where only batch_size, epochs, seed and shuffle apply (there is no streaming pipeline)"
        elif eff["data_service"]:
            bad = [n for n in used if n in _NOT_THROUGH_SERVICE]
            why = ("with Trainer(data_service=...) the service's workers read the data, taking batch_size, epochs, "
                   "seed, shuffle_buffer, reshuffle_each_iteration, num_parallel_reads and drop_remainder only")
        elif eff["cache"] and "prefetch_buffer_size" in used:
            bad = ["prefetch_buffer_size"]
            why = "the trainer replays a cache without a prefetch stage (train/stream_input.cc)"
        if bad:
            shown = ", ".join(f"{used[n]}={p._pipeline[n]!r}" for n in bad)
            raise ValueError(f"Pipeline({shown}) cannot reach the training run: {why}; leave it out of the Pipeline")
        return extra, pipe

    def fit(self, train, valid=None, callbacks: Optional[Sequence[Any]] = None) -> Dict[str, Any]:
        """Trains on `train` (paths, globs, directories or a ctrain.Pipeline), evaluating on `valid`
        at each epoch end; resumes from model_dir's latest checkpoint as ``ctrain train`` does.
        Runs with the GIL released.

        A ctrain.Pipeline gives its files and every setting given to ``Pipeline(...)`` explicitly
        (its defaults do not count: for those the Trainer's options and defaults apply):

        * batch_size, epochs, seed (it becomes the Trainer's seed, which seeds the shuffle and the
          initialisation), reshuffle_each_iteration, num_parallel_reads, num_parallel_calls,
          prefetch, cache, cache_max_bytes, num_shards, shard_index, drop_remainder and the reader
          options (format, compression, field_size, id_base, feature_size, feature_map, ...) are
          the Trainer options of the same names; shuffle_buffer=N gives shuffle_buffer_size=N and
          shuffle=True, shuffle_buffer=0 gives shuffle=False. deterministic, order and
          count_shard_records go to the run's pipeline as they are.
        * A setting the Trainer did not set (as an option or in its config file) is used: the
          Pipeline's value is the run's. One both set to different values raises ValueError
          naming both ("Trainer(batch_size=256) and Pipeline(batch_size=64) disagree: give
          batch_size once"); equal values are fine.
        * A setting the run cannot use raises ValueError naming it: epochs=-1; in memory mode
          (input_mode="memory", feature_spec, ps) everything but batch_size, epochs, seed,
          shuffle_buffer=0 and the reader options; with data_service what its workers do not
          take (num_parallel_calls, prefetch, cache, num_shards, shard_index, ...); prefetch with
          cache. format="auto" and compression="auto" are the same as not giving them.
        * `valid` is read whole with the training data's reader options (as ``ctrain train
          --valid``): a valid Pipeline may give reader options that agree with them, nothing else.

        Returns the run's figures: steps, examples, epochs, seconds, examples_per_sec, loss
        (mean training loss of the last epoch), with valid: auc, logloss, valid_examples; and
        "input": the data settings the run used (batch_size, epochs, seed, shuffle,
        shuffle_buffer_size, num_shards, ..., format, id_base, ...).
        callbacks: callables (or objects with on_train_end(logs)) called with that dict at the
        end of training (per-epoch hooks are not available yet).

        Raises ValueError with the CLI's message for bad options or data, FileNotFoundError, ...
        Ctrl-C stops between two steps, writes the checkpoint, then raises KeyboardInterrupt;
        fit again with the same model_dir resumes."""
        from . import Pipeline, _files

        self._check_data(train, "fit")
        self._check_data(valid, "fit(valid=)")
        extra: Dict[str, Any] = {}
        pipe: Dict[str, Any] = {}
        if isinstance(train, Pipeline):
            extra, pipe = self._fit_options(train)
            files = train.files
        else:
            files = _files(train)
        options = dict(self.options, **extra)
        run = dict(options, train=files)
        if valid is not None:
            if isinstance(valid, Pipeline):
                self._refuse_pipeline_settings(valid, "fit(valid=)", "fit reads valid whole and evaluates it in "
                                               "file order (as ctrain train --valid)")
                have, _ = self._settings(options)
                self._reader_conflicts(valid, have, set(_READER_KEYS),
                                       lambda n: f"fit(valid=): the training data's {n}={have[n]!r} (valid is read with it)")
                vfiles = valid.files
            else:
                vfiles = _files(valid)
            run["valid"] = vfiles
        logs = _ctrain.run_train(_option_values(run), pipe)
        if not logs["input"]["shuffle"]:
            logs["input"]["shuffle_buffer_size"] = 0  # what the run shuffled with (the CLI logs it so too)
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
        files, reader = self._files_and_reader(data, "evaluate")
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
                files, reader = self._files_and_reader(data, "predict")
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
