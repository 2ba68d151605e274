"""PyTorch adapters (imported only by .as_torch(); torch is not a dependency of ctrain)."""

import torch
from torch.utils.data import IterableDataset, get_worker_info


class CtrainIterableDataset(IterableDataset):
    """Batches of a ctrain Pipeline (or DataServicePipeline) as torch tensors.

    Each item is one batch: (labels float32[B], ids int64[B, F], values float32[B, F]),
    made with torch.from_numpy (no copy: the tensors share the batch's memory, which lives
    as long as any of them). Load with DataLoader(ds, batch_size=None). Under a DataLoader
    with num_workers = n > 0, worker i reads shard i of n of the pipeline's own shard (a
    local Pipeline only)."""

    def __init__(self, source):
        super().__init__()
        self.source = source

    def __iter__(self):
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
        for batch in source:
            if isinstance(batch, dict):  # feature_spec=: one array (or EmbeddingBag tuple) per entry
                yield {k: tuple(torch.from_numpy(a) for a in v) if isinstance(v, tuple) else torch.from_numpy(v)
                       for k, v in batch.items()}
                continue
            labels, ids, values = batch
            yield torch.from_numpy(labels), torch.from_numpy(ids), torch.from_numpy(values)


def make_iterable_dataset(source):
    return CtrainIterableDataset(source)
