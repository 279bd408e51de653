"""Writes the event files of internal/tfevents' tests with TensorFlow 2.21, and
expected.json, the steps and values they hold, for the tests to compare with.

  python3 make.py OUT_DIR

  scalars/     tf.summary.scalar over 5 steps (tensors of the "scalars" plugin), and
               a TF1-style Summary with simple_value written raw
  fit/train/, fit/validation/
               Keras 2 (tf-keras) Model.fit with the TensorBoard callback, 3 epochs
  torn/        the scalars file cut in the middle of its last record
"""

import glob
import json
import os
import shutil
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np
import tensorflow as tf
import tf_keras as keras
from tensorflow.core.framework import summary_pb2


def write_scalars(out, expected):
    """tf.summary.scalar, as a custom training loop writes it."""
    d = os.path.join(out, "scalars")
    writer = tf.summary.create_file_writer(d)
    with writer.as_default():
        for step in range(5):
            loss = 2.0 / (step + 1)
            accuracy = 0.5 + step / 10
            tf.summary.scalar("loss", loss, step=step)
            tf.summary.scalar("accuracy", accuracy, step=step)
            expected["scalars/loss"].append([step, float(np.float32(loss))])
            expected["scalars/accuracy"].append([step, float(np.float32(accuracy))])
        # A summary as TensorFlow 1 wrote it, with a simple_value.
        legacy = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="legacy", simple_value=0.25)])
        tf.summary.experimental.write_raw_pb(legacy.SerializeToString(), step=7)
        expected["scalars/legacy"].append([7, 0.25])
    writer.close()


def fit(out, expected):
    """Model.fit with the TensorBoard callback, as examples/tensorflow does."""
    keras.utils.set_random_seed(1)
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(-1, 1)
    y = 3 * x + 1
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(1,))])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    logs = os.path.join(out, "fit")
    tb = keras.callbacks.TensorBoard(log_dir=logs, update_freq="epoch", write_graph=False,
                                     profile_batch=0, histogram_freq=0)
    history = model.fit(x, y, epochs=3, batch_size=16, validation_data=(x, y), callbacks=[tb], verbose=0)
    for epoch, v in enumerate(history.history["loss"]):
        expected["fit/train/epoch_loss"].append([epoch, float(np.float32(v))])
    for epoch, v in enumerate(history.history["val_loss"]):
        expected["fit/validation/epoch_loss"].append([epoch, float(np.float32(v))])
        # The callback also writes each evaluation at the optimizer's step count.
        expected["fit/validation/evaluation_loss_vs_iterations"].append([(epoch + 1) * 4, float(np.float32(v))])


def tear(out):
    """A copy of the scalars file cut 5 bytes into its last record's data."""
    src = glob.glob(os.path.join(out, "scalars", "events.out.tfevents.*"))[0]
    data = open(src, "rb").read()
    # Walk the records to find where the last one starts.
    off = last = 0
    while off < len(data):
        last = off
        n = int.from_bytes(data[off:off + 8], "little")
        off += 8 + 4 + n + 4
    os.makedirs(os.path.join(out, "torn"))
    with open(os.path.join(out, "torn", os.path.basename(src)), "wb") as f:
        f.write(data[:last + 12 + 5])


def main():
    out = sys.argv[1]
    for d in ("scalars", "fit", "torn"):
        shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    expected = {k: [] for k in ("scalars/loss", "scalars/accuracy", "scalars/legacy",
                                "fit/train/epoch_loss", "fit/validation/epoch_loss",
                                "fit/validation/evaluation_loss_vs_iterations")}
    write_scalars(out, expected)
    fit(out, expected)
    tear(out)
    with open(os.path.join(out, "expected.json"), "w") as f:
        # One line per scalar: [[step, value], ...].
        f.write("{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(expected.items())) + "\n}\n")


if __name__ == "__main__":
    main()
