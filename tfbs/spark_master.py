"""The Spark master a run starts with, classified in one place.

Where a master runs decides a run's launch profile (:mod:`tfbs.launch`):
its network policy, the environment of its JVM, whether training needs a
``local-cluster`` of its own. Every such choice asks :func:`spark_master`
rather than reading the master's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: ``local``: Spark inside the driver's JVM (``local``, ``local[N]``, ``local[N,F]``);
#: ``local-cluster``: executor JVMs on this machine (``local-cluster[N,C,M]``);
#: ``yarn``; ``standalone``: a ``spark://`` master; ``other``: any other cluster manager.
MasterKind = Literal["local", "local-cluster", "yarn", "standalone", "other"]

#: The launch profiles :mod:`tfbs.launch` knows: one machine, or YARN in client mode.
Deploy = Literal["local", "yarn"]


@dataclass(frozen=True)
class SparkMaster:
    """A Spark master URL and its kind.

    Attributes
    ----------
    url : str
        The master as Spark takes it (``spark.master``, ``--master``).
    kind : MasterKind
        Where it runs Spark.
    """

    url: str
    kind: MasterKind

    @property
    def one_machine(self) -> bool:
        """Whether every JVM of the run is on this machine (``local`` and ``local-cluster``)."""
        return self.kind in ("local", "local-cluster")

    @property
    def in_driver(self) -> bool:
        """Whether Spark runs inside the driver's JVM, with no executor processes (``local``)."""
        return self.kind == "local"

    @property
    def yarn(self) -> bool:
        """Whether YARN runs the application (client or cluster mode)."""
        return self.kind == "yarn"

    @property
    def deploy(self) -> Deploy | None:
        """The launch profile of this master; None for a standalone or other cluster (its own settings)."""
        return "yarn" if self.yarn else "local" if self.one_machine else None


def spark_master(url: str) -> SparkMaster:
    """Classify the master ``url``.

    Examples
    --------
    >>> [spark_master(m).kind for m in ("local", "local[2]", "local-cluster[4,1,1024]", "yarn", "spark://h:7077")]
    ['local', 'local', 'local-cluster', 'yarn', 'standalone']
    >>> spark_master("k8s://https://h:443").deploy is None, spark_master("local[*]").deploy
    (True, 'local')
    """
    if url == "local" or url.startswith("local["):
        kind: MasterKind = "local"
    elif url.startswith("local-cluster"):
        kind = "local-cluster"
    elif url.startswith("yarn"):
        kind = "yarn"
    elif url.startswith("spark://"):
        kind = "standalone"
    else:
        kind = "other"
    return SparkMaster(url, kind)
