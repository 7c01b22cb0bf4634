"""GPUs for the training cluster: what Spark is asked for, what each TF node sees.

Three pieces, each a plain function so it can be tested without a GPU:

:func:`tf_models.training_launch.training_needs`
    What the training session asks of Spark (:func:`tfbs.launch.stage_conf`
    writes it). Every executor asks its cluster manager for
    ``train.placement.gpus_per_worker`` GPUs and runs a discovery script to
    learn their addresses; the one TF node task on it takes them all. On
    YARN, Spark maps the ``gpu`` resource to ``yarn.io/gpu`` itself.
:func:`apply_visible_devices`
    Run in each TF node before TensorFlow initialises its devices: sets
    ``CUDA_VISIBLE_DEVICES`` to exactly the addresses Spark assigned to the
    node's task (:func:`visible_devices`), none for a ps.
:func:`mixed_precision_policy`
    Builds a model under keras' ``mixed_float16`` policy without leaving the
    policy set in the process.

How this fits with TensorFlowOnSpark 2.2.5 (``TFSparkNode.run._get_gpus``):
TFoS sets ``CUDA_VISIBLE_DEVICES`` itself, in the PySpark worker, before it
calls the node function: to every GPU address of the Spark task (cut to
``num_gpus`` when the node args have that key), or, when Spark assigned no
GPU and ``nvidia-smi`` works, to GPUs it picks from ``nvidia-smi`` (one by
default, retrying and then failing when all are busy), or to ``""``. It does
the same for ps nodes. :mod:`tf_models.train` therefore passes
``num_gpus = gpus_per_worker`` (so TFoS never picks GPUs from
``nvidia-smi`` behind Spark's back) and then :func:`apply_visible_devices`
states the final value per role. Both read the same task resources, so for
chief and workers the values agree; for a ps ours hides the GPU.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence

from tfbs.launch import GPU_RESOURCE

log = logging.getLogger("tfbs.gpus")

#: Roles that compute and so get GPUs; the ps only holds variables.
COMPUTE_ROLES = ("chief", "worker")
PS_ROLE = "ps"

MIXED_POLICY = "mixed_float16"


def log_devices(role: str, task_index: int, gpus_per_worker: int) -> list[str]:
    """Log the devices this TF node's TensorFlow sees; warn when GPUs it was given go unused.

    Called in each node once TensorFlow is imported, after
    :func:`apply_visible_devices`. A chief or worker given GPUs that
    TensorFlow cannot see falls back to the CPU: the warning says whether
    TensorFlow was built without CUDA (the packed environment holds
    ``tensorflow-cpu``) or sees no device (driver, ``CUDA_VISIBLE_DEVICES``).

    Returns
    -------
    list of str
        The names of the GPUs TensorFlow sees (empty on a CPU node).
    """
    import tensorflow as tf

    gpus = [device.name for device in tf.config.list_physical_devices("GPU")]
    with_cuda = tf.test.is_built_with_cuda()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    log.info(
        "TF node %s:%d devices: %s (CUDA_VISIBLE_DEVICES=%s, TensorFlow built with CUDA: %s)",
        role,
        task_index,
        ", ".join(gpus) or "CPU only",
        visible if visible is not None else "unset",
        with_cuda,
    )
    if role in COMPUTE_ROLES and gpus_per_worker and not gpus:
        reason = (
            "this TensorFlow has no CUDA support (the environment holds tensorflow-cpu)"
            if not with_cuda
            else "TensorFlow finds no GPU device (check the node's NVIDIA driver and CUDA_VISIBLE_DEVICES)"
        )
        log.warning(
            "TF node %s:%d was given %d GPU(s) but runs on the CPU: %s", role, task_index, gpus_per_worker, reason
        )
    return gpus


def visible_devices(role: str, addresses: Sequence[str]) -> str:
    """The ``CUDA_VISIBLE_DEVICES`` value for one TF node.

    Parameters
    ----------
    role : str
        ``"chief"``, ``"worker"`` or ``"ps"``.
    addresses : sequence of str
        GPU addresses Spark assigned to the node's task (``["1"]``).

    Returns
    -------
    str
        The addresses joined by commas for chief and workers; ``""`` for a ps,
        which keeps its variables in host memory (where every worker reaches
        them over gRPC) and so leaves the GPU alone.

    Raises
    ------
    ValueError
        For any other role.
    """
    if role == PS_ROLE:
        return ""
    if role not in COMPUTE_ROLES:
        raise ValueError(f"unknown TF role {role!r}: expected one of {(*COMPUTE_ROLES, PS_ROLE)}")
    return ",".join(str(a).strip() for a in addresses)


def task_gpu_addresses() -> list[str]:
    """GPU addresses Spark assigned to the running task; ``[]`` outside a task.

    The forked node processes (ours for chief/worker, TFoS's for ps) are
    copies of the PySpark worker, so ``TaskContext.get()`` still answers there.
    """
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return []
    resource = context.resources().get(GPU_RESOURCE)
    return list(resource.addresses) if resource is not None else []


def apply_visible_devices(role: str, gpus_per_worker: int, addresses: Sequence[str] | None = None) -> str:
    """Set ``CUDA_VISIBLE_DEVICES`` for this TF node; call before TF touches a device.

    CUDA reads the variable once, when TensorFlow first initialises its GPU
    devices (creating a server or a strategy), not at ``import tensorflow``;
    TFoS imports TF in the parent but initialises nothing, so setting it at
    the top of the node function is in time.

    Parameters
    ----------
    role : str
        ``"chief"``, ``"worker"`` or ``"ps"``.
    gpus_per_worker : int
        ``train.placement.gpus_per_worker``: how many GPUs a chief or worker must get.
    addresses : sequence of str or None
        The task's GPU addresses; ``None`` reads them from Spark
        (:func:`task_gpu_addresses`).

    Returns
    -------
    str
        The value set.

    Raises
    ------
    RuntimeError
        If a chief or worker got fewer GPUs than ``gpus_per_worker``: the
        session was built without training's needs (for instance,
        settings overridden on the command line), and training would
        otherwise fall back to the CPU without a word.
    """
    found = task_gpu_addresses() if addresses is None else list(addresses)
    if role in COMPUTE_ROLES and len(found) < gpus_per_worker:
        raise RuntimeError(
            f"TF {role} needs train.placement.gpus_per_worker={gpus_per_worker} GPU(s), but Spark assigned "
            f"{found or 'none'}: check spark.executor/task.resource.gpu.* in the training session"
        )
    value = visible_devices(role, found)
    os.environ["CUDA_VISIBLE_DEVICES"] = value
    log.info("tfbs gpus: role=%s spark_addresses=%s CUDA_VISIBLE_DEVICES=%r", role, found, value)
    return value


@contextlib.contextmanager
def mixed_precision_policy(enabled: bool) -> Iterator[None]:
    """Build keras layers under ``mixed_float16`` inside this block, when enabled.

    Keras layers keep the dtype policy that was global when they were
    created, so the policy is set only while the model is built and the
    previous one restored after. Scoping it (rather than setting it for the
    whole process) keeps it out of everything else that runs in the same
    process: the float32 model that :func:`tf_models.export.export_model`
    builds for serving, evaluation in the driver under strategy ``local``.
    Variables stay float32 under this policy, so checkpoints and the
    exported weights are the same with and without it.

    Parameters
    ----------
    enabled : bool
        ``train.mixed_precision``; ``False`` makes this a no-op.
    """
    if not enabled:
        yield
        return
    import keras
    import tensorflow as tf

    if not tf.config.list_physical_devices("GPU"):
        log.warning("mixed precision without a visible GPU: float16 runs on the CPU, usually slower than float32")
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(MIXED_POLICY)
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(previous)
