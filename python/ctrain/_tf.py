"""TensorFlow adapter (imported only by .as_tf(); tensorflow is not a dependency of ctrain)."""

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
