"""Keras Model.fit under tf.distribute.MultiWorkerMirroredStrategy, for a tfk8s job of
workers (and a chief, if wanted), with no parameter servers.

Every worker holds a full copy of the model; gradients are all-reduced at each step, so
training is synchronous and all workers must be up. The default cluster resolver reads
TF_CONFIG, which tfk8s writes into each pod; without it (a single-replica job) this
trains on one machine.

If a worker fails, all stop; tfk8s re-creates the pods (restartPolicy ExitCode or
OnFailure), restores each one's --model-dir from its artifacts, and the
BackupAndRestore callback resumes from the last finished epoch. The chief (worker 0
when there is no chief) keeps a weights checkpoint per epoch in <model-dir>/checkpoints,
TensorBoard summaries in <model-dir>/logs and the trained model in <model-dir>/model;
an evaluator task, if the job has one and shares --model-dir, evaluates those
checkpoints as they appear.

tf.keras in TensorFlow 2.21 is Keras 3; this program uses Keras 2, the tf-keras package
(ghcr.io/tfk8s/tensorflow:2.21.0-cpu holds it; pip install tf-keras==2.21.0 elsewhere),
whose callbacks know how to back up and checkpoint across workers.
"""

import argparse
import json
import os
import sys
import tempfile

# Before TensorFlow is imported, so that TensorFlow's own references to tf.keras also
# mean Keras 2.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf

try:
    import tf_keras as keras
except ImportError:
    sys.exit("multi_worker_mirrored.py needs Keras 2: pip install tf-keras==2.21.0")

NUM_FEATURES = 16
NUM_EXAMPLES = 4096


class FlushingTensorBoard(keras.callbacks.TensorBoard):
    """Keras's TensorBoard callback, flushing the summaries at each epoch's end. A
    summary writer flushes every two minutes by default; the tfk8s agent uploads what
    is on disk every artifacts interval, so TensorBoard follows the job epoch by epoch."""

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        for writer in self._writers.values():
            writer.flush()


class ReportStepsToTfk8s(keras.callbacks.Callback):
    """Writes, beside Keras's summaries, the step at which training ends
    (tfk8s/total_steps) when it begins, and the optimizer's step (tfk8s/step) every
    `every` steps, flushed: the tfk8s agent reads them, so that `kubectl get tfjobs`
    shows the job's STEP, PROGRESS and ETA. Keras's own summaries count epochs."""

    def __init__(self, log_dir, total_steps, every):
        super().__init__()
        self.log_dir, self.total_steps, self.every = log_dir, total_steps, max(1, every)
        self.writer = None

    def _write(self, tag, value):
        step = int(self.model.optimizer.iterations.numpy())
        with self.writer.as_default():
            tf.summary.scalar(tag, value, step=step)
        self.writer.flush()
        return step

    def on_train_begin(self, logs=None):
        self.writer = tf.summary.create_file_writer(os.path.join(self.log_dir, "train"))
        self._write("tfk8s/total_steps", self.total_steps)

    def on_train_batch_end(self, batch, logs=None):
        if (batch + 1) % self.every == 0:
            self._write("tfk8s/step", int(self.model.optimizer.iterations.numpy()))

    def on_train_end(self, logs=None):
        self._write("tfk8s/step", int(self.model.optimizer.iterations.numpy()))
        self.writer.close()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10, help="epochs in all")
    parser.add_argument("--steps-per-epoch", type=int, default=50, help="steps between backups")
    parser.add_argument("--batch-size", type=int, default=64, help="batch size per replica")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic data")
    parser.add_argument("--model-dir", default=os.environ.get("TFK8S_MODEL_DIR") or "/workspace/checkpoints",
                        help="backup, checkpoints and model (default $TFK8S_MODEL_DIR, else /workspace/checkpoints)")
    return parser.parse_args()


def synthetic_dataset(seed, num_examples, split=0):
    """y = x.w + b + noise: w and b by seed, the examples by split (0 trains, 1 is
    held out), the same on every worker."""
    features = tf.random.stateless_normal([num_examples, NUM_FEATURES], seed=[seed, 10 + split])
    weights = tf.random.stateless_uniform([NUM_FEATURES, 1], seed=[seed, 1], minval=-1.0, maxval=1.0)
    noise = 0.1 * tf.random.stateless_normal([num_examples, 1], seed=[seed, 20 + split])
    labels = tf.matmul(features, weights) + 0.5 + noise
    return tf.data.Dataset.from_tensor_slices((features, labels))


def build_and_compile_model(lr):
    model = keras.Sequential([
        keras.Input(shape=(NUM_FEATURES,)),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(1),
    ])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss="mse",
                  metrics=[keras.metrics.RootMeanSquaredError()])
    return model


