#!/usr/bin/env python3
"""A user's Keras DeepFM fed by ctrain's data service through tf.data: the trainer role of a
SageMaker heterogeneous job (docs/launch.md#entry-points), as pytorch_deepfm.py is for PyTorch.

Run under `ctrain launch` (the hyperparameter sagemaker_program, or `--entry-point`), or by hand
with --train FILES --valid FILES; job.py (beside it) reads the hyperparameters (--key value) and
says where the batches come from: DataService.from_env().pipeline(...).as_tf() in a job with a
data_group. It writes the model to SM_MODEL_DIR/model.keras and its figures to
SM_OUTPUT_DATA_DIR/metrics.json. A GPU when TensorFlow sees one.

Model (Guo et al. 2017, DeepFM), the same as pytorch_deepfm.py:
  e = V[ids] * values                     [B, F, K]
  y = b + sum_f w[ids] values + 1/2 sum_k((sum_f e)^2 - sum_f e^2) + MLP(flatten(e))
with Adam and binary cross-entropy on the logits.
"""

import os
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import job  # noqa: E402  (beside this script: its hyperparameters, data and outputs)


def deepfm(field_size, feature_size, k, layers):
    ids = tf.keras.Input(shape=(field_size,), dtype="int64", name="ids")
    vals = tf.keras.Input(shape=(field_size,), dtype="float32", name="values")
    init = tf.keras.initializers.GlorotNormal()
    w = tf.keras.layers.Embedding(feature_size, 1, embeddings_initializer=init)(ids)       # [B, F, 1]
    v = tf.keras.layers.Embedding(feature_size, k, embeddings_initializer=init)(ids)       # [B, F, K]
    x = tf.keras.layers.Reshape((field_size, 1))(vals)
    first = tf.keras.layers.Flatten()(tf.keras.layers.Multiply()([w, x]))                   # [B, F]
    e = tf.keras.layers.Multiply()([v, x])                                                  # [B, F, K]
    second = FactorizationMachine()(e)                                                      # [B, 1]
    deep = tf.keras.layers.Flatten()(e)
    for h in layers:
        deep = tf.keras.layers.Dense(h, activation="relu")(deep)
    deep = tf.keras.layers.Dense(1)(deep)
    logit = tf.keras.layers.Add()([tf.keras.layers.Dense(1)(first), second, deep])          # bias in the Dense
    return tf.keras.Model(inputs=[ids, vals], outputs=logit)


class FactorizationMachine(tf.keras.layers.Layer):
    """1/2 sum_k((sum_f e)^2 - sum_f e^2) of e [B, F, K]: [B, 1]."""

    def call(self, e):
        s = tf.reduce_sum(e, axis=1)
        return 0.5 * tf.reduce_sum(s * s - tf.reduce_sum(e * e, axis=1), axis=1, keepdims=True)


def main(argv):
    a = job.parse_args(argv, __doc__)
    tf.keras.utils.set_random_seed(a.seed)
    if a.threads:
        tf.config.threading.set_intra_op_parallelism_threads(a.threads)
        tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    model = deepfm(a.field_size, a.feature_size, a.embedding_size, a.layers)
    model.compile(optimizer=tf.keras.optimizers.Adam(a.learning_rate),
                  loss=tf.keras.losses.BinaryCrossentropy(from_logits=True))
    pipeline, source = job.training_pipeline(a)
    # One pass of the dataset reads every epoch (the pipeline repeats itself): Keras runs one epoch of it.
    examples = tf.Variable(0, dtype=tf.int64, trainable=False)
    batches = tf.Variable(0, dtype=tf.int64, trainable=False)

    def features(y, ids, vals):  # (counts what Keras trains on)
        examples.assign_add(tf.cast(tf.shape(y)[0], tf.int64))
        batches.assign_add(1)
        return (ids, vals), y

    data = pipeline.as_tf().map(features).prefetch(2)
    t0 = time.monotonic()
    model.fit(data, epochs=1, verbose=0, shuffle=False)
    seconds = time.monotonic() - t0
    steps = int(batches.numpy())
    if steps == 0:
        sys.exit(f"no training batch came from {source}")
    metrics = {"examples": int(examples.numpy()), "steps": steps, "seconds": seconds, "source": source}
    valid = job.validation_pipeline(a)
    if valid is not None:
        ys, ps = [], []
        for y, ids, vals in valid.as_tf():
            ps.append(tf.sigmoid(model((ids, vals), training=False)).numpy().reshape(-1))
            ys.append(y.numpy())
        metrics["auc"], metrics["logloss"] = job.auc_logloss(np.concatenate(ys), np.concatenate(ps))
    if os.environ.get("SM_MODEL_DIR"):
        model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
    job.finish("keras_deepfm", metrics)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
