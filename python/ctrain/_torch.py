"""PyTorch adapters (imported only by .as_torch(); torch is not a dependency of ctrain)."""

import queue
import threading

import torch
from torch.utils.data import IterableDataset, get_worker_info

# How long the consumer waits for the prefetch thread before it checks that the thread is still alive; the
# source's own waits (the data service's deadlines) bound how long a batch can take.
_POLL_SECONDS = 0.1
# How long an iteration that ends early waits for the prefetch thread to finish the batch it is reading.
_JOIN_SECONDS = 30.0


def _accelerator_available() -> bool:
    acc = getattr(torch, "accelerator", None)  # torch >= 2.6: CUDA, XPU, MPS, ...
    if acc is not None and hasattr(acc, "is_available"):
        return bool(acc.is_available())
    return torch.cuda.is_available()


class CtrainIterableDataset(IterableDataset):
    """Batches of a ctrain Pipeline (or DataServicePipeline) as torch tensors.

    Each item is one batch: (labels float32[B], ids int64[B, F], values float32[B, F]), or with
    feature_spec= a dict of tensors (multi-hot entries as EmbeddingBag (ids, offsets[, weights])).
    Without pin_memory the tensors are made with torch.from_numpy (no copy: they share the batch's
    memory, which lives as long as any of them). Load with DataLoader(ds, batch_size=None).

    pin_memory=True copies each batch into page-locked host memory (Tensor.pin_memory()), so a loop
    moves it with .to(device, non_blocking=True) while the next step runs; it needs an accelerator
    (ValueError otherwise). prefetch=N > 0 prepares up to N batches ahead on a background thread (the
    reading, the tensors and the pinning), so the accelerator's step and the input overlap.

    state_dict() gives the source's cursor as of the last batch this dataset handed out, not as of
    the batches read ahead (a DataServicePipeline: resuming there with load_state_dict() delivers
    every batch once, prefetch or not). Under a DataLoader with num_workers = n > 0, worker i reads
    shard i of n of the pipeline's own shard (a local Pipeline only)."""

    def __init__(self, source, pin_memory: bool = False, prefetch: int = 0):
        super().__init__()
        if not isinstance(prefetch, int) or isinstance(prefetch, bool) or prefetch < 0:
            raise ValueError(f"InvalidArgument: as_torch(prefetch={prefetch!r}): a batch count >= 0")
        if pin_memory and not _accelerator_available():
            raise ValueError("InvalidArgument: as_torch(pin_memory=True): no accelerator is available "
                             "(torch.accelerator/torch.cuda), and page-locked memory only speeds up copies to one; "
                             "pass pin_memory=torch.cuda.is_available()")
        self.source = source
        self.pin_memory = bool(pin_memory)
        self.prefetch = prefetch
        self._cursor = None  # the source's state_dict() after the last batch handed out

    def _shard(self):
        source = self.source
        info = get_worker_info()
        if info is not None and info.num_workers > 1:
            if getattr(source, "feature_spec", None) is not None:
                raise ValueError("InvalidArgument: Pipeline(feature_spec=...) reads the files in order on one thread "
                                 "and has no shards: use DataLoader(num_workers=0)")
            if not hasattr(source, "_with"):
                raise ValueError("InvalidArgument: a DataServicePipeline is read by one DataLoader worker "
                                 "(num_workers=0); the data service already reads in parallel")
            n = int(source._pipeline.get("num_shards", 1))
            i = int(source._pipeline.get("shard_index", 0))
            source = source._with(num_shards=n * info.num_workers, shard_index=i * info.num_workers + info.id)
        return source

    def _tensor(self, a):
        t = torch.from_numpy(a)
        return t.pin_memory() if self.pin_memory else t

    def _items(self, source):
        """(batch of tensors, the source's cursor after it or None), in order. The cursor is taken per
        batch only with prefetch: without it, the source's own cursor is the loop's (state_dict())."""
        stateful = self.prefetch > 0 and hasattr(source, "state_dict")
        # A DataServicePipeline's batches unmonitored: __iter__ times them where the loop takes them.
        for batch in source._batches() if hasattr(source, "_batches") else source:
            if isinstance(batch, dict):  # feature_spec=: one array (or EmbeddingBag tuple) per entry
                item = {k: tuple(self._tensor(a) for a in v) if isinstance(v, tuple) else self._tensor(v)
                        for k, v in batch.items()}
            else:
                labels, ids, values = batch
                item = (self._tensor(labels), self._tensor(ids), self._tensor(values))
            yield item, (source.state_dict() if stateful else None)

    def __iter__(self):
        source = self._shard()
        out = self._handed_out(self._items(source))
        if hasattr(source, "_batches"):  # a DataServicePipeline: under `ctrain launch`, each batch is a step
            from ._monitor import _examples, _monitored

            out = _monitored(out, _examples, strict=False)
        yield from out

    def _handed_out(self, items):
        if self.prefetch == 0:
            for item, _ in items:
                yield item
            return
        yield from self._prefetched(items)

    def _prefetched(self, items):
        q = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        done = object()

        def put(x) -> bool:
            while not stop.is_set():
                try:
                    q.put(x, timeout=_POLL_SECONDS)
                    return True
                except queue.Full:
                    continue
            return False

        def produce():
            try:
                for x in items:
                    if not put(x):
                        return
                put((done, None))
            except BaseException as e:  # handed to the consumer, raised there
                put((done, e))
            finally:
                items.close()

        t = threading.Thread(target=produce, name="ctrain-prefetch", daemon=True)
        t.start()
        try:
            while True:
                try:
                    item, cursor = q.get(timeout=_POLL_SECONDS)
                except queue.Empty:
                    if not t.is_alive() and q.empty():
                        raise RuntimeError("Internal: the ctrain prefetch thread ended without a result")
                    continue
                if item is done:
                    if cursor is not None:
                        raise cursor
                    return
                self._cursor = cursor
                yield item
        finally:  # the loop ended, broke early or raised: stop the thread and let it finish its batch
            stop.set()
            t.join(_JOIN_SECONDS)  # a daemon thread still inside a slow read exits at its next batch

    def state_dict(self):
        """The source's cursor as of the last batch handed out ({"data_cursor": ...}, a
        DataServicePipeline's): with prefetch, the one taken with that batch; without it (or before
        the first batch), the source's own state_dict()."""
        if self._cursor is not None:
            return self._cursor
        if not hasattr(self.source, "state_dict"):
            raise TypeError("state_dict(): a local Pipeline has no cursor (a DataServicePipeline has)")
        return self.source.state_dict()

    def load_state_dict(self, state):
        """Resume the source there on the next iter() (DataServicePipeline.load_state_dict)."""
        if not hasattr(self.source, "load_state_dict"):
            raise TypeError("load_state_dict(): a local Pipeline has no cursor (a DataServicePipeline has)")
        self.source.load_state_dict(state)
        self._cursor = None


def make_iterable_dataset(source, pin_memory: bool = False, prefetch: int = 0):
    return CtrainIterableDataset(source, pin_memory=pin_memory, prefetch=prefetch)
