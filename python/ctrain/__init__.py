"""ctrain from Python: fast CTR readers, the input pipeline, the data-service client, and CTR model training
(DeepFM, LR, FM, Wide&Deep, DCN, DCN-V2, DLRM, xDeepFM: ``Trainer(model=...)``).

Names follow tf.data and PyTorch. Every batch is a :class:`Batch` of numpy arrays::

    labels  float32[B]      click label in {0, 1}
    ids     int64[B, F]     feature ids, 0-based (as the model sees them)
    values  float32[B, F]   feature values

where B is the batch size (the last batch of an epoch may be smaller unless
``drop_remainder=True``) and F the field size (39 for Criteo).

Memory: the three arrays of a batch share the C++ batch's buffers (no copy);
they stay valid as long as any of them is referenced, whatever happens to the
pipeline afterwards. They are writable, and each batch has buffers of its own.

Errors raise the exception of their status code with the CLI's located message
(file and line, or record index and byte offset): ValueError (InvalidArgument,
FailedPrecondition, OutOfRange, DataLoss: bad data or options), FileNotFoundError,
PermissionError, FileExistsError, OSError (I/O, Unavailable services),
NotImplementedError, RuntimeError (anything else). Unknown option names raise
TypeError.

Blocking calls run with the GIL released; Ctrl-C raises KeyboardInterrupt in the
waiting Python thread (see docs/python.md for what happens to the call).
See docs/python.md.
"""

from __future__ import annotations

import collections
import difflib
import inspect as _inspect
import json
import os
import subprocess
import sys
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union


def _load_extension():
    """Imports the C++ module with RTLD_DEEPBIND: it and the libraries it links (Debian's gRPC,
    protobuf and abseil) resolve their symbols among themselves first. TensorFlow loads its own
    copies of those libraries into the global scope (RTLD_GLOBAL); a client imported after it would
    otherwise call TensorFlow's protobuf with Debian's data and crash (tests/python/
    test_data_service.py imports tensorflow first)."""
    flags = sys.getdlopenflags()
    deepbind = getattr(os, "RTLD_DEEPBIND", 0)
    if deepbind:
        sys.setdlopenflags(os.RTLD_NOW | os.RTLD_LOCAL | deepbind)
    try:
        from . import _ctrain as module
    finally:
        sys.setdlopenflags(flags)
    return module


_ctrain = _load_extension()

__all__ = [
    "Batch",
    "Pipeline",
    "DataService",
    "DataServicePipeline",
    "read",
    "inspect",
    "convert",
    "cli_path",
    "Trainer",
    "option_schema",
    "monitor",
    "monitor_steps",
]

__version__ = "0.1.0"

#: One mini-batch: labels float32[B], ids int64[B, F], values float32[B, F].
Batch = collections.namedtuple("Batch", ["labels", "ids", "values"])

# Reader options (the CLI's data flags, cli/data_flags.h), shared by every reading function.
_READER_KEYS = (
    "format",
    "compression",
    "field_size",
    "id_base",
    "feature_size",
    "feature_map",
    "skip_corrupt_records",
    "max_skipped_records",
    "max_line_bytes",
    "pipe_timeout_ms",
    "criteo_pad_missing_trailing",
)

PathLike = Union[str, "os.PathLike[str]"]

# With feature_spec=: the reader options that still apply (the spec decides the rest), and the
# Pipeline settings honoured (it reads the files in order on one C++ thread); others are refused.
_SPEC_READER_KEYS = ("compression", "max_line_bytes")
_SPEC_PIPELINE_KEYS = ("batch_size", "epochs", "drop_remainder")


def _refuse_with_spec(where: str, given: Dict[str, Any], allowed) -> None:
    bad = [f"{k}={v!r}" for k, v in given.items()
           if k not in allowed and not (k in ("format", "compression") and v == "auto")]
    if bad:
        raise ValueError(f"InvalidArgument: {where}({', '.join(bad)}) does not apply with feature_spec=: the spec "
                         f"decides the layout and the rows are read in file order; supported: "
                         f"{', '.join(allowed)}")


