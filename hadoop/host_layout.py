"""Which hosts a cluster of hosts (:mod:`hosts`) has, their addresses, and what ``DIR/cluster.json`` records.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import host_daemons as daemons
from netns import Host

GATEWAY = "gateway"
OUTSIDER = "outsider"
#: Seconds to wait for every daemon to serve.
DEFAULT_STARTUP_TIMEOUT = 180.0
DEFAULT_SIZE = daemons.NodeSize()


def node_names(count: int) -> list[str]:
    """``node1`` .. ``node<count>``: the hosts with a DataNode and a NodeManager."""
    return [f"node{index}" for index in range(1, count + 1)]


def layout(subnet: str, nodes: int) -> list[Host]:
    """The hosts and their addresses on ``subnet``."""
    return [
        Host(daemons.MASTER, f"{subnet}.2"),
        Host(GATEWAY, f"{subnet}.3", self_on_loopback=True),
        *(Host(name, f"{subnet}.{10 + index}") for index, name in enumerate(node_names(nodes), start=1)),
        Host(OUTSIDER, f"{subnet}.250", listed=False),
    ]


@dataclass(frozen=True)
class HostsInfo:
    """What ``DIR/cluster.json`` holds about a started cluster."""

    prefix: str
    subnet: str
    workdir: str
    conf_dir: str
    java_home: str
    hosts: dict[str, str]
    nodes: list[str]
    spark_home: str = ""
    spark_nodes: list[str] = field(default_factory=list)
    startup_seconds: float = 0.0
    #: Secure mode: the realm (empty: none), the users with keytabs, how often tokens are renewed.
    realm: str = ""
    users: list[str] = field(default_factory=list)
    token_renew_s: int = 3600
