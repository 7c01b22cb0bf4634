"""What every Hadoop process started here needs: a JDK, Hadoop's class path, site files.

Standard library only: it runs before any virtualenv exists. Used by
:mod:`minicluster` (one JVM on loopback) and :mod:`hosts` (separate daemons
on hosts of their own).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

HADOOP_VERSION = "3.5.0"
POM = Path(__file__).resolve().with_name("pom.xml")
#: Java of this project's own that the daemons run (``hadoop/java/``), compiled against the class path.
JAVA_SOURCES = Path(__file__).resolve().with_name("java")
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "tfbs-spark" / f"hadoop-{HADOOP_VERSION}"
#: Hadoop 3.5's busiest idle loops, slowed: the CapacityScheduler's asynchronous
#: scheduler looks for work every 5 ms and the NameNode's scrubber of deleted
#: blocks every 10 ms. On the idle hosts' cluster the two daemons took 7 % of
#: a core of the 2 its clients share, 3 % at 100 ms; a container then waits at
#: most 0.1 s longer for its node. Site file -> properties.
QUIET_POLLING = {
    "hdfs-site.xml": {"dfs.namenode.block.deletion.unlock.interval.ms": "100"},
    "capacity-scheduler.xml": {"yarn.scheduler.capacity.schedule-asynchronously.scheduling-interval-ms": "100"},
}

# which buries the lines that explain a failed start.
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO,stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2} - %m%n
log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN
log4j.logger.BlockStateChange=WARN
log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN
log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN
log4j.logger.org.apache.hadoop.ipc.Server=WARN
log4j.logger.org.apache.hadoop.metrics2=WARN
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.containermanager.monitor=WARN
log4j.logger.org.eclipse.jetty=WARN
log4j.logger.http.requests=WARN
"""

log = logging.getLogger("minicluster")

log = logging.getLogger("hadoop")


class ClusterError(RuntimeError):
    """A cluster on this machine could not be fetched, started, reached or stopped."""


# --------------------------------------------------------------------- tools


def require_tool(name: str, hint: str) -> str:
    """Return the path of executable ``name`` on PATH.

    Raises
    ------
    ClusterError
        If it is missing; the message names the tool and how to get it.
    """
    path = shutil.which(name)
    if path is None:
        raise ClusterError(f"`{name}` not found on PATH: {hint}")
    return path


def find_java_home() -> Path:
    """Return ``$JAVA_HOME``, else the JDK of the ``java`` found on PATH.

    Raises
    ------
    ClusterError
        If neither gives a ``bin/java``.
    """
    configured = os.environ.get("JAVA_HOME")
    if configured:
        if not (Path(configured) / "bin" / "java").is_file():
            raise ClusterError(f"JAVA_HOME={configured} has no bin/java")
        return Path(configured)
    java = require_tool("java", "install a JDK 17 (apt-get install openjdk-17-jdk-headless) or set JAVA_HOME")
    return Path(java).resolve().parent.parent


