#!/usr/bin/env python3
"""TensorFlow DeepFM peer: the seed's model_fn (lambdaji/tf_repos DeepFM) in TF2.

Same graph as the seed's Estimator model_fn, written the modern way: plain
tf.Variables in a tf.Module and one @tf.function train step (graph mode,
no Estimator / feed overhead) over tensors already in memory.

  FeatWeights    [feature_size, 1]  glorot_normal
  FeatEmbeddings [feature_size, K]  glorot_normal
  FeatBias       [1]                zeros
  w = embedding_lookup(FeatWeights, ids)                  [B, F]
  e = embedding_lookup(FeatEmbeddings, ids) * vals        [B, F, K]
  y_w = sum_f w * vals
  y_v = 0.5 * sum_k((sum_f e)^2 - sum_f e^2)
  y_d = MLP(reshape(e, [B, F*K])): 400-400-400 ReLU (glorot_uniform, as
        tf.contrib.layers.fully_connected) + dropout(rate) after each, -> 1
  y = bias + y_w + y_v + y_d
  loss = mean(sigmoid_ce(y, label)) + l2 * (l2_loss(FeatWeights) + l2_loss(FeatEmbeddings))
  Adam(lr, 0.9, 0.999, 1e-8) over all variables.

The seed's L2 term covers the whole tables, so (as in the seed, whose
tf.train.AdamOptimizer also decays every row's moments each step) the table
update is dense. --l2-reg 0 keeps the lookup gradients sparse (IndexedSlices);
Keras 3 Adam still decays every row's moments.

Prints one JSON line; see README.md.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import numpy as np  # noqa: E402


def main(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_train_args(p)
    p.add_argument("--l2-reg", type=float, default=1e-4, help="seed default 0.0001")
    a = p.parse_args(argv)
    if a.best_of:
        common.run_best_of(os.path.abspath(__file__), argv,
                           [int(t) for t in a.best_of.split(",")], "tensorflow")
        return

    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(a.threads)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    tf.random.set_seed(a.seed)

    tr = common.load_data(a.train, a.field_size, a.id_offset)
    common.check_ids(tr, a.feature_size, a.train)
    va = None
    if a.valid:
        va = common.load_data(a.valid, a.field_size, a.id_offset)
        common.check_ids(va, a.feature_size, a.valid)

    F, K, N = a.field_size, a.embedding_size, a.feature_size
    layers = [int(x) for x in a.deep_layers.split(",") if x]
    gn = tf.keras.initializers.GlorotNormal(seed=a.seed)
    gu = tf.keras.initializers.GlorotUniform(seed=a.seed + 1)

    class DeepFM(tf.Module):
        def __init__(self):
            super().__init__()
            self.fm_b = tf.Variable(tf.zeros([1]), name="FeatBias")
            self.fm_w = tf.Variable(gn([N, 1]), name="FeatWeights")
            self.fm_v = tf.Variable(gn([N, K]), name="FeatEmbeddings")
            self.kernels, self.biases = [], []
            width = F * K
            for i, h in enumerate(layers + [1]):
                self.kernels.append(tf.Variable(gu([width, h]), name=f"mlp{i}_w"))
                self.biases.append(tf.Variable(tf.zeros([h]), name=f"mlp{i}_b"))
                width = h

        def __call__(self, ids, vals, training):
            w = tf.reshape(tf.nn.embedding_lookup(self.fm_w, ids), [-1, F])   # B,F
            y_w = tf.reduce_sum(w * vals, 1)
            e = tf.nn.embedding_lookup(self.fm_v, ids) * tf.reshape(vals, [-1, F, 1])
            sum_square = tf.square(tf.reduce_sum(e, 1))
            square_sum = tf.reduce_sum(tf.square(e), 1)
            y_v = 0.5 * tf.reduce_sum(sum_square - square_sum, 1)
            x = tf.reshape(e, [-1, F * K])
            for i in range(len(layers)):
                x = tf.nn.relu(tf.matmul(x, self.kernels[i]) + self.biases[i])
                if training and a.dropout > 0:
                    x = tf.nn.dropout(x, rate=a.dropout)
            y_d = tf.reshape(tf.matmul(x, self.kernels[-1]) + self.biases[-1], [-1])
            return self.fm_b + y_w + y_v + y_d

    model = DeepFM()
    opt = tf.keras.optimizers.Adam(learning_rate=a.learning_rate, beta_1=0.9,
                                   beta_2=0.999, epsilon=1e-8)
    variables = list(model.trainable_variables)
    l2 = a.l2_reg

    spec = [tf.TensorSpec([None, F], tf.int64), tf.TensorSpec([None, F], tf.float32),
            tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.int64)]

    @tf.function(input_signature=spec)
    def train_step(ids_all, vals_all, labels_all, start):
        end = start + a.batch_size
        ids, vals, y = ids_all[start:end], vals_all[start:end], labels_all[start:end]
        with tf.GradientTape() as tape:
            logits = model(ids, vals, training=True)
            loss = tf.reduce_mean(
                tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
            if l2 > 0:
                loss += l2 * (tf.nn.l2_loss(model.fm_w) + tf.nn.l2_loss(model.fm_v))
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    @tf.function(input_signature=spec[:2])
    def predict(ids, vals):
        return tf.sigmoid(model(ids, vals, training=False))

    n = len(tr)
    b = a.batch_size
    step = timed_steps = timed_examples = 0
    t0 = None
    losses = []
    done = False
    for epoch in range(a.epochs):
        order = common.epoch_order(n, epoch, a.seed, not a.no_shuffle)
        if order is not None:
            ids_t = tf.constant(tr.ids[order])
            vals_t = tf.constant(tr.values[order])
            lab_t = tf.constant(tr.labels[order])
        elif epoch == 0:
            ids_t, vals_t, lab_t = (tf.constant(tr.ids), tf.constant(tr.values),
                                    tf.constant(tr.labels))
        for start in range(0, n, b):
            if step == a.warmup_steps:
                t0, c0 = common.now(), common.cpu_now()
            losses.append(train_step(ids_t, vals_t, lab_t,
                                     tf.constant(start, tf.int64)))
            step += 1
            if step > a.warmup_steps:
                timed_steps += 1
                timed_examples += min(b, n - start)
            if a.max_steps and step >= a.max_steps:
                done = True
                break
        if done:
            break
    # Make sure all work is finished before stopping the clock.
    if losses:
        losses[-1].numpy()
    seconds = common.now() - t0 if t0 is not None else 0.0
    cpu_seconds = common.cpu_now() - c0 if t0 is not None else 0.0

    out = {
        "peer": "tensorflow",
        "tensorflow": tf.__version__,
        "threads": a.threads,
        "examples_per_sec": timed_examples / seconds if seconds > 0 else 0.0,
        "steps": step,
        "timed_steps": timed_steps,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "final_loss": float(np.mean([l.numpy() for l in losses[-50:]])) if losses
        else float("nan"),
    }
    if va is not None:
        preds = [predict(tf.constant(va.ids[s:s + 8192]), tf.constant(va.values[s:s + 8192]))
                 for s in range(0, len(va), 8192)]
        pr = np.concatenate([q.numpy() for q in preds])
        out["auc"] = common.auc(va.labels, pr)
        pc = np.clip(pr, 1e-7, 1 - 1e-7)
        out["valid_logloss"] = float(-np.mean(va.labels * np.log(pc) +
                                              (1 - va.labels) * np.log(1 - pc)))
    common.emit(out)


if __name__ == "__main__":
    main(sys.argv[1:])
