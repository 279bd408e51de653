"""Keras training under tf.distribute.ParameterServerStrategy, for a tfk8s job with a
chief, parameter servers, workers and, if wanted, an evaluator.

Every replica runs this same program; TF_CONFIG, which tfk8s writes into each pod,
tells it which task it is (read by TFConfigClusterResolver, the default resolver):

  ps, worker  start a TensorFlow server and serve until tfk8s deletes the pod, once
              the chief has succeeded; the chief drives them.
  chief       the coordinator: creates the model's variables on the parameter servers,
              schedules training steps on the workers through a ClusterCoordinator
              (which re-runs the steps of a worker that fails), checkpoints to
              --model-dir every --checkpoint-every steps, and resumes from the latest
              checkpoint when restarted.
  evaluator   evaluates every checkpoint in --model-dir as it appears, and stops after
              the last one; --model-dir must then be storage it shares with the chief.

Keras 3, which is tf.keras in TensorFlow 2.16, has no parameter server training: this
program uses Keras 2, the tf-keras package (pip install tf-keras~=2.16.0).

The data is a seeded synthetic regression set, so that the job needs no download.
"""

import argparse
import os
import sys

# Before TensorFlow is imported, so that TensorFlow's own references to tf.keras also
# mean Keras 2.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf

try:
    import tf_keras as keras
except ImportError:
    sys.exit("ps_strategy.py needs Keras 2: pip install tf-keras~=2.16.0 "
             "(Keras 3 has no parameter server training)")

NUM_FEATURES = 16
NUM_EXAMPLES = 8192


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="training steps in all")
    parser.add_argument("--checkpoint-every", type=int, default=200, help="steps between checkpoints")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch size")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic data")
    parser.add_argument("--model-dir", default=os.environ.get("TFK8S_MODEL_DIR") or "/workspace/checkpoints",
                        help="checkpoint directory (default $TFK8S_MODEL_DIR, else /workspace/checkpoints)")
    return parser.parse_args()


def synthetic_dataset(seed, num_examples):
    """y = x.w + b + noise, the same on every task for the same seed."""
    features = tf.random.stateless_normal([num_examples, NUM_FEATURES], seed=[seed, 0])
    weights = tf.random.stateless_uniform([NUM_FEATURES, 1], seed=[seed, 1], minval=-1.0, maxval=1.0)
    noise = 0.1 * tf.random.stateless_normal([num_examples, 1], seed=[seed, 2])
    labels = tf.matmul(features, weights) + 0.5 + noise
    return tf.data.Dataset.from_tensor_slices((features, labels))


def build_model():
    return keras.Sequential([
        keras.Input(shape=(NUM_FEATURES,)),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(1),
    ])


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
    print(f"[{resolver.task_type} {resolver.task_id}] server started", flush=True)
    server.join()


def run_coordinator(args, resolver):
    num_ps = len(resolver.cluster_spec().as_dict().get("ps", []))
    # Spread large variables over the parameter servers; small ones stay whole.
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=256 << 10, max_shards=max(1, num_ps))
    strategy = tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

    with strategy.scope():
        model = build_model()
        optimizer = keras.optimizers.legacy.SGD(learning_rate=args.lr)
        _ = optimizer.iterations  # created now, on a parameter server, so that it is restored
        train_loss = keras.metrics.Mean(name="train_loss")

    # model and optimizer, as the evaluator's SidecarEvaluator expects them.
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(checkpoint, args.model_dir, max_to_keep=5)
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint)
        print(f"[chief] resumed from {manager.latest_checkpoint}", flush=True)

    def dataset_fn(input_context):
        batch_size = input_context.get_per_replica_batch_size(args.batch_size)
        dataset = synthetic_dataset(args.seed, NUM_EXAMPLES)
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return dataset.shuffle(NUM_EXAMPLES).repeat().batch(batch_size).prefetch(2)

    @tf.function
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    per_worker_iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))

    @tf.function
    def train_step(iterator):
        def replica_fn(features, labels):
            with tf.GradientTape() as tape:
                predictions = model(features, training=True)
                per_example_loss = keras.losses.mean_squared_error(labels, predictions)
                loss = tf.nn.compute_average_loss(per_example_loss)
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            train_loss.update_state(loss)
            return loss

        features, labels = next(iterator)
        return strategy.run(replica_fn, args=(features, labels))

    step = int(optimizer.iterations.numpy())
    while step < args.steps:
        # Checkpoints fall on multiples of --checkpoint-every and on --steps itself,
        # which is how the evaluator knows the last one.
        for _ in range(min(args.checkpoint_every, args.steps - step)):
            coordinator.schedule(train_step, args=(per_worker_iterator,))
        coordinator.join()
        step = int(optimizer.iterations.numpy())
        path = manager.save(checkpoint_number=step)
        print(f"[chief] step {step} loss {train_loss.result().numpy():.4f} saved {path}", flush=True)
        train_loss.reset_states()
    print(f"[chief] training finished at step {step}", flush=True)


def run_evaluator(args):
    model = build_model()
    # The optimizer only gives the evaluator the step of each checkpoint.
    model.compile(optimizer=keras.optimizers.legacy.SGD(), loss="mse",
                  metrics=[keras.metrics.RootMeanSquaredError()])
    held_out = synthetic_dataset(args.seed + 1, 1024).batch(256)
    # Checkpoints are numbered by step, so the last one is ckpt-<steps>.
    keras.utils.SidecarEvaluator(model=model, data=held_out, checkpoint_dir=args.model_dir,
                                 max_evaluations=args.steps).start()


def main():
    args = parse_args()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.task_type in ("ps", "worker"):
        run_server(resolver)
    elif resolver.task_type == "evaluator":
        run_evaluator(args)
    elif resolver.task_type == "chief":
        run_coordinator(args, resolver)
    else:
        sys.exit(f"ps_strategy.py needs TF_CONFIG with a chief, ps and workers; this task is "
                 f"{resolver.task_type!r}: submit it with --chief --ps N --workers M")


if __name__ == "__main__":
    main()