def ensure_classpath(cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """Return the folder of the mini cluster's jars for this ``pom.xml``, fetching them if needed.

    Each pom's jars have a folder of their own, ``lib-<first 16 hex digits
    of the pom's SHA-256>``, which Maven fills in a staging folder and which
    is renamed into place only when complete. A folder in place never
    changes: clusters started from another clone (another branch, another
    pom) keep their class path while this one fetches, an interrupted fetch
    leaves nothing that looks like a class path, and editing the pom fetches
    again. Calling it again is a no-op.

    Parameters
    ----------
    cache_dir
        Folder holding the ``lib-*`` folders; Maven's own repository stays ``~/.m2``.

    Returns
    -------
    Path
        ``cache_dir / "lib-<hash>"``.

    Raises
    ------
    ClusterError
        If ``mvn`` or ``java`` is missing, or Maven fails (with its output).
    """
    lib = cache_dir / f"lib-{hashlib.sha256(POM.read_bytes()).hexdigest()[:16]}"
    if lib.is_dir():
        return lib
    find_java_home()  # Maven needs a JDK as well: report that first, it is the real cause
    mvn = require_tool("mvn", "install Apache Maven 3.6.3 or newer (apt-get install maven)")
    log.info("fetching the Hadoop %s class path with Maven into %s", HADOOP_VERSION, lib)
    started = time.monotonic()
    with _staged(lib, ".fetch-", "lib") as staging:  # the pom puts the jars in ${cache.dir}/lib
        command = [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", f"-Dcache.dir={staging}"]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ClusterError(
                f"Maven could not fetch the class path (exit {result.returncode}):\n"
                f"{tail(result.stdout + result.stderr)}"
            )
    log.info("fetched %d jars in %.1f s", len(list(lib.glob("*.jar"))), time.monotonic() - started)
    return lib


def ensure_daemon_classes(lib: Path) -> Path:
    """Return the folder of ``hadoop/java``'s classes compiled against ``lib``, compiling them if needed.

    The folder, ``classes-<digest of the sources and lib's name>`` beside
    ``lib``, holds the classes and the sources' ``*.xml`` resources. Like
    :func:`ensure_classpath` it is filled in a staging folder and renamed
    into place only when complete, and never changes once there.

    Raises
    ------
    ClusterError
        If the JDK has no ``javac`` or the compiler fails (with its output).
    """
    sources = sorted(JAVA_SOURCES.rglob("*.java"))
    resources = sorted(JAVA_SOURCES.glob("*.xml"))
    digest = hashlib.sha256(lib.name.encode())
    for path in [*sources, *resources]:
        digest.update(path.relative_to(JAVA_SOURCES).as_posix().encode() + b"\0" + path.read_bytes())
    classes = lib.parent / f"classes-{digest.hexdigest()[:16]}"
    if classes.is_dir():
        return classes
    javac = find_java_home() / "bin" / "javac"
    if not javac.is_file():
        raise ClusterError(
            f"{javac} not found: a JDK, not only a JRE, is needed (apt-get install openjdk-17-jdk-headless)"
        )
    with _staged(classes, ".compile-", "classes") as staging:
        built = staging / "classes"
        command = [str(javac), "--release", "17", "-cp", f"{lib}/*", "-d", str(built), *map(str, sources)]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise ClusterError(f"javac failed on {JAVA_SOURCES} (exit {result.returncode}):\n{tail(result.stderr)}")
        for resource in resources:
            shutil.copy2(resource, built / resource.name)
    return classes


def shared_copy(source: Path, dest: Path) -> Path:
    """``source`` (a class path folder) at ``dest``, every file readable by all: hard links where the file system allows.

    For a secure cluster's daemons, whose users cannot read a cache under a
    mode-700 home. ``dest`` is named after ``source``'s digest, so one
    already there is the same.
    """
    if not dest.is_dir():
        with _staged(dest, ".share-", "tree") as staging:
            shutil.copytree(source, staging / "tree", copy_function=_link_or_copy)
    return dest


def _link_or_copy(source: str, dest: str) -> None:
    if os.stat(source).st_mode & stat.S_IROTH:
        try:
            os.link(source, dest)
            return
        except OSError:  # another file system
            pass
    shutil.copy2(source, dest)
    os.chmod(dest, 0o644)


@contextlib.contextmanager
def _staged(target: Path, prefix: str, filled: str) -> Iterator[Path]:
    """A staging folder beside ``target``, whose ``filled`` subfolder becomes ``target`` once the body is done.

    Nothing is left behind when the body fails, and a ``target`` another
    process put in place first is kept (the same content: the names are digests).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
    try:
        yield staging
        try:
            (staging / filled).rename(target)
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# ------------------------------------------------------------- configuration


def site_xml(properties: Mapping[str, str]) -> str:
    """Render properties as a Hadoop ``*-site.xml`` document."""
    lines = ['<?xml version="1.0"?>', "<configuration>"]
    lines += [
        f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>"
        for key, value in properties.items()
    ]
    return "\n".join([*lines, "</configuration>", ""])


def http_json(url: str, timeout: float = 5.0) -> Any:
    """GET ``url`` and decode its JSON body."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def tail(text: str, lines: int = 40) -> str:
    """The last ``lines`` lines of ``text``."""
    return "\n".join(text.splitlines()[-lines:])