def is_chief(resolver):
    """TensorFlow's rule: the chief, else worker 0 when the cluster has no chief, else
    the only process of a single-node job."""
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type is None or task_type == "chief":
        return True
    return task_type == "worker" and task_id == 0 and "chief" not in resolver.cluster_spec().as_dict()


class ReportEvaluation(keras.callbacks.Callback):
    """Prints the metrics of each checkpoint the evaluator evaluates."""

    def on_test_end(self, logs=None):
        metrics = " ".join(f"{k} {v:.4f}" for k, v in sorted((logs or {}).items()))
        print(f"[evaluator] evaluated a checkpoint: {metrics}", flush=True)


def run_evaluator(args):
    """The evaluator is not part of the all-reduce: it evaluates the chief's per-epoch
    weights checkpoints and stops after the last epoch's."""
    model = build_and_compile_model(args.lr)
    held_out = synthetic_dataset(args.seed, 1024, split=1).batch(256)
    print(f"[evaluator] evaluating the checkpoints in {args.model_dir}/checkpoints", flush=True)
    keras.utils.SidecarEvaluator(model=model, data=held_out,
                                 checkpoint_dir=os.path.join(args.model_dir, "checkpoints"),
                                 max_evaluations=args.epochs,
                                 callbacks=[ReportEvaluation()]).start()
    print("[evaluator] evaluated the last checkpoint", flush=True)


class ReportProgress(keras.callbacks.Callback):
    """Prints where training starts (after BackupAndRestore restored it) and, on the
    chief, each epoch."""

    def __init__(self, name, chief, steps_per_epoch):
        super().__init__()
        self.name, self.chief, self.steps_per_epoch = name, chief, steps_per_epoch

    def on_train_begin(self, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step > 0:
            print(f"[{self.name}] resuming from step {step} (epoch {step // self.steps_per_epoch})", flush=True)
        else:
            print(f"[{self.name}] starting from step 0", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        if self.chief:
            step = int(self.model.optimizer.iterations.numpy())
            print(f"[{self.name}] epoch {epoch + 1} step {step} loss {logs.get('loss', float('nan')):.4f}", flush=True)


def main():
    args = parse_args()
    if tf.distribute.cluster_resolver.TFConfigClusterResolver().task_type == "evaluator":
        run_evaluator(args)
        return

    # Connects to every worker: it returns once the whole cluster is up.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    chief = is_chief(resolver)
    name = f"{resolver.task_type or 'local'} {resolver.task_id or 0}"
    cluster = {job: len(tasks) for job, tasks in sorted(resolver.cluster_spec().as_dict().items())}
    print(f"[{name}] joined the cluster {json.dumps(cluster)}: "
          f"{strategy.num_replicas_in_sync} replicas in sync", flush=True)

    global_batch_size = args.batch_size * strategy.num_replicas_in_sync
    dataset = synthetic_dataset(args.seed, NUM_EXAMPLES).shuffle(NUM_EXAMPLES, seed=args.seed)
    dataset = dataset.repeat().batch(global_batch_size)
    # Each worker reads the whole in-memory set and keeps its share of every batch:
    # there are no files to shard by.
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = dataset.with_options(options)

    with strategy.scope():
        model = build_and_compile_model(args.lr)

    callbacks = [
        # Every worker backs up and restores; Keras keeps the chief's copy in backup_dir
        # and the others' in directories of their own beside it.
        keras.callbacks.BackupAndRestore(backup_dir=os.path.join(args.model_dir, "backup")),
        ReportProgress(name, chief, args.steps_per_epoch),
        # Per-epoch weights for the evaluator, numbered by epoch; written by the chief.
        keras.callbacks.ModelCheckpoint(filepath=os.path.join(args.model_dir, "checkpoints", "ckpt-{epoch}"),
                                        save_weights_only=True),
        FlushingTensorBoard(log_dir=os.path.join(args.model_dir, "logs"), update_freq="epoch"),
    ]
    if chief:
        callbacks.append(ReportStepsToTfk8s(os.path.join(args.model_dir, "logs"),
                                            args.epochs * args.steps_per_epoch, every=args.steps_per_epoch // 5))
    model.fit(dataset, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch,
              callbacks=callbacks, verbose=0)
    print(f"[{name}] training finished at step {int(model.optimizer.iterations.numpy())}", flush=True)

    # Saving is collective: every worker must save, but only the chief's copy is kept.
    if chief:
        model_path = os.path.join(args.model_dir, "model")
    else:
        model_path = os.path.join(tempfile.mkdtemp(prefix="tfk8s-worker-model-"), "model")
    model.save(model_path)
    if not chief:
        tf.io.gfile.rmtree(os.path.dirname(model_path))
    else:
        print(f"[{name}] saved the model to {model_path}", flush=True)


if __name__ == "__main__":
    main()
