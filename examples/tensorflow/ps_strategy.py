"""Keras Model.fit under tf.distribute.ParameterServerStrategy, for a tfk8s job with a
chief, parameter servers, workers and, if wanted, an evaluator.

Every replica runs this same program; TF_CONFIG, which tfk8s writes into each pod,
tells it which task it is (read by TFConfigClusterResolver, the default resolver):

  ps, worker  start a TensorFlow server and serve until tfk8s deletes the pod, once
              the chief has succeeded; the chief drives them.
  chief       the coordinator: Model.fit creates the variables on the parameter servers
              and schedules the steps on the workers through a ClusterCoordinator,
              which re-runs the steps of a worker that fails. Each epoch it saves a
              checkpoint (model, optimizer, epoch) through its own filesystem, the
              parameter servers' variables included, in --model-dir itself, and
              writes TensorBoard summaries in --model-dir/logs; restarted, it resumes
              from the last checkpoint.
  evaluator   evaluates every checkpoint in --model-dir as it appears
              (SidecarEvaluator) and stops after the last epoch's; --model-dir must
              then be storage it shares with the chief.

tf.keras in TensorFlow 2.21 is Keras 3, which has no parameter server training and
no SidecarEvaluator: this program uses Keras 2, the tf-keras package, which
ghcr.io/tfk8s/tensorflow:2.21.0-cpu holds (pip install tf-keras==2.21.0 elsewhere).

The data is a seeded synthetic regression set, so that the job needs no download.
"""

import argparse
import json
import os
import sys

# Before TensorFlow is imported, so that TensorFlow's own references to tf.keras also
# mean Keras 2.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf

try:
    import tf_keras as keras
except ImportError:
    sys.exit("ps_strategy.py needs Keras 2: pip install tf-keras==2.21.0 "
             "(Keras 3 has no parameter server training)")

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


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10, help="epochs in all")
    parser.add_argument("--steps-per-epoch", type=int, default=50, help="steps between checkpoints")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic data")
    parser.add_argument("--model-dir", default=os.environ.get("TFK8S_MODEL_DIR") or "/workspace/checkpoints",
                        help="checkpoints and TensorBoard logs "
                             "(default $TFK8S_MODEL_DIR, else /workspace/checkpoints)")
    return parser.parse_args()


def synthetic_dataset(seed, num_examples, split=0):
    """y = x.w + b + noise: w and b by seed, the examples by split (0 trains, 1 is
    held out), the same on every task."""
    features = tf.random.stateless_normal([num_examples, NUM_FEATURES], seed=[seed, 10 + split])
    weights = tf.random.stateless_uniform([NUM_FEATURES, 1], seed=[seed, 1], minval=-1.0, maxval=1.0)
    noise = 0.1 * tf.random.stateless_normal([num_examples, 1], seed=[seed, 20 + split])
    labels = tf.matmul(features, weights) + 0.5 + noise
    return tf.data.Dataset.from_tensor_slices((features, labels))


def build_model(lr):
    model = keras.Sequential([
        keras.Input(shape=(NUM_FEATURES,)),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(1),
    ])
    model.compile(optimizer=keras.optimizers.legacy.SGD(learning_rate=lr), loss="mse",
                  metrics=[keras.metrics.RootMeanSquaredError()], steps_per_execution=10)
    return model


def cluster_summary(resolver):
    """The cluster as TensorFlow resolved it from TF_CONFIG: job name -> task count."""
    return {job: len(tasks) for job, tasks in sorted(resolver.cluster_spec().as_dict().items())}


def run_server(resolver):
    """A parameter server or worker: its server does the work the chief sends it."""
    # Fail RPCs to an unreachable task at once, so that the coordinator can reschedule
    # its work, rather than wait for it.
    os.environ["GRPC_FAIL_FAST"] = "use_caller"
    server = tf.distribute.Server(
        resolver.cluster_spec(),
        job_name=resolver.task_type,
        task_index=resolver.task_id,
        protocol=resolver.rpc_layer or "grpc",
        start=True,
    )
    print(f"[{resolver.task_type} {resolver.task_id}] server started at {server.target} "
          f"in cluster {json.dumps(cluster_summary(resolver))}", flush=True)
    server.join()


