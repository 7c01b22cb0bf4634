"""How a model is trained: the ``train`` section."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from tfbs.config.base import DEFAULT_GPU_DISCOVERY_SCRIPT, Section, cpu_set
from tfbs.config.model import ModelConfig


class TrainConfig(Section):
    """Distributed training (``tfbs train``).

    The model goes to ``<run_dir>/models/<version>/`` (:mod:`tfbs.lineage`):
    the shards and this section, less the keys that only say where and how
    long it runs, name the version, so changing them trains a new one.
    """

    master: str = "local-cluster[4,1,1024]"
    strategy: Literal["parameter_server", "multi_worker_mirrored", "local"] = "parameter_server"
    num_ps: int = Field(1, ge=0)
    num_workers: int = Field(2, gt=0)
    seed: int = 17
    batch_size: int = Field(
        128,
        gt=1,
        description="examples per training step, whatever the strategy (all-reduce splits it across replicas)",
    )
    epochs: int = Field(10, gt=0, description="passes over the training positives (negatives are redrawn per epoch)")
    steps: int | None = Field(None, gt=0, description="train exactly this many steps instead of `epochs`")
    steps_per_execution: int = Field(20, gt=0, description="steps per scheduled closure")
    learning_rate: float = Field(1e-3, gt=0)
    decay_rate: float = Field(0.96, gt=0, le=1)
    decay_steps: int = Field(2000, gt=0)
    checkpoint_every_steps: int | None = Field(
        None, gt=0, description="checkpoint and validate this often (None: once per epoch)"
    )
    shuffle_buffer: int = Field(8192, gt=0)
    early_stopping_patience: int | None = Field(
        3, gt=0, description="stop after this many checkpoints without a better validation auPRC (None: off)"
    )
    validation_examples: int = Field(20000, gt=0, description="validation rows scored at each checkpoint")
    positive_fraction: float | None = Field(
        None, gt=0, lt=1, description="share of positives per batch (None: as drawn by preprocessing)"
    )
    record_cache_dir: str | None = Field(
        None,
        min_length=1,
        description="local folder, the same on every node, for copies of remote (hdfs://) training records "
        "(default /tmp/tfbs-{user}/records; {user} is the user's name); made mode 700, refused if anyone else "
        "owns or can open it",
    )
    worker_wait_timeout_s: int = Field(3600, gt=0, description="how long ps/workers wait for the chief")
    executors_timeout_s: int = Field(
        120, gt=0, description="how long training waits for its executors (one per TF node) before it stops"
    )
    tf_network: Literal["private", "open"] = Field(
        "private",
        description="private: each TF node's TensorFlow in a network namespace of its own (loopback only), its "
        "peers reached through tunnels sealed with the run's secret; open: TF's gRPC servers on every interface "
        "of their hosts, answering anyone who reaches them (for hosts that refuse network namespaces)",
    )
    timeout_s: int = Field(7200, gt=0, description="the whole distributed run, start-up included")
    gpus_per_worker: int = Field(
        0, ge=0, description="GPUs Spark gives each training executor; the chief and workers use them, ps none"
    )
    gpu_discovery_script: str = Field(
        DEFAULT_GPU_DISCOVERY_SCRIPT, min_length=1, description="run by each executor to list its GPUs (Spark)"
    )
    node_cpus: dict[str, str] = Field(
        default_factory=dict,
        description="pin TensorFlow nodes to CPUs: {'worker:0': '0', 'worker:1': '1', 'chief': '0-1'} (a job, or "
        "job:index, to a Linux CPU list); for scaling measurements on few cores, or to keep nodes apart on one host",
    )
    # Allowed without GPUs: float16 runs (slowly) on CPU, which is how it is
    # tested, and strategy local may train on the driver's own GPU. The
    # training process logs a warning when it sees no GPU.
    mixed_precision: bool = Field(False, description="keras mixed_float16 in training; logits stay float32")
    spark_conf: dict[str, str] = Field(
        default_factory=dict, description="Spark settings for the training session only, on top of spark.conf"
    )
    model: ModelConfig = Field(default_factory=ModelConfig)
    version: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
        max_length=100,
        description="name of the model version (None: from the shards' manifest and this section, tfbs.lineage)",
    )

    #: Keys that say where and how training is spread or how long to wait
    #: for it, not what it learns: no part of a model version
    #: (:mod:`tfbs.lineage`). Every strategy takes ``batch_size`` examples a
    #: step, for the same schedule, so a model trained under ps, all-reduce
    #: or in one process is the same recipe (and a killed ps run may resume
    #: in one process).
    OPERATIONAL_KEYS: ClassVar[frozenset[str]] = frozenset(
        {
            "version",
            "strategy",
            "num_ps",
            "num_workers",
            "master",
            "spark_conf",
            "record_cache_dir",
            "worker_wait_timeout_s",
            "executors_timeout_s",
            "tf_network",
            "timeout_s",
            "gpus_per_worker",
            "gpu_discovery_script",
            "node_cpus",
        }
    )

    @model_validator(mode="after")
    def _consistent(self) -> "TrainConfig":
        if self.strategy == "parameter_server" and self.num_ps < 1:
            raise ValueError("strategy parameter_server needs num_ps >= 1")
        gpu_keys = sorted(k for k in self.spark_conf if ".resource.gpu." in k)
        if gpu_keys:
            # One source of truth: tf_models.gpus derives these from gpus_per_worker.
            raise ValueError(f"spark_conf: set gpus_per_worker / gpu_discovery_script instead of {gpu_keys}")
        if self.checkpoint_every_steps and self.checkpoint_every_steps % self.steps_per_execution:
            raise ValueError("checkpoint_every_steps must be a multiple of steps_per_execution")
        return self

    @field_validator("node_cpus")
    @classmethod
    def _cpu_lists(cls, node_cpus: dict[str, str]) -> dict[str, str]:
        for node, cpus in node_cpus.items():
            if not re.fullmatch(r"(chief|ps|worker)(:\d+)?", node):
                raise ValueError(f"node_cpus: {node!r} is not chief, ps or worker, with an optional :index")
            cpu_set(cpus)
        return node_cpus

    @field_validator("version")
    @classmethod
    def _not_the_pointer(cls, version: str | None) -> str | None:
        if version == "LATEST":
            raise ValueError("LATEST names the pointer to the newest evaluated version, not a version")
        return version
