"""The model read at its weights' moving average (``train.weight_average``).

Asynchronous parameter-server steps leave the weights where the last few
hundred noisy updates put them, and three trainings' averaged predictions
score above any one of them (docs/model-quality.md). Keras' optimizers can
keep an exponential moving average of every trainable weight beside it
(``use_ema``), updated with each step on the parameter servers; this scores
the validation records, and exports, at that average instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import keras
import numpy as np


def _averages(optimizer: keras.optimizers.Optimizer) -> list | None:
    """The optimizer's moving averages, in its variables' order, or None when it keeps none."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)  # under a LossScaleOptimizer
    # Keras keeps them in a private list; its public finalize_variable_values only overwrites for good.
    return getattr(inner, "_model_variables_moving_average", None) if inner.use_ema else None


@contextmanager
def averaged_weights(model: keras.Model, optimizer: keras.optimizers.Optimizer) -> Iterator[None]:
    """Inside the block, ``model``'s trainable weights are their moving averages; after it, as before.

    Nothing changes when the optimizer keeps no averages. Steps must not run
    meanwhile (under ps: between the coordinator's windows).
    """
    averages = _averages(optimizer)
    if averages is None:
        yield
        return
    current = [np.asarray(variable) for variable in model.trainable_variables]
    for variable, average in zip(model.trainable_variables, averages, strict=True):
        variable.assign(average)
    try:
        yield
    finally:
        for variable, value in zip(model.trainable_variables, current, strict=True):
            variable.assign(value)


def at_averaged_weights(
    score: Callable[[], float], model: keras.Model, optimizer: keras.optimizers.Optimizer
) -> Callable[[], float]:
    """``score`` run inside :func:`averaged_weights`."""

    def scored() -> float:
        with averaged_weights(model, optimizer):
            return score()

    return scored
