"""Hosts lost and cut off during runs on YARN across hosts, and what another host sees of a run.

Every run here is submitted from the gateway host with ``scripts/submit_yarn.sh``,
as an operator submits a stage by hand, on the shards of the DAG's run
(``dag_on_yarn``); the executors run on ``node1..3``.

* A worker lost mid-training (its host killed whole: DataNode, NodeManager,
  containers; or, when every host also runs the ps, the chief or the
  application master, its TF process): the run names the node and its
  host, goes on with the workers left and finishes every step; its export
  scores above the motif scan on every TF/cell.
* A DataNode host lost during preprocessing while a shard is being written
  through it (its DataNode paused, in turns, until the NameNode's fsck lists
  a file open for write with a block there, then the host killed): the shards come
  out whole, the same bytes as the DAG's undisturbed run.
* A worker's host cut off for 15 s during training (its link down, then up,
  shorter than YARN's expiry of a silent host): the run finishes all its
  steps within its timeout.
* From the ``outsider`` host (on the bridge, named by no one, no secret):
  every port the run's processes listen on is scanned; only Hadoop's
  daemons, Spark's authenticated endpoints and TF's gRPC servers answer;
  Spark's refuse a peer without the application's secret, the reservation
  server an unsigned message; no secret or authkey is in any container log.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PIPELINE_OVERRIDES, REPO, TENANT, TENANT_HOME, StreamedProcess
from hostnet import (
    ALLOWED_KINDS,
    OutsiderScan,
    assert_outsider_refused,
    outsider_exchanges,
    outsider_scan,
    placement_hosts,
)
from hosts import GATEWAY
from netwatch import files_naming, is_refusal, read_spy, secret_forms

from tfbs import storage
from tfbs.launch import QUICK_JVM_OPTIONS

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

SUBMIT = REPO / "scripts" / "submit_yarn.sh"
#: Spark settings of every submission here (as the DAG's deployment gives them).
SPARK_OPTIONS = [
    "--conf", "spark.ui.enabled=false",
    "--conf", "spark.executor.memory=768m",
    "--conf", "spark.yarn.am.memory=512m",
    "--conf", f"spark.executor.extraJavaOptions={QUICK_JVM_OPTIONS}",
    "--conf", f"spark.yarn.am.extraJavaOptions={QUICK_JVM_OPTIONS}",
]  # fmt: skip
#: A training long enough to lose a worker in its middle: the loss is made at
#: step 100 or later and seen within about 10 s, when 500-700 steps are left.
#: It also outlasts a host's cut, made at step 100 or later: at about 20
#: steps/s on these hosts, 700 steps are 35 s with both workers, 15 s of them cut off.
TRAINING_STEPS = 800
TRAINING = [*PIPELINE_OVERRIDES, f"train.steps={TRAINING_STEPS}", "train.placement.timeout_s=400"]
#: The lost ps's run: its first checkpoint (step 100) before the loss, and steps left for the rerun.
#: One worker: a lost ps stops the run whatever the workers (two containers and TF nodes fewer over
#: the run and its rerun).
LOST_PS_STEPS = 400
LOST_PS_WORKERS = 1
#: How long the link of a host stays down: under the ResourceManager's 30 s
#: NodeManager expiry (hadoop/host_daemons.py), so YARN keeps the host and its
#: containers and the one outcome is a finished run. A cut as long as the
#: expiry raced it (one run in three lost the node); a host that stays lost
#: is the lost-host test's.
CUT_OFF_S = 15
#: How long a DataNode stays paused at a time for a write to reach it, then
#: runs: far under the NameNode's minute before it calls a silent DataNode
#: dead, and each run lets a read that waited on it finish (the HDFS client
#: waits on a paused DataNode's read without end).
DATANODE_PAUSE_S = 6
DATANODE_RUN_S = 1
#: The longest the victim's DataNode blinks for a write to reach it.
DATANODE_WRITE_WAIT_S = 300
APPLICATION = re.compile(r"application_\d+_\d+")


@pytest.fixture(scope="module")
def yarn_env(hadoop, yarn_archives) -> dict[str, str]:
    """The environment of ``submit_yarn.sh`` on the gateway: the cluster and the archives on HDFS."""
    return {
        **hadoop.host_env(),
        "TFBS_ENV_ARCHIVE": yarn_archives["env"],
        "TFBS_SPARK_ARCHIVE": yarn_archives["spark"],
        "TFBS_PYTHON": sys.executable,
        # The secure cluster: Spark logs in from the tenant's keytab, the driver's HDFS client from a ticket.
        "TFBS_PRINCIPAL": hadoop.kdc.principal(TENANT),
        "TFBS_KEYTAB": str(hadoop.keytab(TENANT)),
    }


def _submit(hadoop, env, application: str, arguments: list[str], *submit_options: str) -> StreamedProcess:
    """``submit_yarn.sh APPLICATION`` on the gateway, streamed."""
    command = ["bash", str(SUBMIT), application, *SPARK_OPTIONS, *submit_options, "--", *arguments]
    return StreamedProcess(hadoop.command(GATEWAY, command), env)


def _stage_arguments(overrides: list[str]) -> list[str]:
    arguments = ["--config", "conf/demo.yaml"]
    for override in overrides:
        arguments += ["--set", override]
    return arguments


def _wait_for(process: StreamedProcess, pattern: str, timeout: float = 600) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, process.output)
        if found:
            return found
        assert process.proc.poll() is None, f"ended before {pattern!r}:\n{process.output[-6000:]}"
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} within {timeout} s:\n{process.output[-6000:]}")


def _application_master_host(hadoop, output: str) -> str:
    """The host of the application master (container 1) of the application ``output`` names."""
    app = APPLICATION.search(output).group(0)
    return hadoop.host_of_container(f"container_{app.removeprefix('application_')}_01_000001")


def _victim(placed: dict[str, str], spare: set[str]) -> tuple[str, str]:
    """A worker and its host, preferring a host that runs neither ``spare`` nor the chief."""
    workers = sorted(node for node in placed if node.startswith("worker"))
    ranked = sorted(workers, key=lambda node: (placed[node] in spare, placed[node] == placed["chief:0"]))
    return ranked[0], placed[ranked[0]]


def _lone_worker(placed: dict[str, str], spare: set[str]) -> tuple[str, str] | None:
    """A worker whose host runs no other TF node and nothing of ``spare``, and that host; None if there is none."""
    for node, host in sorted(placed.items()):
        if node.startswith("worker") and host not in spare and list(placed.values()).count(host) == 1:
            return node, host
    return None


def _lose_the_ps(hadoop, output: str) -> str:
    """Kill the ps's host, or its TF process where the application master shares that host: ``"host"`` or ``"process"``.

    The application master's host is spared, as by :func:`_lose_a_worker`:
    its loss ends the application whatever the TF nodes do.
    """
    host = placement_hosts(output)["ps:0"]
    if host != _application_master_host(hadoop, output):
        hadoop.kill_host(host)
        return "host"
    os.kill(int(re.search(r"tfbs node process: job=ps task=0 .*? pid=(\d+)", output).group(1)), signal.SIGKILL)
    return "process"


# ---------------------------------------------------------------------------
# A worker lost mid-training
# ---------------------------------------------------------------------------


@dataclass
class HostLoss:
    """A training that lost a worker, and what an outsider saw during it."""

    node: str
    host: str
    #: ``"host"`` (killed whole) or ``"process"`` (its TF process killed).
    lost: str
    code: int
    output: str
    loss_at: int
    scan: OutsiderScan
    run_uri: str
    evaluate_code: int
    evaluate_output: str
    #: Every file of the application's containers (below 1 MiB) with its mode, read while they ran: a
    #: container that ends has its token file deleted by its NodeManager.
    container_files: dict[Path, tuple[int, bytes]]
    secrets: list[bytes]
    authkeys: list[bytes]
    applications: list[str]


def _container_files(hadoop, applications: list[str]) -> dict[Path, tuple[int, bytes]]:
    """Every file below 1 MiB in the containers of ``applications`` now, with its mode and bytes."""
    found = {}
    for app in set(applications):
        for container in hadoop.workdir.glob(f"hosts/*/data/nm-local/usercache/*/appcache/{app}/container_*"):
            for path in container.rglob("*"):
                with contextlib.suppress(OSError):  # a file the container removed meanwhile
                    info = path.stat()
                    if path.is_file() and info.st_size < 1 << 20:
                        found[path] = (info.st_mode & 0o777, path.read_bytes())
    return found


def _train_watched(hadoop, env, overrides: list[str], spy: Path) -> StreamedProcess:
    """``tfbs train`` on YARN under netwatch's spy, which records the run's secrets (tests/netwatch.py)."""
    arguments = [str(spy), "-m", "jobs.train", *_stage_arguments(overrides)]
    return _submit(hadoop, env, "tests/netwatch.py", arguments)


def _lose_a_worker(hadoop, output: str) -> tuple[str, str, str]:
    """Kill a lone worker's host, else a worker's TF process: ``(node, host, "host" or "process")``.

    Not its container: YARN reports a container killed by a signal as the
    application's own failure, which Spark counts against the node's task
    (a pre-emption, or a host lost, it does not), so the run stops.
    """
    placed = placement_hosts(output)
    lone = _lone_worker(placed, {_application_master_host(hadoop, output)})
    if lone is not None:
        hadoop.kill_host(lone[1])
        return (*lone, "host")
    node, host = _victim(placed, set())
    job, task = node.split(":")
    pid = int(re.search(rf"tfbs node process: job={job} task={task} .*? pid=(\d+)", output).group(1))
    os.kill(pid, signal.SIGKILL)
    return node, host, "process"


@pytest.fixture(scope="module")
def host_loss(hadoop, yarn_env, dag_on_yarn, tmp_path_factory) -> HostLoss:
    scratch = tmp_path_factory.mktemp("host-loss")
    run_uri = f"{hadoop.fs_default_fs}{TENANT_HOME}/host-loss/run"
    overrides = [*TRAINING, f"data.root={hadoop.fs_default_fs}{TENANT_HOME}/dream/data", f"run_dir={run_uri}",
                 f"shards_dir={dag_on_yarn.run_uri}/shards"]  # fmt: skip
    training = _train_watched(hadoop, yarn_env, overrides, scratch / "spy.jsonl")
    lost = ""
    try:
        _wait_for(training, r"chief: step [1-9]\d\d/")
        scan = outsider_scan(hadoop, training.output)  # what an outsider reaches while the run trains
        node, victim_host, lost = _lose_a_worker(hadoop, training.output)
        loss_at = len(training.output)
        files = _container_files(hadoop, APPLICATION.findall(training.output))
        code = training.wait(timeout=600)
    finally:
        training.kill()
        if lost == "host":
            hadoop.restart_host(victim_host)
        # For a post-mortem: pytest keeps the last sessions' temporary folders.
        (scratch / "training.log").write_text(training.output)
    evaluation = _submit(hadoop, yarn_env, "evaluate", _stage_arguments(overrides))
    try:
        evaluate_code = evaluation.wait(timeout=600)
    finally:
        evaluation.kill()
    secrets, authkeys = read_spy(scratch / "spy.jsonl")
    return HostLoss(
        node, victim_host, lost, code, training.output, loss_at, scan, run_uri, evaluate_code, evaluation.output,
        files, secrets, authkeys, sorted(set(APPLICATION.findall(training.output))),
    )  # fmt: skip


def test_a_lost_worker_is_named_with_its_host_and_the_run_finishes_with_the_workers_left(host_loss, hadoop):
    loss = host_loss
    print(f"{loss.node} on {loss.host} lost ({loss.lost})")
    assert loss.code == 0, loss.output[-6000:]
    job, task = loss.node.split(":")
    named = re.search(  # a lost host's node with its address; a killed process's with its pid
        rf"tfbs cluster: TF node {job}:{task} \((?:Spark executor \S+, )?host ([^ ,)]+)(?: \(([\d.]+)\))?(?:, pid \d+)?\) "
        r"(?:lost|died)[^\n]*; training goes on with the 1 worker left",
        loss.output,
    )
    assert named is not None, loss.output[-6000:]
    assert named.group(1) == loss.host and named.group(2) in (None, hadoop.address(loss.host))
    # Trained on after the loss, to the last step.
    assert re.search(rf"chief: step {TRAINING_STEPS}/{TRAINING_STEPS}", loss.output[loss.loss_at :])
    (export,) = re.findall(r"model: (\S+)/export \(version", loss.output)
    history = json.loads(storage.read_text(hadoop.by_address(f"{export}/history.json")))
    assert history[-1]["step"] == TRAINING_STEPS
    # The model trained on the workers left learned: above the motif scan on every TF/cell.
    assert loss.evaluate_code == 0, loss.evaluate_output[-6000:]
    report = json.loads(storage.read_text(hadoop.by_address(f"{loss.run_uri}/report/report.json")))
    assert report["version"] in export and len(report["results"]) >= 4
    assert report["below_motif_scan"] == [], report["below_motif_scan"]


def test_an_outsider_reaches_only_hadoop_spark_and_tf_servers(host_loss):
    scan = host_loss.scan
    assert_outsider_refused(scan, ALLOWED_KINDS, n_agents=4)
    assert not scan.web_answers  # spark.ui.enabled=false (SPARK_OPTIONS)


def test_sparks_endpoints_refuse_a_peer_without_the_applications_secret(host_loss):
    answers = host_loss.scan.spark_answers
    assert len(answers) >= 4, "the driver's and the executors' endpoints were reachable"
    for endpoint, answer in answers.items():
        # Nothing, or one RpcFailure frame (the error that refused it): never a response.
        assert is_refusal(answer), (endpoint, answer[:200])


def _random_windows(data: bytes, size: int = 20) -> list[bytes]:
    """The windows of ``data`` that look random (mostly unprintable): a token's password, a key."""
    windows = (data[i : i + size] for i in range(len(data) - size + 1))
    return [w for w in windows if sum(32 <= b < 127 for b in w) < size // 2]


def test_no_keytab_or_token_reaches_a_container_or_a_log(host_loss, hadoop):
    """Spark logs in from the tenant's keytab on the gateway; containers get delegation tokens, never the keytab."""
    loss = host_loss
    keytab = hadoop.keytab(TENANT).read_bytes()
    files = loss.container_files
    containers = {next(p for p in path.parents if p.name.startswith("container_")) for path in files}
    assert len(containers) >= 5  # the application master and the four nodes' executors
    assert not [path for path, (_, data) in files.items() if path.suffix == ".keytab" or data == keytab]
    tokens = [data for path, (_, data) in files.items() if path.name == "container_tokens"]
    assert tokens  # YARN handed every container its delegation tokens
    # The executor plugin's copy of the current tokens, beside YARN's file, for the container's user alone.
    current = {mode for path, (mode, _) in files.items() if path.name == "tfbs-current-tokens"}
    assert current == {0o600}, current
    secrets = [window for data in tokens for window in _random_windows(data)] + _random_windows(keytab)
    logs = [path for app in loss.applications for entry in hadoop.container_logs(app).values()
            for path in entry.directory.iterdir()]  # fmt: skip
    assert files_naming(logs, secrets) == {}


def test_no_secret_or_authkey_in_any_container_log(host_loss, hadoop):
    loss = host_loss
    assert len(loss.secrets) == 1 and len(loss.authkeys) == 4, (len(loss.secrets), len(loss.authkeys))
    logs = [path for app in loss.applications for entry in hadoop.container_logs(app).values()
            for path in entry.directory.iterdir()]  # fmt: skip
    assert len({path.parent for path in logs}) >= 5  # the application's master and executors
    secrets = loss.secrets + loss.authkeys
    assert files_naming(logs, secrets) == {}
    output = loss.output.encode()
    assert not [form for secret in secrets for form in secret_forms(secret) if form in output]


# ---------------------------------------------------------------------------
# The reservation server, from the outsider
# ---------------------------------------------------------------------------

#: Run on the gateway: a reservation server for two nodes on the gateway's address, until stdin closes.
_RESERVATION_SERVER = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
from tf_models.tfos.reservation import ReservationServer
server = ReservationServer(2, sys.argv[1])
address = server.start()
print(address[1], flush=True)
sys.stdin.read()
"""


def test_the_reservation_server_refuses_an_outsiders_unsealed_message(hadoop, tmp_path):
    import pickle
    import struct

    planted = tmp_path / "planted"
    server = hadoop.popen(
        GATEWAY, [sys.executable, "-c", _RESERVATION_SERVER, hadoop.address(GATEWAY)], cwd=REPO,
        env=hadoop.host_env(), stdin=-1, stdout=-1, stderr=-1, text=True,
    )  # fmt: skip
    try:
        port = int(server.stdout.readline())
        # What TFoS's own client sends: a bare pickle, here one that would create a file if loaded.
        payload = pickle.dumps({"type": "QINFO", "data": _Plant(planted)})
        target = (hadoop.address(GATEWAY), port)
        answers = outsider_exchanges(hadoop, [target], struct.pack(">I", len(payload)) + payload)
    finally:
        _, log = server.communicate(timeout=30)  # closes its stdin: the server ends
    assert answers == {target: b""}
    assert not planted.exists()
    assert f"refused a connection from ('{hadoop.address('outsider')}'" in log, log


class _Plant:
    """A pickle whose loading creates ``path``: the proof that something was unpickled."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


# ---------------------------------------------------------------------------
# A DataNode host lost during preprocessing
# ---------------------------------------------------------------------------


def _shard_digests(root: str) -> dict[str, str]:
    """Every file under ``root`` but the manifest (which names its folder and time): relative path -> BLAKE3."""
    return {
        uri[len(root) :]: storage.blake3_of(uri)[0]
        for uri in storage.list_files(root)
        if not uri.endswith("/manifest.json")
    }


def _hosts_holding_open_blocks(hadoop, path: str) -> dict[str, str]:
    """The hosts whose DataNode is to hold a block of a file being written under ``path``, and the file.

    The NameNode's own fsck, over HTTPS as the tenant (``curl --negotiate``;
    the ``hdfs fsck`` command asks the same servlet but starts a JVM, which
    took 90 s on a loaded machine, longer than the writes wait):
    ``openforwrite`` lists the files still being written, ``blocks`` and
    ``locations`` each block's DataNodes, an unfinished one included.
    """
    url = f"{hadoop.webhdfs_url}/fsck?path={path}&openforwrite=1&files=1&blocks=1&locations=1"
    env = {**hadoop.host_env(), **hadoop.login(TENANT)}
    done = subprocess.run([*hadoop.web_client(), "--fail", url], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    by_address = {hadoop.address(name): name for name in hadoop.nodes}
    holding: dict[str, str] = {}
    for entry in re.split(r"\n(?=/)", done.stdout):
        if "OPENFORWRITE" in entry:
            for address in re.findall(r"DatanodeInfoWithStorage\[(\d+\.\d+\.\d+\.\d+):", entry):
                holding.setdefault(by_address.get(address, address), entry.split(" ", 1)[0])
    return holding


def _pause_until_written(hadoop, host: str, job: StreamedProcess, path: str) -> str:
    """Pause ``host``'s DataNode until a file under ``path`` is being written through it; return that file.

    The kill must hit a write. Each takes a fraction of a second, shorter
    than a poll, so the DataNode is paused: a write through it waits until
    the NameNode's fsck shows it open with a block there (the NameNode gives
    blocks to a paused DataNode until it calls it dead, a minute without
    heartbeats). It pauses in turns of :data:`DATANODE_PAUSE_S` and runs
    :data:`DATANODE_RUN_S` between them: a task reading a block from it
    first (as one did while all the others' writes ended) goes on to write.
    The DataNode is left paused.
    """
    pid = _datanode_pid(hadoop, host)
    deadline = time.monotonic() + DATANODE_WRITE_WAIT_S
    while time.monotonic() < deadline:
        os.kill(pid, signal.SIGSTOP)
        resume_at = time.monotonic() + DATANODE_PAUSE_S
        while time.monotonic() < resume_at:
            assert job.proc.poll() is None, f"the job ended before a write through {host}:\n{job.output[-4000:]}"
            written = _hosts_holding_open_blocks(hadoop, path).get(host, "")
            if written:
                return written
            time.sleep(0.2)
        os.kill(pid, signal.SIGCONT)
        time.sleep(DATANODE_RUN_S)
    raise AssertionError(
        f"no file seen open for write on {host} within {DATANODE_WRITE_WAIT_S} s:\n{job.output[-4000:]}"
    )


def _datanode_pid(hadoop, host: str) -> int:
    """The process id of ``host``'s DataNode."""
    for pid in hadoop.network.pids(host):
        try:
            if b"org.apache.hadoop.hdfs.server.datanode.DataNode" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:  # gone meanwhile
            continue
    raise AssertionError(f"no DataNode runs on {host}")


def test_a_datanode_host_lost_during_preprocessing_leaves_the_same_shards(hadoop, yarn_env, dag_on_yarn):
    run_uri = f"{hadoop.fs_default_fs}{TENANT_HOME}/datanode-loss/run"
    overrides = [*PIPELINE_OVERRIDES, f"data.root={hadoop.fs_default_fs}{TENANT_HOME}/dream/data", f"run_dir={run_uri}"]
    preprocess = _submit(hadoop, yarn_env, "preprocess", _stage_arguments(overrides), "--num-executors", "3")
    victim = written = ""
    try:
        # The shards' stage submitted (preprocess.build_shards._write_shards), the label files read
        # and every executor registered. Not Spark's progress bar: it comes only once a stage has
        # run 0.5 s, which this one may not.
        _wait_for(preprocess, r"Submitting \d+ missing tasks from ResultStage 1 ")
        executors = set(re.findall(r"Registered executor .*?\((\d+\.\d+\.\d+\.\d+):\d+\)", preprocess.output))
        hosts = {name for name in hadoop.nodes if hadoop.address(name) in executors}
        victim = sorted(hosts - {_application_master_host(hadoop, preprocess.output)} or hosts)[0]
        written = _pause_until_written(hadoop, victim, preprocess, f"{TENANT_HOME}/datanode-loss/run")
        hadoop.kill_host(victim)  # SIGKILL reaches the paused DataNode too
        code = preprocess.wait(timeout=900)
    finally:
        preprocess.kill()
        if victim:
            hadoop.kill_host(victim)  # a no-op when killed above; else its DataNode may be paused
            hadoop.restart_host(victim)
    assert code == 0, preprocess.output[-6000:]
    print(f"preprocessing lost {victim} (a DataNode holding a block of {written}, being written; a NodeManager "
          "and its executors) and finished")  # fmt: skip
    undisturbed = hadoop.by_address(f"{dag_on_yarn.run_uri}/shards")
    disturbed = hadoop.by_address(f"{run_uri}/shards")
    digests = _shard_digests(disturbed)
    assert len(digests) > 20 and digests == _shard_digests(undisturbed)
    manifest, reference = (json.loads(storage.read_text(f"{root}/manifest.json")) for root in (disturbed, undisturbed))
    assert manifest["counts"] == reference["counts"] and manifest["fingerprint"] == reference["fingerprint"]


# ---------------------------------------------------------------------------
# A host cut off during training
# ---------------------------------------------------------------------------


def test_a_worker_s_host_cut_off_shorter_than_yarn_s_expiry_leaves_a_run_that_finishes(hadoop, yarn_env, dag_on_yarn):
    run_uri = f"{hadoop.fs_default_fs}{TENANT_HOME}/cut-off/run"
    overrides = [*TRAINING, f"data.root={hadoop.fs_default_fs}{TENANT_HOME}/dream/data",
                 f"run_dir={run_uri}", f"shards_dir={dag_on_yarn.run_uri}/shards"]  # fmt: skip
    started = time.monotonic()
    training = _submit(hadoop, yarn_env, "train", _stage_arguments(overrides))
    victim = ""
    try:
        _wait_for(training, r"chief: step [1-9]\d\d/")
        placed = placement_hosts(training.output)
        node, victim = _victim(placed, {placed["ps:0"]})
        hadoop.cut_off(victim)
        cut_at = time.monotonic()
        time.sleep(CUT_OFF_S)  # the cut itself
        hadoop.reconnect(victim)
        code = training.wait(timeout=400)
        finished = time.monotonic()
    finally:
        if victim:
            hadoop.reconnect(victim)
        training.kill()
    on_host = sorted(name for name, host in placed.items() if host == victim)
    print(f"{victim} ({', '.join(on_host)}) cut off for {CUT_OFF_S} s: the run ended {finished - cut_at:.0f} s after")
    assert "ps:0" not in on_host, f"every worker shares its host with the ps: {placed}"
    assert finished - started < 400  # train.placement.timeout_s, start-up included: it never hangs past it
    # ParameterServerStrategy waits for the unreachable worker and takes it back; a worker whose
    # read was cut gets its stream built anew (tf_models.train_loop.STREAM_REBUILDS).
    assert code == 0, training.output[-6000:]
    assert f"chief: step {TRAINING_STEPS}/{TRAINING_STEPS}" in training.output


# ---------------------------------------------------------------------------
# A ps's host lost during training
# ---------------------------------------------------------------------------


def test_a_ps_s_host_lost_stops_the_run_naming_it_and_the_rerun_resumes(hadoop, yarn_env, dag_on_yarn):
    """A ps holds variables no other node has: its loss stops the run, by name, and the same command resumes it."""
    run_uri = f"{hadoop.fs_default_fs}{TENANT_HOME}/lost-ps/run"
    overrides = [*TRAINING, f"train.steps={LOST_PS_STEPS}", f"train.placement.num_workers={LOST_PS_WORKERS}",
                 f"data.root={hadoop.fs_default_fs}{TENANT_HOME}/dream/data",
                 f"run_dir={run_uri}", f"shards_dir={dag_on_yarn.run_uri}/shards"]  # fmt: skip
    training = _submit(hadoop, yarn_env, "train", _stage_arguments(overrides))
    victim, lost = "", ""
    try:
        _wait_for(training, r"chief: step [1-9]\d\d/")  # its first checkpoint is on HDFS
        placed = placement_hosts(training.output)
        victim = placed["ps:0"]
        lost = _lose_the_ps(hadoop, training.output)
        code = training.wait(timeout=300)
    finally:
        training.kill()
        if lost == "host":
            hadoop.restart_host(victim)
    on_host = sorted(name for name, host in placed.items() if host == victim)
    print(f"{victim} ({', '.join(on_host)}) lost ({lost}): the run stopped")
    assert code != 0, training.output[-6000:]
    # The ps by name with its host (or the chief sharing it); "lost" for a host, "died" for a process.
    named = rf"TF node (?:ps|chief):0 \((?:Spark executor \S+, )?host {victim}\b[^\n]*?\) (?:lost|died)"
    assert re.search(named, training.output), training.output[-6000:]
    hint = re.search(r"Run the same command again to resume from the checkpoint at step (\d+)", training.output)
    assert hint is not None and 0 < int(hint.group(1)) < LOST_PS_STEPS, training.output[-6000:]

    rerun = _submit(hadoop, yarn_env, "train", _stage_arguments(overrides))
    try:
        code = rerun.wait(timeout=600)
    finally:
        rerun.kill()
    assert code == 0, rerun.output[-6000:]
    resumed = re.search(rf"resuming from the checkpoint at step (\d+) of {LOST_PS_STEPS}", rerun.output)
    assert resumed is not None and int(resumed.group(1)) >= int(hint.group(1)), rerun.output[-6000:]
    assert f"chief: step {LOST_PS_STEPS}/{LOST_PS_STEPS}" in rerun.output


# ---------------------------------------------------------------------------
# Spark's protection, kept on
# ---------------------------------------------------------------------------


def test_a_yarn_session_with_authentication_off_is_refused_in_one_line(hadoop, yarn_env, dag_on_yarn):
    """As a deployment's ``tfbs_spark_conf`` or a spark-submit option could turn it off: the job
    refuses before its session starts (preprocessing into a new run folder needs one at once)."""
    overrides = [*PIPELINE_OVERRIDES, f"data.root={hadoop.fs_default_fs}{TENANT_HOME}/dream/data",
                 f"run_dir={hadoop.fs_default_fs}{TENANT_HOME}/auth-off/run"]  # fmt: skip
    stage = _submit(hadoop, yarn_env, "preprocess", _stage_arguments(overrides), "--conf", "spark.authenticate=false")
    code = stage.wait(timeout=300)
    assert code == 2, stage.output[-4000:]
    assert "YarnClientSchedulerBackend" not in stage.output  # no application was started
    assert stage.output.strip().splitlines()[-1] == (
        "error: spark.conf: spark.authenticate off on YARN: other tenants could join or read this application; "
        "set it true, or set spark.allow_insecure: true to run anyway"
    )
