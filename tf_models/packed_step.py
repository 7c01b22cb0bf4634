"""A parameter-server training step with one exchange per ps each way.

Under ``ParameterServerStrategy`` each layer reads its variables from the ps
and each gradient goes back on its own: two transfers per variable per step
(34 for the default model's 15 weights and 2 dropout seeds), each served by
the ps's gRPC and executor threads. Measured on 2 cores, the ps took 12 % of
a core for arithmetic on 30 thousand numbers. Here a step reads each ps's
variables as one flat tensor per dtype, runs the model on those values
(``stateless_call``) and sends the gradients back the same way, to be split
and applied on the ps by the same optimizer. The numbers are the plain
step's: the same values (read together, before the step's update), the same
gradients and dropout draws, the same update.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import tensorflow as tf

from tf_models.optimizer import backing_variable


def _device_of(variable) -> str:
    return backing_variable(variable).device


def _groups(variables: Sequence) -> dict[tuple[str, tf.DType], list[int]]:
    """Indices of ``variables`` per device and dtype, in order."""
    groups: dict[tuple[str, tf.DType], list[int]] = {}
    for index, variable in enumerate(variables):
        groups.setdefault((_device_of(variable), tf.as_dtype(variable.dtype)), []).append(index)
    return groups


def _pack(tensors: Sequence[tf.Tensor], device: str | None) -> tf.Tensor:
    """``tensors`` flattened into one, on ``device`` (None: where the caller is)."""
    with tf.device(device):
        return tf.concat([tf.reshape(tensor, [-1]) for tensor in tensors], axis=0)


def _unpack(flat: tf.Tensor, shapes: Sequence[tf.TensorShape], device: str | None) -> list[tf.Tensor]:
    """The tensors of ``shapes`` that :func:`_pack` joined, split on ``device``."""
    with tf.device(device):
        parts = tf.split(flat, [math.prod(shape) for shape in shapes], axis=0)
        return [tf.reshape(part, shape) for part, shape in zip(parts, shapes)]


def read_packed(variables: Sequence) -> list[tf.Tensor]:
    """Values of ``variables``, each device's sent here as one tensor per dtype.

    Examples
    --------
    >>> import tensorflow as tf
    >>> values = read_packed([tf.Variable([[1.0, 2.0]]), tf.Variable([7, 8], dtype=tf.int64), tf.Variable(3.0)])
    >>> [value.numpy().tolist() for value in values]
    [[[1.0, 2.0]], [7, 8], 3.0]
    """
    values: list = [None] * len(variables)
    for (device, _), indices in _groups(variables).items():
        group = [variables[i] for i in indices]
        flat = _pack([tf.convert_to_tensor(variable) for variable in group], device)
        for index, value in zip(indices, _unpack(flat, [variable.shape for variable in group], None)):
            values[index] = value
    return values


def send_packed(tensors: Sequence[tf.Tensor], variables: Sequence) -> list[tf.Tensor]:
    """``tensors`` (one per variable, alike) sent to their variables' devices as one tensor per dtype."""
    placed: list = [None] * len(variables)
    for (device, _), indices in _groups(variables).items():
        flat = _pack([tensors[i] for i in indices], None)
        for index, tensor in zip(indices, _unpack(flat, [variables[i].shape for i in indices], device)):
            placed[index] = tensor
    return placed


def packed_gradient_step(model, optimizer, loss_fn: Callable[[Callable], tf.Tensor], replicas: int) -> tf.Tensor:
    """One optimisation step with one exchange per ps each way; returns its loss.

    Parameters
    ----------
    model : keras.Model
        The model, its variables on the ps.
    optimizer : keras.optimizers.Optimizer
        Applies the gradients, on the ps.
    loss_fn : callable
        ``loss_fn(call) -> loss``, where ``call(inputs, training=...)`` runs
        the model on the values read for this step.
    replicas : int
        Replicas in sync; the loss is divided by it, as in the plain step.
    """
    trainable, state_variables = model.trainable_variables, model.non_trainable_variables
    weights = read_packed(trainable)
    state = read_packed(state_variables)  # dropout's seed state: each call advances it
    new_state: list[tf.Tensor] = []

    def call(inputs, training: bool = False) -> tf.Tensor:
        outputs, updated = model.stateless_call(weights, state, inputs, training=training)
        new_state[:] = updated
        return outputs

    with tf.GradientTape() as tape:
        tape.watch(weights)
        loss = loss_fn(call)
        # A no-op except under mixed precision (see train_loop._gradient_step).
        scaled = optimizer.scale_loss(loss / replicas)
    grads = tape.gradient(scaled, weights)
    for variable, value in zip(state_variables, send_packed(new_state, state_variables)):
        variable.assign(value)
    # The learning-rate schedule and the step count next to the variables.
    with tf.device(_device_of(optimizer.iterations)):
        optimizer.apply_gradients(zip(send_packed(grads, trainable), trainable))
    return loss