def _files(files: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    if isinstance(files, (str, os.PathLike)):
        return [os.fspath(files)]
    out = [os.fspath(f) for f in files]
    if not out:
        raise ValueError("InvalidArgument: no input files given")
    return out


def _split_options(options: Dict[str, Any]):
    reader = {k: v for k, v in options.items() if k in _READER_KEYS}
    rest = {k: v for k, v in options.items() if k not in _READER_KEYS}
    return reader, rest


class Pipeline:
    """An iterable of :class:`Batch` read from files by ctrain's input pipeline.

    ``Pipeline(files, format="auto", batch_size=1024, ...)`` reads LibSVM, TFRecord
    (tf.train.Example, NONE/GZIP/ZLIB) or raw Criteo TSV/CSV through the stages
    shard -> interleave -> cache -> shuffle -> batch -> parse -> repeat -> prefetch
    (docs/pipeline.md), on C++ threads. Each ``iter()`` starts a new pass over all
    ``epochs`` (like a tf.data.Dataset), so a Pipeline can be iterated again.

    Args:
      files: a path, a glob, a directory, "-" (stdin), a FIFO or "pipe:<dir>/<channel>",
        or a list of them (data/file_list.h).
      batch_size: rows per batch (>= 1).
      shuffle_buffer: records in the shuffle buffer (0: no shuffling). tf.data's shuffle(buffer_size).
      seed: the shuffle seed (shuffle_seed).
      reshuffle_each_iteration: a new order each epoch.
      epochs: passes over the data (-1: forever). tf.data's repeat(count).
      drop_remainder: drop a last partial batch.
      num_shards, shard_index: read one shard (whole files when there are at least
        as many files as shards, else every num_shards-th record).
      cache: "" (none), "memory" or a file path: later epochs replay the first.
      prefetch: batches prepared ahead (prefetch_buffer_size; 0: none).
      num_parallel_reads: files read at once. num_parallel_calls: parse threads.
      deterministic: reproducible interleave order.
      format: "auto", "libsvm", "tfrecord", "criteo-tsv", "criteo-csv".
      compression: "auto", "none", "gzip", "zlib".
      field_size: F, features per example (39). id_base: LibSVM ids start here (0 or 1).
      feature_size: Criteo hash buckets. feature_map: Criteo vocabulary file.
      skip_corrupt_records, max_skipped_records, max_line_bytes, pipe_timeout_ms,
        criteo_pad_missing_trailing: as the CLI's flags of the same names.
      feature_spec: a feature spec file (docs/feature-spec.md). The batches are then dicts with
        one numpy array per spec entry, as :func:`read` returns (multi-hot entries as
        EmbeddingBag (ids, offsets[, weights])), read in file order on one C++ thread; only
        batch_size, epochs, drop_remainder, compression and max_line_bytes apply (any other
        setting given is a ValueError naming it). A batch never spans two epochs.
      The other data::PipelineOptions names (order, cache_max_bytes, count_shard_records;
      ``_ctrain.pipeline_option_names()``) are passed through; shuffle_buffer_size,
      shuffle_seed and prefetch_buffer_size may be given for shuffle_buffer, seed and prefetch
      (not both spellings: TypeError).

    ``Trainer.fit(pipeline)`` trains with the options given here explicitly (defaults do not
    count), and refuses one the Trainer sets to another value or the run cannot use
    (ValueError naming it): see Trainer.fit.

    Raises at construction: TypeError for an unknown option name (with the closest name),
    ValueError naming the option for a bad value (batch_size=0, compression="lz4", ...).
    At ``iter()`` or ``next()``: ValueError for bad data (the file and line / record and
    offset), FileNotFoundError for a missing input or feature_map.
    """

    # Keyword -> PipelineOptions name, where they differ (either spelling may be given, not both).
    _ALIASES = {"shuffle_buffer": "shuffle_buffer_size", "seed": "shuffle_seed", "prefetch": "prefetch_buffer_size"}

    def __new__(cls, *args: Any, **kwargs: Any):
        # The options given explicitly (not left at their defaults), by PipelineOptions / reader
        # name -> the keyword the caller wrote: Trainer.fit takes these and only these.
        for alias, name in cls._ALIASES.items():
            if alias in kwargs and name in kwargs:
                raise TypeError(f"Pipeline: {alias} and {name} are the same option: give one")
        self = super().__new__(cls)
        self._given = {cls._ALIASES.get(k, k): k for k in kwargs if k != "files"}
        return self

    def __init__(self, files, *, batch_size: int = 1024, shuffle_buffer: int = 0, seed: int = 0,
                 epochs: int = 1, drop_remainder: bool = False, num_shards: int = 1, shard_index: int = 0,
                 cache: str = "", prefetch: int = 2, num_parallel_reads: int = 1, num_parallel_calls: int = 1,
                 deterministic: bool = True, reshuffle_each_iteration: bool = True, format: str = "auto",
                 feature_spec: Optional[PathLike] = None, **options: Any):
        self.files = _files(files)
        self.feature_spec = os.fspath(feature_spec) if feature_spec is not None else None
        if self.feature_spec is not None:
            local = dict(batch_size=batch_size, shuffle_buffer=shuffle_buffer, seed=seed, epochs=epochs,
                         drop_remainder=drop_remainder, num_shards=num_shards, shard_index=shard_index, cache=cache,
                         prefetch=prefetch, num_parallel_reads=num_parallel_reads,
                         num_parallel_calls=num_parallel_calls, deterministic=deterministic,
                         reshuffle_each_iteration=reshuffle_each_iteration, format=format)
            given = {spelled: (options[spelled] if spelled in options else local[spelled])
                     for spelled in self._given.values() if spelled != "feature_spec"}
            _refuse_with_spec("Pipeline", given, _SPEC_PIPELINE_KEYS + _SPEC_READER_KEYS)
        known = set(_READER_KEYS) | set(_ctrain.pipeline_option_names())
        for k in options:
            if k not in known:
                names = sorted(known | set(_inspect.signature(Pipeline.__init__).parameters) - {"self", "options"})
                close = difflib.get_close_matches(k, names, n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                raise TypeError(f"Pipeline: unknown option '{k}'{hint}")
        reader, rest = _split_options(dict(options, format=format))
        self._reader = reader
        self._pipeline = dict(
            batch_size=batch_size,
            shuffle_buffer_size=shuffle_buffer,
            shuffle_seed=seed,
            epochs=epochs,
            drop_remainder=drop_remainder,
            num_shards=num_shards,
            shard_index=shard_index,
            cache=cache,
            prefetch_buffer_size=prefetch,
            num_parallel_reads=num_parallel_reads,
            num_parallel_calls=num_parallel_calls,
            deterministic=deterministic,
            reshuffle_each_iteration=reshuffle_each_iteration,
        )
        # PipelineOptions names given as such (shuffle_buffer_size=, prefetch_buffer_size=, order=, ...)
        # win over the keywords' defaults (they were overwritten by them before).
        self._pipeline.update(rest)
        if self.feature_spec is not None:
            self._reader = {k: v for k, v in reader.items() if k in _SPEC_READER_KEYS}
        _ctrain.check_pipeline_options(self._reader, self._pipeline)
        self.batch_size = self._pipeline["batch_size"]
        self.field_size = int(reader.get("field_size") or 39)
        self._last: Optional[PipelineIterator] = None

    def __iter__(self) -> "PipelineIterator":
        if self.feature_spec is not None:
            p = self._pipeline
            self._last = PipelineIterator(_ctrain.SpecBatchIterator(
                self.files, self.feature_spec, self._reader, int(p["batch_size"]), int(p["epochs"]),
                bool(p["drop_remainder"])))
            return self._last
        self._last = PipelineIterator(_ctrain.PipelineIterator(self.files, self._reader, self._pipeline))
        return self._last

    def stats(self) -> Dict[str, Any]:
        """The last iteration's pipeline stats (data/pipeline_stats.h ToJson): records, batches,
        bytes_read, skipped lines, queue fill, input wait. Empty before the first iter().
        (The Pipeline keeps its last iterator for this: an iteration left before its end keeps
        its threads until the next iter(), its close(), or the Pipeline's deletion.)"""
        return self._last.stats() if self._last is not None else {}

    def as_torch(self, pin_memory: bool = False, prefetch: int = 0):
        """A torch.utils.data.IterableDataset over this pipeline's batches (imports torch now).

        Each item is a whole batch of torch tensors sharing the numpy memory
        (torch.from_numpy): (labels float32[B], ids int64[B, F], values float32[B, F]), or
        with feature_spec= a dict of them (multi-hot as EmbeddingBag (ids, offsets[, weights])).
        Use it with ``DataLoader(ds, batch_size=None)`` (num_workers=0: the pipeline
        has its own threads). With num_workers > 0, worker i of n reads shard i of n
        (num_shards/shard_index are multiplied out).

        For an accelerator: ``pin_memory=True`` gives page-locked tensors, which the loop
        moves with ``.to(device, non_blocking=True)`` (ValueError when no accelerator is
        available), and ``prefetch=N`` prepares N batches ahead on a background thread."""
        from ._torch import make_iterable_dataset

        return make_iterable_dataset(self, pin_memory=pin_memory, prefetch=prefetch)

    def as_tf(self):
        """A tf.data.Dataset whose elements are this pipeline's batches (imports tensorflow now).

        Without feature_spec: (labels float32[None], ids int64[None, F], values float32[None, F]).
        With feature_spec=: a dict with one entry per spec entry, as the numpy batches: dense
        and single-id entries as tensors of their dtype with the batch dimension None;
        multi-hot entries as tf.RaggedTensor ids [None, None] (int64), or (ids, weights) ragged
        alike when the entry has weights (the EmbeddingBag offsets become the row splits). The
        signature comes from the spec (nothing is read ahead)."""
        if self.feature_spec is not None:
            from ._tf import make_spec_dataset

            return make_spec_dataset(self, _ctrain.spec_layout(self.feature_spec))
        from ._tf import make_dataset

        return make_dataset(self)

    def _with(self, **changes) -> "Pipeline":
        p = Pipeline.__new__(Pipeline)
        p.__dict__.update(self.__dict__)
        p._pipeline = dict(self._pipeline, **changes)
        p._given = dict(self._given, **{k: k for k in changes})
        p._last = None
        return p


class PipelineIterator:
    """One pass of a :class:`Pipeline`: yields :class:`Batch`. ``close()`` stops the threads
    early (also done when the iterator is garbage-collected or exhausted)."""

    def __init__(self, impl):
        self._impl = impl

    def __iter__(self):
        return self

    def __next__(self):
        out = self._impl.next()
        return out if isinstance(out, dict) else Batch(*out)  # feature_spec=: a dict of arrays

    def close(self) -> None:
        if hasattr(self._impl, "close"):
            self._impl.close()

    def stats(self) -> Dict[str, Any]:
        if not hasattr(self._impl, "stats_json"):
            return {}  # feature_spec=: no pipeline stages
        return json.loads(self._impl.stats_json())

    @property
    def files(self) -> List[str]:
        """The expanded input list (globs, directories)."""
        return self._impl.files()

    @property
    def warnings(self) -> List[str]:
        return self._impl.warnings() if hasattr(self._impl, "warnings") else []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read(path: PathLike, *, feature_spec: Optional[PathLike] = None, **reader: Any):
    """Every example of one file, in file order, as one :class:`Batch` (labels float32[N],
    ids int64[N, F], values float32[N, F]); N = the file's examples.

    With ``feature_spec="spec.json"`` (docs/feature-spec.md: any tf.Example keys, a LibSVM
    field map, libFFM) it returns a dict with one numpy array per spec entry instead
    (docs/python.md#feature-specs): ``"label"`` float32[N]; a numeric entry float32[N]
    (``length`` n: [N, n]); a one-hot categorical entry int64[N] ([N, n]); a multi-hot entry
    (var_len, LibSVM and libFFM fields) the tuple ``(ids int64[nnz], offsets int64[N]
    [, weights float32[nnz]])`` in ``torch.nn.EmbeddingBag``'s layout (``offsets[i]`` = where
    row i starts in ids; weights = per_sample_weights for mode="sum", absent for a var_len
    field with pooling sum). Ids are the spec's (the trainer's embedding rows). Reader
    options then: compression, max_line_bytes.

    Reads like ``ctrain train`` / the C++ ExampleReader with the same reader options
    (format="auto", compression="auto", field_size=39, id_base=0, feature_size,
    feature_map, skip_corrupt_records, max_line_bytes, ...).

    Raises: ValueError naming the file and line (text) or record index and byte
    offset (TFRecord) for bad data; FileNotFoundError; TypeError for an unknown option.
    """
    if feature_spec is not None:
        _refuse_with_spec("read", reader, _SPEC_READER_KEYS)
        return _ctrain.read_spec(os.fspath(path), os.fspath(feature_spec), dict(reader))
    return Batch(*_ctrain.read(os.fspath(path), dict(reader)))


# ---- the CLI binary (installed into the package) --------------------------------------------

_CODE_EXCEPTIONS = {
    "InvalidArgument": ValueError,
    "FailedPrecondition": ValueError,
    "OutOfRange": ValueError,
    "DataLoss": ValueError,
    "NotFound": FileNotFoundError,
    "PermissionDenied": PermissionError,
    "Unauthenticated": PermissionError,
    "AlreadyExists": FileExistsError,
    "Unavailable": OSError,
    "DeadlineExceeded": OSError,
    "Unimplemented": NotImplementedError,
}


def cli_path() -> str:
    """The path of the ``ctrain`` CLI binary this package runs (``python -m ctrain``)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ctrain")
    return os.environ.get("CTRAIN_CLI", here)


def _flag_args(flags: Dict[str, Any]) -> List[str]:
    args: List[str] = []
    for k, v in flags.items():
        if v is None or v is False:
            continue
        flag = "--" + k.replace("_", "-")
        if v is True:
            args.append(flag)
        else:
            args += [flag, os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    return args


def _run_cli(args: List[str]) -> str:
    """Runs the CLI; returns stdout. A failure raises the exception of the status code
    in the CLI's message ("ctrain: <Code>: <message>"), with that message."""
    p = subprocess.run([cli_path()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if l.startswith("ctrain: ") and "warning:" not in l]
        msg = lines[-1][len("ctrain: "):] if lines else p.stderr.strip()
        code = msg.split(":", 1)[0]
        exc = _CODE_EXCEPTIONS.get(code, ValueError if p.returncode == 2 else RuntimeError)
        raise exc(msg)
    return p.stdout


def inspect(paths: Union[PathLike, Sequence[PathLike]], **flags: Any) -> List[Dict[str, Any]]:
    """What ``ctrain inspect --json`` says about each input (a file, glob, directory, a
    checkpoint or model directory): format, compression, record count, schema, per-field
    value ranges and distinct-id counts. Reads every record, so returning means every
    file is intact. flags: format, compression, id_base, pipe_timeout_ms, max_line_bytes,
    criteo_pad_missing_trailing.

    Returns one dict per input (the CLI's JSON objects). Raises as the CLI fails
    (ValueError with the located message for bad data, FileNotFoundError, ...)."""
    out = _run_cli(["inspect", "--json"] + _flag_args(flags) + _files(paths))
    docs = [json.loads(l) for l in out.splitlines() if l.strip()]
    if len(docs) == 1 and isinstance(docs[0], list):
        return docs[0]
    return docs


def convert(input: Union[PathLike, Sequence[PathLike]], output: PathLike, **flags: Any) -> None:
    """``ctrain convert -i INPUT... -o OUTPUT [flags]``: rewrites examples between formats
    (LibSVM, TFRecord, raw Criteo TSV/CSV -> the seed schema). flags are the CLI's, with
    underscores: format, compression (the output's), input_compression, output_format,
    field_size, id_base, output_id_base, feature_size, feature_map, vocab_min_count, ...
    (``python -m ctrain convert --help``). Raises as the CLI fails."""
    args = ["convert"]
    for f in _files(input):
        args += ["-i", f]
    args += ["-o", os.fspath(output)] + _flag_args(flags)
    _run_cli(args)


# ---- data service ----------------------------------------------------------------------------


class DataService:
    """A client of a ctrain data service (docs/data-service.md): ``DataService("host:port")``.

    Security: token_file (or CTRAIN_SERVICE_TOKEN in the environment), tls_ca,
    tls_cert, tls_key, as the CLI's flags. ``training_job_name``: the job this client
    belongs to, sent on every call; a service of another job refuses it (``ctrain train
    --training-job-name``). Default: CTRAIN_TRAINING_JOB_NAME from the environment, which
    ``ctrain launch`` sets for a user's script ("" = none)."""

    def __init__(self, address: str, *, token_file: Optional[str] = None, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
                 training_job_name: Optional[str] = None):
        self.address = address
        if training_job_name is None:
            training_job_name = os.environ.get("CTRAIN_TRAINING_JOB_NAME", "")
        self._security = dict(token_file=token_file, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
                              training_job_name=training_job_name)

    @classmethod
    def from_env(cls, **security: Any) -> "DataService":
        """The data service of the ``ctrain launch`` job this script runs in (docs/launch.md#entry-points):
        the dispatcher in CTRAIN_DATA_SERVICE, the job's name in CTRAIN_TRAINING_JOB_NAME, the token in
        CTRAIN_SERVICE_TOKEN. The train channel's path on the data hosts is CTRAIN_DATA_SERVICE_TRAIN.

        Raises RuntimeError when CTRAIN_DATA_SERVICE is not set (a job without data_group has no
        data service: read the files with :class:`Pipeline`)."""
        address = os.environ.get("CTRAIN_DATA_SERVICE", "")
        if not address:
            raise RuntimeError("CTRAIN_DATA_SERVICE is not set: ctrain launch sets it for a script in a job with a "
                               "data_group (a heterogeneous cluster); without one, read the channel's files with "
                               "ctrain.Pipeline(os.environ['SM_CHANNEL_TRAIN'])")
        return cls(address, **security)

    def pipeline(self, files, *, batch_size: int = 1024, epochs: int = 1, shuffle_buffer: int = 0,
                 seed: int = 0, drop_remainder: bool = False, num_parallel_reads: int = 1,
                 processing_mode: str = "distributed_epoch", job_name: str = "", num_splits: int = 8,
                 consumer_index: int = 0, compression: str = "auto", buffer_bytes: int = 256 << 20,
                 max_open_splits: int = 4, format: str = "auto", feature_spec: Optional[PathLike] = None,
                 **reader: Any) -> "DataServicePipeline":
        """The same iterable of :class:`Batch` as :class:`Pipeline`, read and batched by the
        service's workers (``ctrain train --data-service``'s client). ``files`` are paths on
        the workers' hosts. Batches come split by split in the order the dispatcher hands
        them out, exactly once per epoch. See :class:`DataServicePipeline` for resuming.

        ``feature_spec="spec.json"`` (a file here; docs/feature-spec.md): the workers read the
        files through the spec and each batch is a dict of its arrays, as
        ``Pipeline(..., feature_spec=)`` gives (multi-hot as EmbeddingBag (ids, offsets[, weights])).
        A split reads whole files (at least as many files as splits) or every num_splits-th record
        of each, in file order: shuffle_buffer, num_parallel_reads > 1 and reader options other
        than compression and max_line_bytes are refused (ValueError naming them)."""
        reader = dict(reader, format=format)
        bad = [k for k in reader if k not in _READER_KEYS]
        if bad:
            raise TypeError(f"unknown option(s) {bad}")
        if feature_spec is not None:
            given = dict(reader)
            if shuffle_buffer:
                given["shuffle_buffer"] = shuffle_buffer
            if num_parallel_reads != 1:
                given["num_parallel_reads"] = num_parallel_reads
            _refuse_with_spec("DataService.pipeline", given, _SPEC_READER_KEYS)
            reader = {k: v for k, v in reader.items() if k in _SPEC_READER_KEYS}
        client = dict(self._security, processing_mode=processing_mode, job_name=job_name, num_splits=num_splits,
                      consumer_index=consumer_index, compression=compression, buffer_bytes=buffer_bytes,
                      max_open_splits=max_open_splits)
        pipeline = dict(shuffle_buffer_size=shuffle_buffer, num_parallel_reads=num_parallel_reads,
                        drop_remainder=drop_remainder)
        return DataServicePipeline(self.address, _files(files), reader, client, pipeline, batch_size, epochs, seed,
                                   os.fspath(feature_spec) if feature_spec is not None else None)


class DataServicePipeline:
    """An iterable of :class:`Batch` fed by data-service workers, resumable like torchdata's
    StatefulDataLoader:

    * ``state_dict()`` -> {"data_cursor": {...}}: the position after the batches
      delivered so far (the job, the epoch, the splits done and the batches taken of
      the open ones), the same cursor the CLI stores in its checkpoints.
    * ``load_state_dict(state)``: the next ``iter()`` resumes there (another process
      may do it: the dispatcher hands the consumer's remaining splits back, and the
      workers skip the batches already taken), so every batch is delivered once.

    Each ``iter()`` joins the job (created on first use) and reads all epochs; at the end
    it releases the job. Ctrl-C stops a wait for the service (KeyboardInterrupt; the
    iteration is over, but state_dict() still gives the position)."""

    def __init__(self, address, files, reader, client, pipeline, batch_size, epochs, seed, feature_spec=None):
        self._args = (address, files, reader, client, pipeline, int(batch_size), int(epochs), int(seed))
        self.feature_spec = feature_spec  # a spec file: batches are dicts of its arrays
        self._resume: Optional[Dict[str, Any]] = None
        self._it = None

    def __iter__(self) -> Iterator[Batch]:
        # Under `ctrain launch`, each batch the loop takes is a monitored step (ctrain.monitor_steps).
        from ._monitor import _examples, _monitored

        return _monitored(self._batches(), _examples, strict=False)

    def _batches(self) -> Iterator[Batch]:
        """The batches, unmonitored (as_torch(prefetch=) times them where its loop takes them)."""
        cursor = json.dumps(self._resume) if self._resume is not None else ""
        self._resume = None
        self._it = _ctrain.DataServiceIterator(*self._args, cursor, self.feature_spec or "")
        it = self._it

        def gen():
            while True:
                try:
                    b = it.next()
                except StopIteration:
                    return
                yield b if isinstance(b, dict) else Batch(*b)  # feature_spec=: a dict of arrays

        return gen()

    def state_dict(self) -> Dict[str, Any]:
        if self._it is None:
            return {"data_cursor": self._resume}
        return {"data_cursor": json.loads(self._it.cursor_json())}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if not isinstance(state, dict) or "data_cursor" not in state:
            raise ValueError("load_state_dict: expected a dict from state_dict() with key 'data_cursor'")
        self._resume = state["data_cursor"]
        self._it = None

    def metrics(self) -> Dict[str, Any]:
        """The client's figures (input wait, failovers, duplicates dropped, bytes)."""
        return json.loads(self._it.metrics_json()) if self._it is not None else {}

    @property
    def field_size(self) -> Optional[int]:
        """F of the batches' ids and values [B, F] when given as field_size= (None: as the files hold)."""
        f = self._args[2].get("field_size")
        return int(f) if f is not None else None

    def as_tf(self):
        """A tf.data.Dataset of these batches (imports tensorflow now): (labels float32[None],
        ids int64[None, F], values float32[None, F]), F as given by field_size= (else None); with
        feature_spec= a dict of the spec's entries as :meth:`Pipeline.as_tf` gives (multi-hot
        ragged). Each iteration of the dataset is one iter() of this pipeline: a job joined, read,
        released."""
        if self.feature_spec is not None:
            from ._tf import make_spec_dataset

            return make_spec_dataset(self, _ctrain.spec_layout(self.feature_spec))
        from ._tf import make_dataset

        return make_dataset(self)

    def as_torch(self, pin_memory: bool = False, prefetch: int = 0):
        """A torch IterableDataset over these batches (as :meth:`Pipeline.as_torch`, single worker).
        Its state_dict()/load_state_dict() are this pipeline's cursor as of the last batch it
        handed out (batches prefetched but not yet taken are delivered again after a resume)."""
        from ._torch import make_iterable_dataset

        return make_iterable_dataset(self, pin_memory=pin_memory, prefetch=prefetch)


from ._monitor import monitor, monitor_steps  # noqa: E402  (after DataServicePipeline, which it refuses)


def __getattr__(name: str):
    if name in ("Trainer", "option_schema"):
        from . import _trainer

        return getattr(_trainer, name)
    raise AttributeError(name)
