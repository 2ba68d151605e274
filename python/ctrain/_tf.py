"""TensorFlow adapter (imported only by .as_tf(); tensorflow is not a dependency of ctrain)."""

import numpy as np
import tensorflow as tf


def make_dataset(pipeline):
    """A tf.data.Dataset whose elements are the pipeline's batches, with output_signature
    (labels float32[None], ids int64[None, F], values float32[None, F])."""
    f = pipeline.field_size
    signature = (
        tf.TensorSpec(shape=(None,), dtype=tf.float32),
        tf.TensorSpec(shape=(None, f), dtype=tf.int64),
        tf.TensorSpec(shape=(None, f), dtype=tf.float32),
    )

    def gen():
        for b in pipeline:
            yield b.labels, b.ids, b.values

    return tf.data.Dataset.from_generator(gen, output_signature=signature)


def _bag_ragged(bag):
    """An EmbeddingBag (ids, offsets[, weights]) as ragged [B, None] tensors on the same row splits."""
    ids, offsets = bag[0], bag[1]
    splits = np.append(offsets, np.int64(len(ids))).astype(np.int64)
    out = tuple(tf.RaggedTensor.from_row_splits(a, splits, validate=False) for a in (ids,) + tuple(bag[2:]))
    return out[0] if len(out) == 1 else out


def _spec_of(value):
    if isinstance(value, tuple):  # a multi-hot entry: ids (and weights), ragged
        specs = tuple(tf.RaggedTensorSpec(shape=(None, None), dtype=tf.as_dtype(a.dtype), ragged_rank=1,
                                          row_splits_dtype=tf.int64) for a in (value[0],) + tuple(value[2:]))
        return specs[0] if len(specs) == 1 else specs
    return tf.TensorSpec(shape=(None,) + value.shape[1:], dtype=tf.as_dtype(value.dtype))


def make_spec_dataset(pipeline):
    """A tf.data.Dataset of a Pipeline(feature_spec=)'s batches: a dict per batch, multi-hot entries
    ragged (see Pipeline.as_tf). The output signature comes from the first batch."""
    first = next(iter(pipeline), None)
    if first is None:
        raise ValueError("InvalidArgument: as_tf(): the pipeline gave no batch to read the feature spec's "
                         f"output signature from ({pipeline.files})")
    signature = {k: _spec_of(v) for k, v in first.items()}

    def gen():
        for b in pipeline:
            yield {k: _bag_ragged(v) if isinstance(v, tuple) else v for k, v in b.items()}

    return tf.data.Dataset.from_generator(gen, output_signature=signature)
