"""Several copies of one architecture in one model, each trained on a loss of its own (``train.model.members``).

One training's weights are noisy: on the tuning data the averaged
predictions of three separate trainings scored about 0.02 auPRC above a
single one's (docs/model-quality.md). An ensemble holds the copies in one
model, so one training, one export and one version carry the average. Each
member starts from its own random draw and draws its own dropout; they see
the same batches. In training the model returns every member's logit, and
the loss is the mean of the members' losses, so no member learns to lean on
another's errors (a loss on the averaged logit would train them together as
one wider model); otherwise it returns the mean of their logits.
"""

from __future__ import annotations

import keras
import tensorflow as tf


class Ensemble(keras.Model):
    """The mean logit of ``members``; in training, every member's logit, ``(batch, members)``.

    Parameters
    ----------
    members
        Models of the same input dict (:data:`tf_models.model.TFBSModel`), each returning one logit per example.
    """

    def __init__(self, members: list[keras.Model], **kwargs) -> None:
        super().__init__(**kwargs)
        self.members = members

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        logits = tf.stack([member(inputs, training=training) for member in self.members], axis=-1)
        return logits if training else tf.reduce_mean(logits, axis=-1)


def members_of(model: keras.Model) -> list[keras.Model]:
    """The models that make ``model``: an ensemble's members, else ``model`` itself."""
    return list(model.members) if isinstance(model, Ensemble) else [model]


def per_member_labels(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """``labels`` (batch,) repeated for each member's column when ``logits`` is an ensemble's ``(batch, members)``."""
    if logits.shape.rank == 2:
        return tf.broadcast_to(tf.cast(labels, logits.dtype)[:, None], tf.shape(logits))
    return labels
