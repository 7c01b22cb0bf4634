"""TensorFlow side: the TFBS model, shard -> tf.data input, the training loop,
the TensorFlowOnSpark cluster, and the official metrics."""

#: The format of the model this code trains: bump it with any change of the
#: model's code that changes what it learns (architecture, encoding, loss,
#: training loop), not with a change of its settings (the ``train`` section
#: is compared on its own). It is part of every model version's lineage
#: (:mod:`tfbs.lineage`): a new format trains a new version, and
#: ``tfbs changes`` reports one until a version of it passes evaluation.
MODEL_FORMAT = 1
