"""Each motif match also read as soft steps at learned cuts, as the boosted baseline's trees read it.

Trees over the network's own learned matches score above the network's
hidden layer over the same matches (``bench/matches_boosted.py``: +0.01
to +0.06 mean test auPRC per training on a tuning seed): a tree splits a
match at a cut ("above 0.7"), where a ReLU unit sums matches linearly.
This layer gives the hidden layer such cuts to combine: per match, ``k``
sigmoid steps ``sigmoid(slope * (match - cut))`` whose cuts and slopes
are learned, started spread over the matches' range (a seeded filter's
best match is 1 and half its best score 0, :func:`tf_models.motif_cnn.motif_seeds`).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

#: Where the cuts start: over a match's usual range (a seeded filter's best match gives 1).
_FIRST_CUT, _LAST_CUT = -0.5, 1.0
#: The steps' starting slope: a step about 0.5 wide, a fraction of the range.
_START_SLOPE = 8.0


class MatchThresholds(keras.layers.Layer):
    """``(batch, features)`` matches to ``(batch, features * steps)`` soft steps at learned cuts.

    Parameters
    ----------
    steps
        Cuts per match.

    Examples
    --------
    >>> layer = MatchThresholds(3)
    >>> out = layer(tf.constant([[-2.0, 3.0]]))
    >>> out.shape.as_list(), out.numpy().round(2).tolist()
    ([1, 6], [[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]])
    """

    def __init__(self, steps: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.steps = steps

    def build(self, input_shape) -> None:
        features = int(input_shape[-1])
        cuts = np.tile(np.linspace(_FIRST_CUT, _LAST_CUT, self.steps, dtype=np.float32), (features, 1))
        self.cuts = self.add_weight(
            name="cuts", shape=(features, self.steps), initializer=keras.initializers.Constant(cuts)
        )
        self.slopes = self.add_weight(
            name="slopes", shape=(features, self.steps), initializer=keras.initializers.Constant(_START_SLOPE)
        )

    def call(self, matches: tf.Tensor) -> tf.Tensor:
        x = tf.cast(matches, self.cuts.dtype)[:, :, None]
        steps = tf.sigmoid(self.slopes * (x - self.cuts))
        return tf.cast(tf.reshape(steps, [-1, self.cuts.shape[0] * self.steps]), matches.dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "steps": self.steps}
