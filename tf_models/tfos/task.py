"""The Spark task of one TF node: what TFoS calls on the executor, and the watched TF process.

TFoS runs :class:`NodeEntry` in each node's Spark task. It builds the
:class:`~tf_models.tfos.node.NodeInfo` and runs ``node_main`` in a forked
child process (:func:`run_isolated`) whose parent is the node's watchdog:
when the child fails or dies, the Spark task fails at once, naming the
node (an elastic worker's death ends it as done: the run goes on).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import multiprocessing
import os
import signal
import socket
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from tf_models.tfos import private_network
from tf_models.tfos.failures import exception_line, exit_reason, node_label
from tf_models.tfos.lost_nodes import goes_on_without
from tf_models.tfos.node import (
    ELASTIC_WORKERS_ARG,
    NODE_DIR_ARG,
    PRIVATE_FOLDERS_ARG,
    PS,
    TF_NETWORK_SECRET_ARG,
    NodeInfo,
    NodeMain,
)
from tf_models.tfos.node_files import write_node_file
from tf_models.tfos.tunnel import TunnelAgent
from tfbs.storage.gateway import GATEWAY_FD_ENV
from tfbs.storage.gateway_server import StorageGateway
from tfbs.storage.private_dirs import note_root_folders


@dataclass(frozen=True)
class PrivateNetwork:
    """What a node needs to run its TensorFlow in a private network (:mod:`tf_models.tfos.private_network`).

    Attributes
    ----------
    secret : bytes
        The run's TF network secret: the tunnels' key.
    task : str
        This node, ``job:index``.
    cluster_spec : dict of str to list of str
        The real cluster: each task's host and the port its tunnel agent listens on.
    """

    secret: bytes = dataclasses.field(repr=False)
    task: str
    cluster_spec: dict[str, list[str]]


def _private_main(
    node_main: NodeMain,
    network: PrivateNetwork,
    control: socket.socket,
    storage: socket.socket,
    args: dict,
    info: NodeInfo,
) -> None:
    """``node_main`` in a private network: the namespace, the gateway to storage, the virtual cluster."""
    private_network.enter(control, network.cluster_spec, network.task)
    os.environ[GATEWAY_FD_ENV] = str(storage.fileno())
    virtual = private_network.virtual_cluster(network.cluster_spec)
    if "TF_CONFIG" in os.environ:
        task = {"type": info.job_name, "index": info.task_index}
        os.environ["TF_CONFIG"] = json.dumps({"cluster": virtual, "task": task})
    node_main(args, dataclasses.replace(info, cluster_spec=virtual))


class _Watch:
    """What the watcher runs beside a node in a private network: its storage gateway and its tunnel agent."""

    def __init__(self, network: PrivateNetwork, control: socket.socket, storage: socket.socket) -> None:
        self.gateway = StorageGateway(storage).start()
        self.inside: private_network.Inside | None = None
        self.agent: TunnelAgent | None = None
        try:
            self.inside = private_network.Inside(control)
        except (private_network.PrivateNetworkUnavailable, ConnectionError):
            return  # the node process reports why, through its pipe
        addresses = private_network.real_addresses(network.cluster_spec)
        self.agent = TunnelAgent(
            network.secret,
            network.task,
            addresses[network.task],
            {task: address for task, address in addresses.items() if task != network.task},
            self.inside.listeners,
            private_network.virtual_ports(network.cluster_spec)[network.task],
            self.inside.fresh_socket,
        )
        self.agent.start()

    def close(self) -> None:
        if self.agent is not None:
            self.agent.stop()
        if self.inside is not None:
            self.inside.close()
        self.gateway.close()


def _spark_executor_id() -> str | None:
    """Best-effort Spark executor id from inside a PySpark worker.

    ``TaskContext`` has no executor id. Standalone workers (used by
    ``local-cluster``) export ``SPARK_LOG_URL_STDERR=...&executorId=N&...``
    to the executor, and PySpark workers inherit it. YARN exports
    ``CONTAINER_ID``.

    Returns
    -------
    str or None
        The executor id, the YARN container id, or ``None``.
    """
    url = os.environ.get("SPARK_LOG_URL_STDERR", "")
    for part in url.replace("?", "&").split("&"):
        if part.startswith("executorId="):
            return part.split("=", 1)[1]
    return os.environ.get("CONTAINER_ID")


def set_parent_death_signal() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux).

    When Spark kills a node task (job cancelled, timeout, executor lost), it
    kills the PySpark worker but not that worker's children. Without this
    call a node process would live on and keep its TF port. Best effort:
    does nothing where ``prctl`` is missing.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # 1 == PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux, or no prctl
        pass


def _child_main(node_main: NodeMain, args: dict, info: NodeInfo, conn: Any, parent_pid: int) -> None:
    """Body of the forked node process: run the node, report, then ``os._exit``.

    Parameters
    ----------
    node_main : callable
        ``node_main(args, info)``.
    args : dict
        Arguments for ``node_main``.
    info : NodeInfo
        This node.
    conn : multiprocessing.connection.Connection
        Sending end of the pipe to the watching parent: ``None`` on success,
        the formatted traceback on failure.
    parent_pid : int
        The watching parent's pid, to detect that it died before the death
        signal was armed.
    """
    set_parent_death_signal()
    if os.getppid() != parent_pid:
        # The parent died between fork() and prctl(): the death signal was
        # armed too late to fire, so leave now rather than run unwatched.
        os._exit(1)
    code = 0
    try:
        node_main(args, info)
        conn.send(None)
    except BaseException:  # noqa: BLE001 - every failure goes to the parent
        code = 1
        conn.send(traceback.format_exc())
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        # os._exit rather than a normal exit, because (1) the fork shares the
        # PySpark worker's socket to the JVM, and interpreter teardown could
        # flush stray bytes into it; (2) TF's gRPC server and coordinator
        # threads have no clean shutdown and can hang teardown.
        os._exit(code)


def run_isolated(
    node_main: NodeMain,
    args: dict,
    info: NodeInfo,
    node_dir: str | None = None,
    network: PrivateNetwork | None = None,
    survive_death: bool = False,
) -> None:
    """Run ``node_main`` in a forked child process, watch it, and fail here when it fails or dies.

    Why a child process: TFoS runs chief and worker nodes inside the PySpark
    worker, which PySpark reuses for later tasks. A child process takes every
    piece of TF state with it when it exits: the gRPC server, coordinator
    threads, the collective-ops configuration and the memory. Measured
    without it: MWMS after PSS in the same application failed in the reused
    worker, and the old coordinator kept logging gRPC errors.

    Why the parent waits: it is the watchdog that makes a dead node fail
    fast. A ParameterServerStrategy coordinator treats a lost worker as
    preempted and waits for it to come back, and nothing in TFoS notices a
    lost ps, so a killed TF process alone stalls the run until TFoS's
    3-day shutdown timeout. The parent sees the death at once (end of file
    on the pipe) and raises a :class:`RuntimeError` naming the node; that
    fails the node's Spark task, and with ``spark.task.maxFailures=1`` Spark
    aborts the node job, which :func:`tf_models.tfos.run_cluster` reports.

    ``os.fork`` rather than ``multiprocessing``: TFoS runs ps nodes in a
    daemonic ``multiprocessing`` process, which may not start
    ``multiprocessing`` children. ``fork`` rather than ``spawn``, because
    ``node_main`` may live in a driver script's ``__main__``. TFoS already
    imported TensorFlow into the parent but has not started its runtime.

    Parameters
    ----------
    node_main : callable
        ``node_main(args, info)``.
    args : dict
        Arguments for ``node_main``, with the run's ``"run_id"``.
    info : NodeInfo
        This node.
    node_dir : str or None
        Where to write this node's file (see
        :mod:`tf_models.tfos.node_files`); ``None`` writes nothing.
    network : PrivateNetwork or None
        Run the node's TensorFlow in a private network, this watcher its
        tunnel agent and storage gateway; ``None``: on the host's network.
    survive_death : bool
        Return when the process dies (killed, crashed) instead of raising:
        an elastic worker's run goes on without it
        (:mod:`tf_models.tfos.lost_nodes`). A node that raised still fails.

    Raises
    ------
    RuntimeError
        ``TF node worker:1 (...) failed:`` and the child's traceback, or
        ``TF node worker:1 (...) died: its process was killed by SIGKILL``.
    """
    recv_end, send_end = multiprocessing.Pipe(duplex=False)
    # The node process's ends, and the watcher's: its network's sockets, its storage gateway.
    pairs = [socket.socketpair(), socket.socketpair()] if network else []
    sys.stdout.flush()  # or the child would print the parent's buffered output again
    sys.stderr.flush()
    parent_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        recv_end.close()
        main = node_main
        if network is not None:
            for watcher_end, _ in pairs:
                watcher_end.close()
            main = functools.partial(_private_main, node_main, network, pairs[0][1], pairs[1][1])
        _child_main(main, args, info, send_end, parent_pid)  # never returns
    send_end.close()
    for _, node_end in pairs:
        node_end.close()
    print(f"tfbs node process: job={info.job_name} task={info.task_index} pid={pid}", file=sys.stderr, flush=True)
    watch = _Watch(network, pairs[0][0], pairs[1][0]) if network is not None else None
    if node_dir:
        write_node_file(node_dir, info, pid, str(args.get("run_id")))
    try:
        error = recv_end.recv()
    except EOFError:  # the child died without reporting (killed, crashed)
        error = None
    _, status = os.waitpid(pid, 0)
    if watch is not None:
        watch.close()
    label = node_label(info.job_name, info.task_index, info.spark_executor_id, info.hostname, pid)
    state, reason = _outcome(error, status)
    if node_dir:
        # Before raising: Spark may kill this task at once when a peer's
        # failure reaches it first, and the driver must still learn who died.
        write_node_file(node_dir, info, pid, str(args.get("run_id")), state, reason)
    if state == "failed":
        raise RuntimeError(f"{label} failed:\n{error}")
    if state == "died" and survive_death:
        print(f"{label} died: {reason}; the run goes on without it", file=sys.stderr, flush=True)
    elif state == "died":
        raise RuntimeError(f"{label} died: {reason}")


def _outcome(error: str | None, status: int) -> tuple[str, str]:
    """``(state, reason)`` of a node process: ``failed`` (it raised), ``died`` (killed, crashed) or ``done``."""
    if error is not None:
        return "failed", exception_line(error)
    if status != 0:
        return "died", f"its process {exit_reason(status)}"
    return "done", ""


class NodeEntry:
    """The ``fn(tf_args, ctx)`` that TFoS runs on each executor.

    This is a module-level class rather than a closure, so cloudpickle
    sends it by reference (the executor imports this module), while
    ``node_main`` may be pickled by value.

    Parameters
    ----------
    node_main : callable
        ``node_main(args, info)``, run by every node.
    """

    def __init__(self, node_main: NodeMain) -> None:
        self.node_main = node_main

    def __call__(self, tf_args: argparse.Namespace, ctx: Any) -> None:
        """Run this node: called by TFoS in the node's Spark task.

        Parameters
        ----------
        tf_args : argparse.Namespace
            The ``node_args`` of :func:`tf_models.tfos.run_cluster`.
        ctx : tensorflowonspark.TFNode.TFNodeContext
            TFoS's context of this node.
        """
        info = NodeInfo(
            job_name=ctx.job_name,
            task_index=int(ctx.task_index),
            executor_id=int(ctx.executor_id),
            spark_executor_id=_spark_executor_id(),
            cluster_spec={k: list(v) for k, v in ctx.cluster_spec.items()},
            hostname=socket.gethostname(),
            pid=os.getpid(),
            default_fs=ctx.defaultFS,
        )
        # A retried task never gets here (tfos_patches.NodeTaskGuard).
        # Report unreachable peers at once instead of retrying gRPC calls
        # (the TF ParameterServerStrategy tutorial sets the same value).
        os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")
        args = dict(vars(tf_args))
        # print + flush to stderr: it reaches the executor's stderr file
        # whatever the worker's logging setup (see the package docstring).
        print(info.describe(), file=sys.stderr, flush=True)
        if info.job_name == PS:
            # TFoS runs ps nodes in a forked daemon process, and its task only
            # polls TFoS's queues: a dead ps process would go unnoticed. So
            # this daemon forks once more and watches the ps like the other
            # nodes; TFoS passes the watcher's error on and fails the task.
            # The death signal stops the watcher outliving a killed task.
            set_parent_death_signal()
        secret = args.pop(TF_NETWORK_SECRET_ARG, None)
        network = None
        if secret is not None:
            network = PrivateNetwork(secret, f"{info.job_name}:{info.task_index}", info.cluster_spec)
        survive_death = goes_on_without(info.job_name, bool(args.get(ELASTIC_WORKERS_ARG)))
        if network is not None:
            # A node not run by root enters a user namespace of its own, where root's folders (/tmp)
            # show as the overflow uid's like every other user's: noted here, they stay root's there.
            note_root_folders(args.get(PRIVATE_FOLDERS_ARG, ()))
        run_isolated(
            self.node_main, args, info, node_dir=args.get(NODE_DIR_ARG), network=network, survive_death=survive_death
        )
        if info.job_name == PS:
            # TFoS's ps task waits for None on its manager's control queue.
            # The node has returned, so the chief is done: the ps stops
            # itself, and nothing needs to reach its manager from elsewhere.
            ctx.mgr.get_queue("control").put(None)
        print(
            f"tfbs node done: job={info.job_name} task={info.task_index} executor={info.spark_executor_id}",
            file=sys.stderr,
            flush=True,
        )
