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
    ValueError for another role than the one the process started with, a bad
    CTRAIN_MONITOR_INTERVAL_MS, or a directory that cannot be written."""
    return bool(_ctrain.monitor_start(role))


def _examples(batch: Any) -> int:
    """The number of examples of a batch: a ctrain Batch's labels, a spec dict's "label", the first
    item of a tuple or list (a DataLoader's (labels, ...)), else len(batch)."""
    if hasattr(batch, "labels"):
        return len(batch.labels)
    if isinstance(batch, dict) and "label" in batch:
        return len(batch["label"])
    if isinstance(batch, (tuple, list)) and batch:
        return len(batch[0])
    return len(batch)


def monitor_steps(batches: Iterable[Any], examples: Optional[Callable[[Any], int]] = None) -> Iterator[Any]:
    """Yields the items of ``batches`` (any iterable: a torch DataLoader, a tf.data.Dataset, a generator)
    and, under ``ctrain launch``, records each as a training step of this process (role "trainer"):
    ``train/step_time_ms`` from one batch handed out to the next, ``train/input_wait_percent`` the part
    spent waiting for the next batch, ``train/examples_per_sec``; one line per 10 steps, no loss. The
    first batch of each loop is no step (the time before it is start-up). ``examples(batch)`` counts a
    batch's examples (default: a Batch's labels, a dict's "label", a tuple's first item, else len()).

    So ``ctrain report`` prices a script that is fed by something other than ctrain's data service;
    ``DataService(...).pipeline(...)`` records its batches itself (wrapping it is a TypeError: every
    step would count twice). Without CTRAIN_MONITOR_DIR it yields the batches and records nothing."""
    from . import DataServicePipeline

    if isinstance(batches, DataServicePipeline):
        raise TypeError("monitor_steps(DataServicePipeline): a data-service pipeline records its batches itself")
    return _monitored(batches, examples or _examples, strict=True)


_warned = False


def _monitored(batches: Iterable[Any], count: Callable[[Any], int], strict: bool) -> Iterator[Any]:
    """monitor_steps without its check. strict=False (a DataServicePipeline's own recording): a
    monitor that cannot start is said once on stderr and the batches still flow."""
    global _warned
    try:
        active = monitor("trainer")
    except ValueError as e:
        if strict:
            raise
        if not _warned:
            print(f"ctrain: not monitoring this pipeline's batches: {e}", file=sys.stderr, flush=True)
            _warned = True
        active = False
    if not active:
        yield from batches
        return
    _ctrain.monitor_begin()
    it = iter(batches)
    try:
        while True:
            asked = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                return
            _ctrain.monitor_step(time.perf_counter() - asked, int(count(batch)))
            yield batch
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()  # a loop that broke early ends the source now (a generator's finally)
