"""TensorFlow side: the TFBS model, shard -> tf.data input, the training loop,
the TensorFlowOnSpark cluster, and the official metrics."""

from tf_models import lean_import

#: The format of the model this code trains, counted by hand. What the model's
#: code does is counted by the code itself (:mod:`tf_models.model_format`: a
#: fingerprint of the modules that define the model and its training, recorded
#: in ``tf_models/model_code.json``, which a test keeps current); bump this only
#: for what no source file shows (a change of a pinned library's behaviour). It
#: is part of every model version's lineage (:mod:`tfbs.lineage`): a new format
#: trains a new version, and ``tfbs changes`` reports one until a version of it
#: passes evaluation.
MODEL_FORMAT = 1

# Before any submodule imports TensorFlow: without Keras' scikit-learn and matplotlib extras.
lean_import.install()
