"""Adam whose update of each variable is one locked kernel, safe under a parameter server.

Keras 3's Adam updates a variable in several separate ops (read the slots,
``assign_add`` to ``m``, ``assign_add`` to ``v``, ``assign_sub`` to the
variable). Under ``ParameterServerStrategy`` those ops run on the ps for
every worker at once, and two workers' updates interleave between them
(keras-team/keras#18668; Keras 3 does not support parameter-server training,
keras-team/keras#18624). :class:`LockedAdam` applies the same Adam rule with
TensorFlow's fused ``ResourceApplyAdam`` kernel, which updates the variable and
both slots under the variable's lock, as the legacy ``tf.keras`` optimizers
did. One process and all-reduce run the same kernel, so every strategy
trains with the same arithmetic.
"""

from __future__ import annotations

import keras
import tensorflow as tf


def backing_variable(variable) -> tf.Variable:
    """The ``tf.Variable`` behind a Keras variable (or the variable itself)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


class LockedAdam(keras.optimizers.Adam):
    """:class:`keras.optimizers.Adam` with each variable updated atomically.

    Same hyper-parameters, slots, checkpoint layout and results as Keras'
    Adam (``amsgrad`` excepted, which falls back to Keras' own update).
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        target = backing_variable(variable)
        dtype = target.dtype
        index = self._get_variable_index(variable)
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        if isinstance(gradient, tf.IndexedSlices):
            # Embedding gradients: the fused kernel takes dense ones, and
            # the tables here are small (one row per cell type).
            gradient = tf.convert_to_tensor(gradient)
        tf.raw_ops.ResourceApplyAdam(
            var=target.handle,
            m=backing_variable(self._momentums[index]).handle,
            v=backing_variable(self._velocities[index]).handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
            use_locking=True,
        )
