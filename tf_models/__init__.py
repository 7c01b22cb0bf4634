"""TensorFlow side: the TFBS model, shard -> tf.data input, the training loop,
the TensorFlowOnSpark cluster, and the official metrics."""