class EpochCheckpoint(keras.callbacks.Callback):
    """Saves the model, the optimizer and the epoch at each epoch's end, numbered by
    epoch, in <model-dir>: what a restarted chief resumes from and what the
    evaluator evaluates.

    Under ParameterServerStrategy the variables live on the parameter servers, and a
    checkpoint saved or restored the default way has each parameter server write or read
    its own part on its own filesystem, which pods do not share; and done through the
    chief's filesystem instead, each parameter server calls the chief, at the address of
    the chief it knew, which a re-created chief pod no longer has. So the chief keeps a
    copy of the model: it fetches the values into the copy and saves that, and restores
    into the copy and sends the values on. Every call goes from the chief to the others."""

    def __init__(self, model, directory, lr):
        super().__init__()
        self.target = model
        # Everything here lives on the chief: a device left unnamed ("/cpu:0", as the
        # checkpoint's own save counter asks for) could be a parameter server's.
        with tf.device("/job:chief/replica:0/task:0/device:CPU:0"):
            self.copy = build_model(lr)
            self.copy_step = self.copy.optimizer.iterations
            self.epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
            checkpoint = tf.train.Checkpoint(model=self.copy, optimizer=self.copy.optimizer, epoch=self.epoch)
            checkpoint.save_counter  # created now, on the chief
        self.manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=None, checkpoint_name="ckpt")

    def restore(self):
        """Restores the last checkpoint, if any, and returns the epoch to start at."""
        path = self.manager.latest_checkpoint
        if not path:
            print("[chief] starting from step 0", flush=True)
            return 0
        self.manager.checkpoint.restore(path).expect_partial()
        for remote, value in zip(self.target.weights, self.copy.weights, strict=True):
            remote.assign(value.numpy())
        step = int(self.copy_step.numpy())
        self.target.optimizer.iterations.assign(step)
        print(f"[chief] resuming from step {step} (epoch {int(self.epoch.numpy())})", flush=True)
        return int(self.epoch.numpy())

    def save(self, epoch):
        for value, remote in zip(self.copy.weights, self.target.weights, strict=True):
            value.assign(remote.numpy())
        self.copy_step.assign(int(self.target.optimizer.iterations.numpy()))
        self.epoch.assign(epoch)
        path = self.manager.save(checkpoint_number=epoch)
        print(f"[chief] epoch {epoch} saved in {path}", flush=True)

    def on_epoch_end(self, epoch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        print(f"[chief] epoch {epoch + 1} step {step} loss {logs.get('loss', float('nan')):.4f}", flush=True)
        self.save(epoch + 1)


def run_chief(args, resolver):
    print(f"[chief] cluster {json.dumps(cluster_summary(resolver))}", flush=True)
    num_ps = len(resolver.cluster_spec().job_tasks("ps"))
    # Spread large variables over the parameter servers; small ones stay whole.
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=256 << 10, max_shards=max(1, num_ps))
    strategy = tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
    # Model.fit uses this coordinator: one per strategy.
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    print(f"[chief] coordinator connected: {coordinator.strategy.extended._num_workers} workers, "
          f"{coordinator.strategy.extended._num_ps} parameter servers", flush=True)

    with strategy.scope():
        model = build_model(args.lr)

    def dataset_fn(input_context):
        batch_size = input_context.get_per_replica_batch_size(args.batch_size)
        dataset = synthetic_dataset(args.seed, NUM_EXAMPLES)
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return dataset.shuffle(NUM_EXAMPLES, seed=args.seed).repeat().batch(batch_size).prefetch(2)

    # A re-created chief finds the checkpoints the agent restored from S3 and goes on
    # from the last one rather than from step 0. They sit in the model dir itself, not in
    # a directory of their own: the model dir a job names is usually its checkpoints'.
    checkpoints = EpochCheckpoint(model, args.model_dir, args.lr)
    initial_epoch = checkpoints.restore()
    callbacks = [
        checkpoints,
        FlushingTensorBoard(log_dir=os.path.join(args.model_dir, "logs"), update_freq="epoch"),
    ]
    model.fit(keras.utils.experimental.DatasetCreator(dataset_fn), epochs=args.epochs, initial_epoch=initial_epoch,
              steps_per_epoch=args.steps_per_epoch, callbacks=callbacks, verbose=0)
    step = int(model.optimizer.iterations.numpy())
    print(f"[chief] training finished at step {step}", flush=True)


class ReportEvaluation(keras.callbacks.Callback):
    """Prints the metrics of each checkpoint the evaluator evaluates."""

    def on_test_end(self, logs=None):
        metrics = " ".join(f"{k} {v:.4f}" for k, v in sorted((logs or {}).items()))
        print(f"[evaluator] evaluated a checkpoint: {metrics}", flush=True)


def run_evaluator(args):
    model = build_model(args.lr)
    held_out = synthetic_dataset(args.seed, 1024, split=1).batch(256)
    print(f"[evaluator] evaluating the checkpoints in {args.model_dir}", flush=True)
    # Checkpoints are numbered by epoch: the last one is ckpt-<epochs>.
    keras.utils.SidecarEvaluator(model=model, data=held_out,
                                 checkpoint_dir=args.model_dir,
                                 max_evaluations=args.epochs,
                                 callbacks=[ReportEvaluation(), keras.callbacks.TensorBoard(
                                     log_dir=os.path.join(args.model_dir, "logs", "eval"))]).start()
    print("[evaluator] evaluated the last checkpoint", flush=True)


def main():
    args = parse_args()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        run_server(resolver)
    elif resolver.task_type == "evaluator":
        run_evaluator(args)
    elif resolver.task_type == "chief":
        run_chief(args, resolver)
    else:
        sys.exit(f"ps_strategy.py needs TF_CONFIG with a chief, ps and workers; this task is "
                 f"{resolver.task_type!r}: submit it with --chief --ps N --workers M")


if __name__ == "__main__":
    main()
