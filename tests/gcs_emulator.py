"""pytest plugin: a Google Cloud Storage emulator for ``gs://`` tests.

The stand-in is ``gcp-storage-emulator`` (PyPI, pure Python, offline),
which serves GCS's JSON API; the code under test keeps its real client,
pyarrow's ``GcsFileSystem``, and only its endpoint differs, through the
``STORAGE_EMULATOR_HOST`` variable that :mod:`tfbs.storage` honours.

The variable is set when this plugin is imported (conftest's
``pytest_plugins``), before any fixture starts a Spark JVM: the JVM copies
the driver's environment once, at launch, and Spark's Python workers (and
``local-cluster`` executors) inherit it from there. The emulator itself
starts only when a test asks for it, on the socket bound here (listening
from import on, handed to the emulator's process: the port is bound once).

Fixtures
--------
gcs_emulator
    Session-scoped: the running emulator (:class:`GcsEmulator`) with a
    bucket created through pyarrow's client.
gcs_base
    Per test: a ``gs://<bucket>/<test>-<random>`` URI under which the test
    writes; deleted afterwards.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from tfbs import storage

HOST = "127.0.0.1"
BUCKET = "tfbs-tests"
#: Only needed to create the bucket: GCS buckets belong to a project.
PROJECT = "tfbs-tests"
START_TIMEOUT_S = 30.0


def _listening_socket() -> socket.socket:
    """A TCP socket bound to a free loopback port, listening: the emulator's, from now on.

    Bound once, here, and handed to the emulator's process when it starts
    (:data:`_SERVE_ON_INHERITED_SOCKET`): a port picked now and bound by the
    emulator later could be taken by anything else in between (two suites
    run side by side, Spark's and Hadoop's daemons pick ports all the time).
    Connections that come before the emulator wait in the socket's backlog.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((HOST, 0))
    sock.listen(64)
    return sock


#: Bound at import so the variable is in the environment before a Spark
#: JVM is launched (see the module docstring).
_LISTENING = _listening_socket()
PORT = _LISTENING.getsockname()[1]
ENDPOINT = f"http://{HOST}:{PORT}"
os.environ[storage.EMULATOR_ENV] = ENDPOINT

#: Runs the emulator (in memory) on the listening socket whose descriptor is argv[1], instead of binding one.
_SERVE_ON_INHERITED_SOCKET = """
import socket, sys, types
from http import server as http_server
from gcp_storage_emulator import server as emulator

listening = socket.socket(fileno=int(sys.argv[1]))


class InheritedServer(http_server.HTTPServer):
    def __init__(self, address, handler):
        super().__init__(address, handler, bind_and_activate=False)
        self.socket.close()
        self.socket = listening
        self.server_address = listening.getsockname()
        self.server_name, self.server_port = self.server_address[0], self.server_address[1]


# The emulator makes its HTTPServer through its module's name for http.server.
emulator.server = types.SimpleNamespace(HTTPServer=InheritedServer)
emulator.create_server(*listening.getsockname(), in_memory=True).run()
"""


@dataclass(frozen=True)
class GcsEmulator:
    """A running emulator.

    Attributes
    ----------
    endpoint
        ``http://host:port``, the value of ``STORAGE_EMULATOR_HOST``.
    bucket
        A bucket that exists.
    process
        The emulator's process.
    """

    endpoint: str
    bucket: str
    process: subprocess.Popen

    def objects(self, prefix: str = "") -> dict[str, dict]:
        """Every object under ``prefix`` as the service lists it, by name.

        Read straight from the JSON API, not through pyarrow, so tests can
        check what is stored (directory markers included) independently of
        the client under test.
        """
        found: dict[str, dict] = {}
        token = ""
        while True:
            url = f"{self.endpoint}/storage/v1/b/{self.bucket}/o?prefix={quote(prefix, safe='')}"
            if token:
                url += f"&pageToken={quote(token, safe='')}"
            with urllib.request.urlopen(url, timeout=10) as response:
                page = json.load(response)
            found.update({item["name"]: item for item in page.get("items", [])})
            token = page.get("nextPageToken", "")
            if not token:
                return found


def _healthy(endpoint: str) -> bool:
    """True once the emulator answers its health check."""
    try:
        with urllib.request.urlopen(f"{endpoint}/", timeout=1) as response:
            return response.read().strip() == b"OK"
    except (urllib.error.URLError, OSError):
        return False


def _start(listening: socket.socket, log: Path) -> subprocess.Popen:
    """Start the emulator on the ``listening`` socket (handed over, then closed here), in memory, logging to ``log``."""
    fd = listening.fileno()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE_ON_INHERITED_SOCKET, str(fd)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            pass_fds=(fd,),
        )
    host, port = listening.getsockname()
    listening.close()  # the emulator holds it now
    deadline = time.monotonic() + START_TIMEOUT_S
    endpoint = f"http://{host}:{port}"
    while not _healthy(endpoint):
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            raise RuntimeError(f"GCS emulator did not start on {endpoint}:\n{log.read_text()[-2000:]}")
        time.sleep(0.1)
    return process


def _stop(process: subprocess.Popen) -> None:
    """Stop the emulator process this plugin started."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _publish(endpoint: str) -> None:
    """Point this process, and an already running Spark context, at ``endpoint``.

    A SparkContext started before this plugin was imported did not inherit
    the variable; its ``environment`` (what ``spark.executorEnv.*`` fills)
    is sent with every Python task created from now on.
    """
    os.environ[storage.EMULATOR_ENV] = endpoint
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is not None:
        context.environment[storage.EMULATOR_ENV] = endpoint


@pytest.fixture(scope="session")
def gcs_emulator(tmp_path_factory) -> Iterator[GcsEmulator]:
    """The emulator, with bucket :data:`BUCKET`, for the whole session."""
    import pyarrow.fs as pafs

    process = _start(_LISTENING, tmp_path_factory.mktemp("gcs-emulator") / "emulator.log")
    try:
        _publish(ENDPOINT)
        # Through pyarrow's own client: creating a bucket needs a project id.
        client = pafs.GcsFileSystem(
            anonymous=True, scheme="http", endpoint_override=f"{HOST}:{PORT}", project_id=PROJECT
        )
        client.create_dir(BUCKET)
        yield GcsEmulator(endpoint=ENDPOINT, bucket=BUCKET, process=process)
    finally:
        _stop(process)


@pytest.fixture
def gcs_base(gcs_emulator: GcsEmulator, request) -> Iterator[str]:
    """A ``gs://`` directory URI of this test's own, removed afterwards."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")[:60]
    base = f"gs://{gcs_emulator.bucket}/{name}-{uuid.uuid4().hex[:8]}"
    yield base
    storage.delete_dir(base)
