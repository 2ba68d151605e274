"""A Python process's monitoring under ``ctrain launch`` (python/src/script_monitor.h; docs/launch.md,
"Monitoring"): what ``ctrain report`` reads to price a user's script's job."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterable, Iterator, Optional

from . import _ctrain


def monitor(role: str = "trainer") -> bool:
    """Starts this process's monitoring when it runs under ``ctrain launch`` (CTRAIN_MONITOR_DIR set):
    the process's CPU (percent of one core) and RSS (MiB) every CTRAIN_MONITOR_INTERVAL_MS, into the
    launcher's monitor directory, as ctrain's own roles write them (metrics.jsonl, TensorBoard events),
    until the process exits. ``role`` is the role.json role the process stands for ("trainer",
    "data-worker", ...): one per process.

    Returns False, and does nothing, when CTRAIN_MONITOR_DIR is unset (not launched). Raises
    ValueError for a role name with "/" (or empty), another role than the one the process started
    with, or a bad CTRAIN_MONITOR_INTERVAL_MS; OSError when the directory cannot be written (that
    failure is final for the process)."""
    return bool(_ctrain.monitor_start(role))


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and len(getattr(x, "shape", ())) > 0


def _examples(batch: Any) -> int:
    """The number of examples of a batch:
    - a ctrain Batch: its labels; an array or tensor: its first dimension;
    - a dict: its "label" or "labels" entry, else its first entry's count (a dict of feature arrays);
    - a tuple: its first item's count when that is an array, a tensor, a dict or a Batch
      ((labels, ids, values), (features_dict, labels): tf.data's and Keras's shape);
    - a list: the same when its first item is an array or tensor (a DataLoader's collated
      [labels, ...]), else its length (a list of rows or of row dicts).
    Anything else: TypeError naming ``monitor_steps(..., examples=)``."""
    if hasattr(batch, "labels"):
        return _examples(batch.labels)
    if _is_array(batch):
        return int(batch.shape[0])
    if isinstance(batch, dict):
        for key in ("label", "labels"):
            if key in batch:
                return _examples(batch[key])
        if batch:
            return _examples(next(iter(batch.values())))
    elif isinstance(batch, (tuple, list)):
        if not batch:
            return 0
        first = batch[0]
        if _is_array(first) or hasattr(first, "labels") or (isinstance(batch, tuple) and isinstance(first, dict)):
            return _examples(first)
        return len(batch)
    elif hasattr(batch, "__len__"):
        return len(batch)
    raise TypeError(f"monitor_steps: cannot count the examples of a {type(batch).__name__} batch: "
                    "pass examples=lambda batch: <its number of examples>")


def _feeds_data_service(batches: Any) -> bool:
    """A DataServicePipeline, its .as_torch() dataset, or a DataLoader over that dataset: they record
    their batches themselves."""
    from . import DataServicePipeline

    for x in (batches, getattr(batches, "dataset", None)):
        if isinstance(x, DataServicePipeline) or isinstance(getattr(x, "source", None), DataServicePipeline):
            return True
    return False


def monitor_steps(batches: Iterable[Any], examples: Optional[Callable[[Any], int]] = None) -> Iterator[Any]:
    """Yields the items of ``batches`` (any iterable: a torch DataLoader, a tf.data.Dataset, a generator)
    and, under ``ctrain launch``, records each as a training step of this process (role "trainer"):
    ``train/step_time_ms`` from one batch handed out to the next, ``train/input_wait_percent`` the part
    spent waiting for the next batch, ``train/examples_per_sec``; a line per step (as ctrain's trainer writes), no loss. The
    first batch of each loop is no step (the time before it is start-up). ``examples(batch)`` counts a
    batch's examples (default: see _examples; a batch it cannot count is a TypeError, with or without
    the launcher). A loop inside a monitored loop (a validation pass) yields its batches unrecorded.

    So ``ctrain report`` prices a script that is fed by something other than ctrain's data service;
    ``DataService(...).pipeline(...)`` and its ``.as_torch()`` record their batches themselves (wrapping
    one, or a DataLoader over one, is a TypeError: every step would count twice). Without
    CTRAIN_MONITOR_DIR it records nothing."""
    if _feeds_data_service(batches):
        raise TypeError("monitor_steps: a data-service pipeline (or its .as_torch() dataset) records its batches "
                        "itself")
    return _monitored(batches, examples or _examples, strict=True)


_warned = False
_depth = 0  # monitored loops running now (an inner one is not recorded)


def _monitored(batches: Iterable[Any], count: Callable[[Any], int], strict: bool) -> Iterator[Any]:
    """monitor_steps without its check. strict=False (a DataServicePipeline's own recording): a
    monitor that cannot start is said once on stderr and the batches still flow."""
    global _warned, _depth
    try:
        active = monitor("trainer")
    except (ValueError, OSError) as e:
        if strict:
            raise
        if not _warned:
            print(f"ctrain: not monitoring this pipeline's batches: {e}", file=sys.stderr, flush=True)
            _warned = True
        active = False
    it = iter(batches)
    record = active and _depth == 0
    if record:
        _depth += 1
        _ctrain.monitor_begin()
    try:
        while True:
            asked = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                return
            n = int(count(batch))  # counted with or without the launcher: a batch it cannot count fails alike
            if record:
                _ctrain.monitor_step(time.perf_counter() - asked, n)
            yield batch
    finally:
        if record:
            _depth -= 1
        close = getattr(it, "close", None)
        if close is not None:
            close()  # a loop that broke early ends the source now (a generator's finally)
