"""Hosts on one machine: Linux network namespaces on one bridge (standard library only).

Each host is a network namespace with one interface, an address of its own
on a private subnet and nothing else: no default route, so nothing leaves
the machine. A veth pair joins it to a bridge, which also holds an address
in the machine's own namespace (``.1``): from there, the tests and a person
at the keyboard reach every host by address. Names resolve per host from
``/etc/netns/<namespace>/hosts``, which ``ip netns exec`` mounts over
``/etc/hosts``; each process started on a host also gets the host's name in
a UTS namespace of its own, as Java's ``InetAddress.getLocalHost`` and
Spark see it.

What one kernel shares stays shared: the file system, the clock, the
process table (``/proc`` shows every host's processes) and the CPUs. A host
"dies" when every process of its namespace is killed, and is "cut off"
while its link is down.

Needs root (``ip netns``, ``unshare``), as CI has.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from jvm import ClusterError

#: Where ``ip netns exec`` finds the files it mounts over ``/etc`` in a namespace.
NETNS_ETC = Path("/etc/netns")
#: Subnets tried for a network, ``10.<second>.<third>.0/24``, picked by the network's prefix.
_SECOND_OCTETS = range(200, 250)
#: Debian's ``/etc/hosts`` maps a host's own name to this address when it has no fixed one.
DEBIAN_SELF_ADDRESS = "127.0.1.1"


@dataclass(frozen=True)
class Host:
    """One host of the network.

    Attributes
    ----------
    name : str
        Its hostname, as it sees itself and as the others resolve it.
    address : str
        Its IPv4 address on the bridge.
    self_on_loopback : bool
        Map its own name to ``127.0.1.1`` in its ``/etc/hosts``, as Debian
        does on a machine without a fixed address (a gateway, a laptop):
        code that binds or advertises "my hostname's address" then gets a
        loopback address no other host can reach.
    listed : bool
        Whether the other hosts' ``/etc/hosts`` name it (an outsider's does not).
    """

    name: str
    address: str
    self_on_loopback: bool = False
    listed: bool = True


def require_namespaces() -> None:
    """Fail with what is missing when this process cannot make network namespaces.

    Raises
    ------
    ClusterError
        Not root, ``ip`` (iproute2) or ``unshare`` (util-linux) missing,
        or the kernel refusing a network namespace.
    """
    missing = [tool for tool in ("ip", "unshare") if shutil.which(tool) is None]
    if missing:
        raise ClusterError(
            f"{' and '.join(missing)} not found on PATH: the hosts are network namespaces "
            "(apt-get install iproute2 util-linux)"
        )
    if os.geteuid() != 0:
        raise ClusterError(
            f"the hosts are network namespaces, which only root can make (running as uid {os.geteuid()})"
        )
    probe = f"tfbs-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        raise ClusterError(f"`ip netns add` failed, so no hosts can be made here: {made.stderr.strip()}")
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise ClusterError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def free_subnet(prefix: str) -> str:
    """A ``/24`` subnet no interface of this machine is on, chosen from ``prefix``: ``"10.213.7"``.

    The same prefix gets the same subnet while it is free, so a network made
    again by a later run keeps its addresses.
    """
    used = {
        ipaddress.ip_interface(word).network
        for line in _ip("-4", "-o", "addr", "show").stdout.splitlines()
        for word in line.split()
        if "/" in word and word[0].isdigit()
    }
    seed = int(hashlib.sha256(prefix.encode()).hexdigest(), 16)
    for step in range(len(_SECOND_OCTETS) * 256):
        value = (seed + step) % (len(_SECOND_OCTETS) * 256)
        candidate = f"10.{_SECOND_OCTETS[value // 256]}.{value % 256}"
        network = ipaddress.ip_network(f"{candidate}.0/24")
        if not any(network.overlaps(other) for other in used):
            return candidate
    raise ClusterError("no free 10.x.y.0/24 subnet for the hosts")


class HostNetwork:
    """Hosts as network namespaces named ``<prefix>-<host>`` on the bridge ``<prefix>-br``.

    Parameters
    ----------
    prefix
        Names this network's namespaces, bridge and veth pairs (at most 9
        characters: Linux allows 15 for an interface name).
    subnet
        The first three octets of its ``/24`` (:func:`free_subnet`).
    hosts
        The hosts, their addresses on ``subnet``.
    """

    def __init__(self, prefix: str, subnet: str, hosts: Sequence[Host]) -> None:
        if len(prefix) > 9:
            raise ValueError(f"prefix {prefix!r}: at most 9 characters")
        self.prefix = prefix
        self.subnet = subnet
        self.hosts = {host.name: host for host in hosts}

    @property
    def bridge(self) -> str:
        """The bridge's interface name."""
        return f"{self.prefix}-br"

    @property
    def machine_address(self) -> str:
        """The bridge's address in this machine's own namespace: how the machine reaches the hosts."""
        return f"{self.subnet}.1"

    def namespace(self, host: str) -> str:
        """The network namespace of ``host``."""
        return f"{self.prefix}-{host}"

    def _veth(self, host: str) -> str:
        return f"{self.prefix}-v{list(self.hosts).index(host)}"

    def hosts_file(self, host: str) -> str:
        """The ``/etc/hosts`` that ``host`` sees."""
        me = self.hosts[host]
        lines = ["127.0.0.1\tlocalhost"]
        lines.append(f"{DEBIAN_SELF_ADDRESS if me.self_on_loopback else me.address}\t{me.name}")
        lines += [f"{other.address}\t{other.name}" for other in self.hosts.values() if other.listed and other != me]
        lines += ["::1\tlocalhost ip6-localhost ip6-loopback"]
        return "\n".join(lines) + "\n"

    def create(self) -> None:
        """Make the bridge, one namespace per host with its address, and its ``/etc/hosts``.

        Leftovers of a network of the same prefix (a killed run) go first.
        """
        self.destroy()
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.machine_address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for name, host in self.hosts.items():
            namespace, veth = self.namespace(name), self._veth(name)
            _ip("netns", "add", namespace)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            _ip("link", "set", veth, "master", self.bridge, "up")
            _ip("-n", namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", namespace, "link", "set", "eth0", "up")
            _ip("-n", namespace, "link", "set", "lo", "up")
            etc = NETNS_ETC / namespace
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(self.hosts_file(name))

    def destroy(self) -> None:
        """Kill every process of every host, then remove the namespaces, the bridge and the hosts files."""
        for name in self.hosts:
            namespace = self.namespace(name)
            if _ip("netns", "pids", namespace, check=False).returncode == 0:
                self.kill(name)
                _ip("netns", "delete", namespace, check=False)
            shutil.rmtree(NETNS_ETC / namespace, ignore_errors=True)
            _ip("link", "delete", self._veth(name), check=False)
        _ip("link", "delete", self.bridge, check=False)

    def exists(self) -> bool:
        """Whether the bridge is there (the network was made and not destroyed)."""
        return _ip("link", "show", self.bridge, check=False).returncode == 0

    def command(self, host: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run on ``host``: in its namespace, under its hostname."""
        if host not in self.hosts:
            raise ValueError(f"no host {host!r}; hosts: {', '.join(self.hosts)}")
        # `ip netns exec` mounts /etc/netns/<namespace>/hosts over /etc/hosts;
        # a UTS namespace of its own gives the process the host's name.
        set_name = 'hostname "$0" && exec "$@"'
        return [
            "ip",
            "netns",
            "exec",
            self.namespace(host),
            "unshare",
            "--uts",
            "--",
            "sh",
            "-c",
            set_name,
            host,
            *argv,
        ]

    def pids(self, host: str) -> list[int]:
        """Every process running on ``host``."""
        done = _ip("netns", "pids", self.namespace(host), check=False)
        return [int(pid) for pid in done.stdout.split()]

    def kill(self, host: str, sig: signal.Signals = signal.SIGKILL, wait: float = 10.0) -> int:
        """Send ``sig`` to every process of ``host`` (SIGKILL: the host dies); return how many there were.

        With SIGKILL, waits up to ``wait`` seconds for them to be gone and
        kills any process started meanwhile (a NodeManager launching a
        container as it dies).
        """
        killed: set[int] = set()
        deadline = time.monotonic() + wait
        while pids := [pid for pid in self.pids(host) if pid not in killed or sig == signal.SIGKILL]:
            for pid in pids:
                with suppress(ProcessLookupError):
                    os.kill(pid, sig)
            killed.update(pids)
            if sig != signal.SIGKILL or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        return len(killed)

    def set_link(self, host: str, up: bool) -> None:
        """Connect or cut ``host`` off the bridge (its processes keep running)."""
        _ip("link", "set", self._veth(host), "up" if up else "down")
