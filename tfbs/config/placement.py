"""Where training runs: the ``train.placement`` section.

Everything here says where and how training is spread, which Spark
settings its session gets and how long it may wait, never what the model
learns: a version's identity (:mod:`tfbs.lineage`) leaves the whole section
out, so a setting added here can never make a new version. Every strategy
takes ``batch_size`` examples a step, for the same schedule, so a model
trained under ps, all-reduce or in one process is the same recipe (and a
killed ps run may resume in one process).

Training has no master of its own: it runs where ``spark.master`` says,
except that a local master (``local``, ``local[n]``) gives training a
``local-cluster`` of one executor per TF node (:meth:`PlacementConfig.training_master`),
since TensorFlowOnSpark needs a process per node.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from tfbs.config.base import DEFAULT_GPU_DISCOVERY_SCRIPT, Section, cpu_set, spark_counts
from tfbs.spark_master import spark_master


class PlacementConfig(Section):
    """Where and how training runs (``train.placement``); no part of a model version."""

    strategy: Literal["parameter_server", "multi_worker_mirrored", "local"] = "parameter_server"
    num_ps: int = Field(1, ge=0)
    num_workers: int = Field(2, gt=0)
    local_executor_memory_mb: int = Field(
        1024,
        gt=0,
        description="memory of each executor of the local-cluster training runs on when spark.master is local",
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
    reservation_timeout_s: int = Field(
        120,
        gt=0,
        description="how long the TF nodes have, once their executors are there, to start and register with the "
        "driver (each imports TensorFlow first: on a busy host that can take minutes)",
    )
    tf_network: Literal["private", "open"] = Field(
        "private",
        description="private: each TF node's TensorFlow in a network namespace of its own (loopback only), its "
        "peers reached through tunnels sealed with the run's secret; open: TF's gRPC servers on every interface "
        "of their hosts, answering anyone who reaches them (for hosts that refuse network namespaces)",
    )
    timeout_s: int = Field(7200, gt=0, description="the whole distributed run, start-up included")
    on_worker_loss: Literal["continue", "stop"] = Field(
        "continue",
        description="continue: under parameter_server, a worker lost with its process, executor or host is logged "
        "and training goes on with the workers left (TF's coordinator runs its steps there); stop: the run stops "
        "and the same command resumes from the last checkpoint, as a lost ps or chief and multi_worker_mirrored "
        "always do",
    )
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
    spark_conf: dict[str, str] = Field(
        default_factory=dict,
        description="Spark settings for the training session only, on top of spark.conf (sizing: tf_models.training_launch.training_needs)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> "PlacementConfig":
        if self.strategy == "parameter_server" and self.num_ps < 1:
            raise ValueError("strategy parameter_server needs num_ps >= 1")
        gpu_keys = sorted(k for k in self.spark_conf if ".resource.gpu." in k)
        if gpu_keys:
            # One source of truth: tf_models.gpus derives these from gpus_per_worker.
            raise ValueError(f"spark_conf: set gpus_per_worker / gpu_discovery_script instead of {gpu_keys}")
        return self

    @field_validator("spark_conf")
    @classmethod
    def _spark_counts(cls, spark_conf: dict[str, str]) -> dict[str, str]:
        return spark_counts(spark_conf)

    @field_validator("record_cache_dir")
    @classmethod
    def _only_user_filled_in(cls, folder: str | None) -> str | None:
        """Refuse at load what every TF node would fail on: a ``{...}`` other than ``{user}``."""
        if folder is not None:
            try:
                folder.format(user="user")
            except KeyError as err:
                raise ValueError(
                    f"{folder!r}: {{{err.args[0]}}} is not filled in, only {{user}} (the user's name)"
                ) from None
            except (IndexError, ValueError) as err:
                raise ValueError(
                    f"{folder!r}: {err}; only {{user}} is filled in (write a brace as {{{{ or }}}})"
                ) from None
        return folder

    @field_validator("node_cpus")
    @classmethod
    def _cpu_lists(cls, node_cpus: dict[str, str]) -> dict[str, str]:
        for node, cpus in node_cpus.items():
            if not re.fullmatch(r"(chief|ps|worker)(:\d+)?", node):
                raise ValueError(f"node_cpus: {node!r} is not chief, ps or worker, with an optional :index")
            cpu_set(cpus)
        return node_cpus

    @property
    def num_nodes(self) -> int:
        """TF nodes of a distributed run, one Spark executor each: the chief, the ps (ps strategy only), the workers."""
        return (self.num_ps if self.strategy == "parameter_server" else 0) + self.num_workers + 1

    @property
    def executor_cores(self) -> int:
        """Cores of each training executor (``spark_conf``'s ``spark.executor.cores``; one by default)."""
        return int(self.spark_conf.get("spark.executor.cores", "1"))

    def training_master(self, master: str) -> str:
        """The master a distributed training session runs on, given ``spark.master``.

        A local master becomes a ``local-cluster`` of :attr:`num_nodes`
        executors of :attr:`executor_cores` cores and ``local_executor_memory_mb``
        each; any other (``yarn``, ``spark://...``, an explicit
        ``local-cluster[...]``) is used as it is.

        Examples
        --------
        >>> PlacementConfig().training_master("local[2]"), PlacementConfig().training_master("yarn")
        ('local-cluster[4,1,1024]', 'yarn')
        """
        if not spark_master(master).in_driver:
            return master
        return f"local-cluster[{self.num_nodes},{self.executor_cores},{self.local_executor_memory_mb}]"
