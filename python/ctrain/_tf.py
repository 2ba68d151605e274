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


def _layout_signature(layout):
    """The output signature of a feature spec's batches from _ctrain.spec_layout."""
    sig = {"label": tf.TensorSpec(shape=(None,), dtype=tf.float32)}
    for name, kind, width, weighted in layout:
        if kind == "bag":
            ragged = [tf.RaggedTensorSpec(shape=(None, None), dtype=dt, ragged_rank=1, row_splits_dtype=tf.int64)
                      for dt in ((tf.int64, tf.float32) if weighted else (tf.int64,))]
            sig[name] = tuple(ragged) if weighted else ragged[0]
        else:
            shape = (None,) if width == 1 else (None, width)
            sig[name] = tf.TensorSpec(shape=shape, dtype=tf.float32 if kind == "dense" else tf.int64)
    return sig


def make_spec_dataset(pipeline, layout):
    """A tf.data.Dataset of a feature spec's batches (Pipeline or DataServicePipeline with
    feature_spec=): a dict per batch, multi-hot entries ragged (see Pipeline.as_tf). The output
    signature comes from the spec (`layout`: _ctrain.spec_layout), so nothing is read ahead."""
    signature = _layout_signature(layout)

    def gen():
        for b in pipeline:
            yield {k: _bag_ragged(v) if isinstance(v, tuple) else v for k, v in b.items()}

    return tf.data.Dataset.from_generator(gen, output_signature=signature)
