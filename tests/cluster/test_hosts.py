"""The cluster of hosts itself (``hadoop/hosts.py``), and training on a Spark standalone master across them.

Each host is a network namespace with an address and a name of its own: the
NameNode and the ResourceManager see three DataNodes and three NodeManagers
at three addresses, each under its own name; the gateway's own name maps to
127.0.1.1, as Debian maps it; the outsider is named by no one. Without root
nothing of it can be made, and the error says so.

On a standalone master the training job sizes its application itself (one
single-core executor per TF node), so ps, chief and workers land on three
hosts; a count the workers cannot give is a one-line error. The master,
its workers and the run share the cluster's secret (authentication, AES/GCM
encryption); a run without it stops in one line. While such a run trains,
the outsider scanning every port of every host gets nothing but refusals
from the run: nothing from the TF nodes' tunnel agents, an RPC error or
nothing from Spark's endpoints, 403 from the driver's web UI. What the hosts
trained, evaluated here, passes the small runs' floor.

Hadoop's web endpoints speak HTTPS alone, verified by the cluster's own
authority: without it, or under a name its certificates lack, curl refuses;
plain HTTP gets no page.

Tenants apart on the secured hosts: bob, with his own ticket, can neither
list, read, overwrite nor delete alice's run in her home, nor delete her
folder at the namespace's root (sticky), while alice can; nor kill or view
her YARN application, nor see her Spark UI through the ResourceManager's
proxy (Spark's ACL refuses him); no tenant may administer YARN, its
administrator may. Each daemon runs as a Unix user of its own with the
only keytab and key store it reads; a container, which runs as its
NodeManager's user, reads no other daemon's keytab.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import host_daemons as daemons
import psutil
import pytest
from conftest import (
    DEMO_CONFIG,
    REPO,
    SMALL_OVERRIDES,
    SMALL_RUN_MIN_MEAN_AUPRC,
    StreamedProcess,
    small_config,
    wait_until,
)
from hostnet import ALLOWED_KINDS, assert_outsider_refused, outsider_exchanges, outsider_scan, placement_hosts
from hosts import GATEWAY, OUTSIDER
from jvm import ClusterError
from netwatch import SPARK_RPC_WITHOUT_AUTH, is_refusal
from service_users import run_as, service_user

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

HOSTS_PY = REPO / "hadoop" / "hosts.py"


def test_each_host_has_its_own_address_and_name(hadoop):
    beans = hadoop.get_json(f"{hadoop.webhdfs_url}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo")["beans"][0]
    live = json.loads(beans["LiveNodes"])
    # Each DataNode registered under its host's name, from its host's address.
    assert {name.split(":")[0]: node["xferaddr"].split(":")[0] for name, node in live.items()} == {
        node: hadoop.address(node) for node in hadoop.nodes
    }
    running = {node["nodeHostName"] for node in hadoop._yarn_nodes("RUNNING")}
    assert running == set(hadoop.nodes)
    assert len({hadoop.address(host) for host in [*hadoop.nodes, "master", GATEWAY, OUTSIDER]}) == 6

    def on(host: str, script: str) -> str:
        done = hadoop.run(host, ["sh", "-c", script], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    # The gateway knows itself as 127.0.1.1 (Debian's mapping), the others by address.
    assert on(GATEWAY, "hostname; getent hosts gateway master node2") == [
        "gateway", "127.0.1.1", "gateway", hadoop.address("master"), "master", hadoop.address("node2"), "node2",
    ]  # fmt: skip
    assert on("node1", "hostname; getent hosts node1 gateway") == [
        "node1", hadoop.address("node1"), "node1", hadoop.address(GATEWAY), "gateway",
    ]  # fmt: skip
    # The outsider is on the bridge but named by no host.
    assert hadoop.run("master", ["getent", "hosts", OUTSIDER], capture_output=True).returncode == 2
    # The machine itself resolves none of the names: it reaches the hosts by address.
    assert subprocess.run(["getent", "hosts", "node1"], capture_output=True).returncode == 2


def _curl_exit(command: list[str], url: str, *options: str) -> tuple[int, str]:
    """``command`` (curl) on ``url``: its exit code, and the status of the last answer (``000``: none)."""
    done = subprocess.run([*command, *options, "-o", "/dev/null", "-w", "%{http_code}", url], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return done.returncode, done.stdout


def test_hadoop_s_web_endpoints_speak_only_https_that_the_cluster_s_authority_verifies(hadoop):
    assert hadoop.security is not None and hadoop.tls is not None, "the suite's hosts are secured"
    client = hadoop.web_client()
    endpoints = {
        "NameNode": (hadoop.webhdfs_url, daemons.NAMENODE_HTTP_PORT),
        "ResourceManager": (hadoop.rm_url, daemons.RESOURCEMANAGER_HTTP_PORT),
        "DataNode": (f"https://{hadoop.address('node1')}:{daemons.DATANODE_HTTPS_PORT}", daemons.DATANODE_HTTP_PORT),
        "NodeManager": (hadoop.nm_url("node1"), daemons.NODEMANAGER_HTTP_PORT),
    }
    without_ca = [option for option in client if option not in ("--cacert", str(hadoop.tls.ca_file))]
    for daemon, (url, http_port) in endpoints.items():
        host = url.split("//")[1].split(":")[0]
        # Verified against the cluster's authority, by address, with the first tenant's ticket.
        assert _curl_exit(client, f"{url}/jmx?qry=java.lang:type=Runtime") == (0, "200"), daemon
        # The machine's own authorities do not know the cluster's: curl refuses the certificate (60).
        assert _curl_exit(without_ca, f"{url}/jmx")[0] == 60, daemon
        # A name the certificate does not carry fails verification too.
        port = url.rsplit(":", 1)[1]
        assert _curl_exit(client, f"https://impostor:{port}/jmx", "--resolve", f"impostor:{port}:{host}")[0] == 60
        # Plain HTTP gets no page, on the TLS port or the standard HTTP one (nothing listens there: 7).
        code, status = _curl_exit(["curl", "-sS"], f"http://{host}:{port}/jmx")
        assert code != 0 and status == "000", (daemon, code, status)
        assert _curl_exit(["curl", "-sS"], f"http://{host}:{http_port}/jmx")[0] == 7, daemon
    # The authority's key is gone once the hosts' certificates are signed; the authority and Java's trust
    # store are public, every other file private (each daemon's key store: its user's, see below).
    files = {path.name: path.stat().st_mode & 0o777 for path in hadoop.tls.folder.iterdir()}
    assert "ca.key" not in files and {"ca.pem", "truststore.p12", "master-nn.p12", "node1-dn.p12"} <= set(files)
    assert {name: mode for name, mode in files.items() if mode != 0o600} == {"ca.pem": 0o644, "truststore.p12": 0o644}


def test_the_command_line_reports_the_hosts_and_runs_on_them(hadoop):
    status = subprocess.run(
        [sys.executable, str(HOSTS_PY), "status", "--workdir", str(hadoop.workdir)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 0, status.stderr
    described = json.loads(status.stdout)
    assert described["ready"] and described["hosts"] == hadoop.info.hosts
    # NameNode, ResourceManager, and the realm's KDC on the secure cluster.
    assert (
        described["processes"]["master"] == 2 + (hadoop.security is not None) and described["processes"]["gateway"] == 0
    )
    assert all(described["processes"][node] == 2 for node in hadoop.nodes)
    ran = subprocess.run(
        [sys.executable, str(HOSTS_PY), "run", "--workdir", str(hadoop.workdir), GATEWAY, "--", "sh", "-c",
         'hostname; echo "$HADOOP_CONF_DIR"'],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert ran.stdout.split() == [GATEWAY, str(hadoop.conf_dir)], ran.stderr


def test_without_root_the_hosts_cannot_be_made_and_the_error_says_so(code_for_everyone):
    script = "import sys; sys.path.insert(0, 'hadoop'); from netns import require_namespaces; require_namespaces()"
    done = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", script],
        cwd=code_for_everyone,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "ClusterError: the hosts are network namespaces, which only root can make" in done.stderr


# ---------------------------------------------------------------------------
# Spark standalone across the hosts
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def standalone(hadoop):
    """A Spark standalone master on ``master`` and a worker of two cores on each node."""
    import pyspark

    url = hadoop.start_spark(Path(pyspark.__file__).parent)
    yield url
    hadoop.stop_spark()


def _training_command(master: str, run_dir: Path, small_shards, *extra: str) -> list[str]:
    """``tfbs train`` against ``master`` on the session's shards (the hosts share its file system)."""
    config, _ = small_shards
    command = [sys.executable, "-m", "jobs.train", "--config", str(DEMO_CONFIG)]
    overrides = [
        *SMALL_OVERRIDES,
        f"data.root={config.data.root}",
        f"shards_dir={config.shards_uri}",
        f"run_dir={run_dir}",
        f"spark.master={master}",
        *extra,
    ]
    for override in overrides:
        command += ["--set", override]
    return command


def _train_on_gateway(
    hadoop, master: str, run_dir: Path, small_shards, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """:func:`_training_command` on the gateway, to its end."""
    command = _training_command(master, run_dir, small_shards, *extra)
    return hadoop.run(
        GATEWAY, command, cwd=REPO, env=env or hadoop.host_env(), capture_output=True, text=True, timeout=900
    )


def test_a_standalone_master_trains_across_three_hosts(hadoop, standalone, small_shards, spark, tmp_path):
    from tf_models.evaluate import evaluate

    started = time.monotonic()
    done = _train_on_gateway(hadoop, standalone, tmp_path / "run", small_shards)
    print(f"standalone training across hosts: {time.monotonic() - started:.0f} s")
    assert done.returncode == 0, done.stderr[-6000:]
    placed = placement_hosts(done.stderr)
    assert sorted(placed) == ["chief:0", "ps:0", "worker:0", "worker:1"], done.stderr[-4000:]
    assert len(set(placed.values())) >= 3 and set(placed.values()) <= set(hadoop.nodes), placed
    # Each node registered the address its host reaches the driver from, not 127.0.1.1 or a guess.
    addresses = dict(
        line.split(" host=")[1].split(" hostname=") for line in done.stderr.splitlines() if "tfbs placement:" in line
    )
    assert {address: name.split()[0] for address, name in addresses.items()} == {
        hadoop.address(name): name for name in set(placed.values())
    }
    assert "model: " in done.stdout
    # With the cluster's secret, from a file only its owner reads, named on no command line or log.
    secret_file = Path(hadoop.host_env()["TFBS_SPARK_SECRET_FILE"])
    assert secret_file.stat().st_mode & 0o777 == 0o600
    secret = secret_file.read_text().strip()
    assert len(secret) == 64 and secret not in done.stderr + done.stdout
    assert "spark.allow_insecure" not in done.stderr  # nothing was opted out
    # A model that learnt: what the hosts trained, evaluated here, passes the small runs' floor.
    config, manifest = small_shards
    run_config = small_config(tmp_path, f"data.root={config.data.root}", f"shards_dir={config.shards_uri}")
    report = evaluate(spark, run_config, manifest)
    mean_auprc = sum(result["auprc"] for result in report["results"].values()) / len(report["results"])
    assert mean_auprc > SMALL_RUN_MIN_MEAN_AUPRC, report["results"]


def test_an_outsider_gets_only_refusals_from_a_standalone_run(hadoop, standalone, small_shards, tmp_path):
    """While a run trains on the standalone master with the cluster's secret, the outsider scans every port."""
    command = _training_command(standalone, tmp_path / "run", small_shards, "train.steps=100000")
    training = StreamedProcess(hadoop.command(GATEWAY, command), hadoop.host_env())
    try:
        wait_until(lambda: re.search(r"chief: step \d+/100000", training.output), "training", timeout=300)
        scan = outsider_scan(hadoop, training.output)  # long before the last step: the run is stopped
    finally:
        training.proc.send_signal(signal.SIGINT)
        try:
            training.wait(timeout=120)
        finally:
            training.kill()
    # The cluster's own master and workers: refusing an outsider is the next test's.
    assert_outsider_refused(scan, ALLOWED_KINDS | {"Spark standalone master", "Spark standalone worker"}, n_agents=4)
    assert len(scan.spark_answers) >= 4 and len(scan.web_answers) == 1  # the driver's endpoints, the executors'; its UI


def test_a_standalone_run_without_the_cluster_secret_is_refused_in_one_line(hadoop, standalone, small_shards, tmp_path):
    env = {key: value for key, value in hadoop.host_env().items() if key != "TFBS_SPARK_SECRET_FILE"}
    done = _train_on_gateway(hadoop, standalone, tmp_path / "run", small_shards, env=env)
    assert done.returncode == 2, done.stderr[-4000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: spark.authenticate.secret: {standalone} needs the secret its master and workers were started "
        "with: set TFBS_SPARK_SECRET_FILE to the file holding it (make cluster-up prints it), or set "
        "spark.allow_insecure: true to run anyway"
    )
    assert "Traceback" not in done.stderr


def test_the_standalone_master_and_workers_refuse_an_outsider_without_the_secret(hadoop, standalone):
    """Whoever reaches the master could run code on its workers: without the secret, Spark's authentication refuses."""
    targets = [(hadoop.address("master"), int(standalone.rsplit(":", 1)[1]))]
    for node in hadoop.nodes:
        log = (hadoop.host_dirs(node).logs / "SparkWorker.log").read_text()
        port = re.findall(r"Successfully started service 'sparkWorker' on port (\d+)", log)[-1]
        targets.append((hadoop.address(node), int(port)))
    answers = outsider_exchanges(hadoop, targets, SPARK_RPC_WITHOUT_AUTH)
    assert sorted(answers) == sorted(targets)
    # Each answered (reachable: no firewall), and what it answered is authentication's refusal.
    assert {target: is_refusal(answer) and b"Expected SaslMessage" in answer for target, answer in answers.items()} == {
        target: True for target in targets
    }, {target: answer[:200] for target, answer in answers.items()}


#: Long enough for the six executors the cluster can give to register on a busy machine
#: (a JVM each, on the two cores the other session loads): the error must count all six.
SHORT_OF_CORES_WAIT_S = 40


def test_a_standalone_master_short_of_cores_is_a_one_line_error(hadoop, standalone, small_shards, tmp_path):
    """Three workers of two cores cannot give seven single-core executors (1 ps, 5 workers, the chief)."""
    done = _train_on_gateway(
        hadoop,
        standalone,
        tmp_path / "run",
        small_shards,
        "train.placement.num_workers=5",
        f"train.placement.executors_timeout_s={SHORT_OF_CORES_WAIT_S}",
    )
    assert done.returncode == 2, done.stderr[-4000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "error: training needs 7 Spark executors, one per TF node (1 chief + 1 ps + 5 workers); "
        f"{standalone} gave 6 within {SHORT_OF_CORES_WAIT_S} s (train.placement.executors_timeout_s): give the "
        "cluster room for 1 more, "
        "or train with fewer workers (train.placement.num_workers)"
    )
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------------
# Tenants apart (the secured hosts)
# ---------------------------------------------------------------------------


def _as(hadoop, user: str, arguments: list[str], service_host: str | None = None) -> subprocess.CompletedProcess:
    """``hdfs dfs ARGUMENTS`` on the gateway with ``user``'s own ticket."""
    env = {**hadoop.host_env(), **hadoop.login(user, service_host)}
    return hadoop.run(GATEWAY, hadoop.hdfs_shell(arguments), env=env, capture_output=True, text=True, timeout=120)


def test_a_tenant_cannot_list_read_overwrite_or_delete_another_s_run(hadoop, tmp_path):
    assert hadoop.security is not None, "tenants are Kerberos principals: the suite's hosts are secured"
    run, top = "/user/alice/tenancy-run", "/alice-tenancy"
    model, forged = tmp_path / "model.txt", tmp_path / "forged.txt"
    model.write_text("alice's model\n")
    forged.write_text("bob's model\n")
    for arguments in (["-mkdir", "-p", run, top], ["-put", str(model), f"{run}/model.txt"]):
        done = _as(hadoop, "alice", arguments)
        assert done.returncode == 0, done.stderr[-2000:]
    # alice's home is hers alone (700): bob gets through no part of it.
    for arguments in (
        ["-ls", run],
        ["-cat", f"{run}/model.txt"],
        ["-put", "-f", str(forged), f"{run}/model.txt"],
        ["-rm", "-r", "-skipTrash", run],
    ):
        done = _as(hadoop, "bob", arguments)
        assert done.returncode != 0, (arguments, done.stdout)
        assert "Permission denied: user=bob" in done.stderr and 'inode="/user/alice' in done.stderr, done.stderr
    # At the namespace's root (open to all, sticky) bob may not remove what alice made.
    done = _as(hadoop, "bob", ["-rm", "-r", "-skipTrash", top])
    assert done.returncode != 0 and "Permission denied by sticky bit: user=bob" in done.stderr, done.stderr
    # Her model as she wrote it; she deletes what bob could not.
    done = _as(hadoop, "alice", ["-cat", f"{run}/model.txt"])
    # (Hadoop's client logs its warnings to stdout too: the file's line comes last.)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "alice's model", done.stdout[-2000:]
    done = _as(hadoop, "alice", ["-rm", "-r", "-skipTrash", run, top])
    assert done.returncode == 0, done.stderr
    assert f"Deleted {run}" in done.stdout and f"Deleted {top}" in done.stdout


def _daemon_uids(hadoop, host: str, role: daemons.Role) -> set[int]:
    """The real, effective and saved uids of ``role``'s daemon on ``host`` (one process)."""
    found = [psutil.Process(pid) for pid in hadoop.network.pids(host)]
    daemon = [process for process in found if role.main_class in process.cmdline()]
    assert len(daemon) == 1, (host, role.name, [process.cmdline()[-1:] for process in found])
    return set(daemon[0].uids())


def test_each_daemon_runs_as_its_own_user_with_the_only_keytab_and_key_store_it_reads(hadoop):
    assert hadoop.security is not None, "daemons have users of their own on the secured hosts"
    realm = hadoop.security.realm
    placed = hadoop._hadoop_daemons()
    assert {role.unix_user for _, role in placed} == {"tfbs-nn", "tfbs-dn", "tfbs-rm", "tfbs-nm"}
    for host, role in placed:
        user = service_user(role.unix_user)
        assert _daemon_uids(hadoop, host, role) == {user.uid}, (host, role.name)
        keytab, store = hadoop.daemon_keytab(host, role.service), hadoop.tls.daemon_keystore(host, role.service)
        for path in (keytab, store):
            info = path.stat()
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (user.uid, 0o600), path
        listed = subprocess.run(["klist", "-k", str(keytab)], capture_output=True, text=True, check=True).stdout
        principals = {line.split()[-1] for line in listed.splitlines() if "@" in line}
        address = hadoop.address(host)
        assert principals == {f"{role.service}/{host}@{realm}", f"HTTP/{host}@{realm}", f"HTTP/{address}@{realm}"}
    # A container runs as its NodeManager's user (no LinuxContainerExecutor here: docs/cluster.md). As
    # that user, on node1: the other daemons' keytabs and the DataNode's key store are refused, the
    # NameNode's (the HDFS superuser's) and the ResourceManager's (YARN's administrator's) included;
    # the NodeManager's own keytab is not: the gap a production cluster closes with that executor.
    container_user = service_user(daemons.NODEMANAGER.unix_user)

    def read_as_container(path: Path) -> subprocess.CompletedProcess:
        return hadoop.run("node1", run_as(container_user, ["cat", str(path)]), capture_output=True, timeout=30)

    for path in (
        hadoop.daemon_keytab("master", "nn"),
        hadoop.daemon_keytab("master", "rm"),
        hadoop.daemon_keytab("node1", "dn"),
        hadoop.tls.daemon_keystore("node1", "dn"),
        hadoop.keytab("alice"),
    ):
        done = read_as_container(path)
        assert done.returncode != 0 and b"Permission denied" in done.stderr, (path, done.stderr)
    done = read_as_container(hadoop.daemon_keytab("node1", "nm"))
    assert done.returncode == 0 and done.stdout == hadoop.daemon_keytab("node1", "nm").read_bytes()


def test_a_secure_cluster_its_daemons_users_cannot_reach_is_refused_naming_the_folder():
    from hosts import HostCluster

    outer = Path(tempfile.mkdtemp(prefix="tfbs-home-"))  # in the machine's temp folder, which all pass through
    try:
        outer.chmod(0o755)
        home = outer / "home"
        home.mkdir(mode=0o700)
        workdir = home / "cluster"
        with pytest.raises(
            ClusterError, match=rf"cannot reach {re.escape(str(workdir))}: {re.escape(str(home))} is mode 700"
        ):
            HostCluster(workdir, secure=True).start()
        assert not workdir.exists()  # refused before anything was made
    finally:
        shutil.rmtree(outer)


def test_only_yarn_s_administrator_administers_it(hadoop):
    assert hadoop.security is not None, "YARN's ACLs need its users authenticated: the suite's hosts are secured"

    def refresh_queues(user: str, service_host: str | None = None) -> subprocess.CompletedProcess:
        env = {**hadoop.host_env(), **hadoop.login(user, service_host)}
        shell = hadoop.hdfs_shell([])
        command = [*shell[: shell.index("org.apache.hadoop.fs.FsShell")], "org.apache.hadoop.yarn.client.cli.RMAdminCLI",
                   "-refreshQueues"]  # fmt: skip
        return hadoop.run(GATEWAY, command, env=env, capture_output=True, text=True, timeout=120)

    for tenant in ("alice", "bob"):
        done = refresh_queues(tenant)
        assert done.returncode != 0, done.stdout
        assert f"User {tenant} doesn't have permission to call 'refreshQueues'" in done.stderr, done.stderr[-2000:]
    done = refresh_queues("rm", "master")  # yarn.admin.acl: the ResourceManager's user
    assert done.returncode == 0, done.stderr[-2000:]


#: A YARN application of alice's that holds until its stdin closes: prints its id once running.
_HELD_APPLICATION = """
import sys
from tfbs.config import SparkConfig
from tfbs.launch.session import build_session
conf = {"spark.executor.instances": "1", "spark.executor.memory": "512m", "spark.yarn.am.memory": "512m"}
session = build_session(SparkConfig(master="yarn", conf=conf))
print("application", session.sparkContext.applicationId, flush=True)
sys.stdin.read()
"""


def _web_as(hadoop, user: str, url: str, cookie: str = "") -> tuple[int, str]:
    """GET ``url`` with ``user``'s own ticket (SPNEGO, verified HTTPS): the status and the page."""
    env = {**hadoop.host_env(), **hadoop.login(user)}
    command = [*hadoop.web_client(), "-b", cookie, "-w", "\n%{http_code}", url]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    page, _, code = done.stdout.rpartition("\n")
    assert done.returncode == 0, done.stderr
    return int(code), page


def test_a_tenant_cannot_kill_or_view_another_s_yarn_application(hadoop, tmp_path):
    assert hadoop.security is not None, "YARN's ACLs need its users authenticated: the suite's hosts are secured"
    env = {**hadoop.host_env(), **hadoop.login("alice"), "PYTHONPATH": str(REPO)}
    # The driver's log goes to a file (a pipe nobody reads would fill and stall it): a driver
    # that never reports its application says why in the failure.
    driver_log = tmp_path / "driver.log"
    with driver_log.open("w") as log:
        driver = hadoop.popen(
            GATEWAY, [sys.executable, "-c", _HELD_APPLICATION], cwd=REPO, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
    try:
        line = driver.stdout.readline()
        assert line.startswith("application application_"), driver_log.read_text(errors="replace")[-4000:]
        app = line.split()[1]

        def kill_as(user: str) -> subprocess.CompletedProcess:
            shell = hadoop.hdfs_shell([])
            command = [*shell[: shell.index("org.apache.hadoop.fs.FsShell")],
                       "org.apache.hadoop.yarn.client.cli.ApplicationCLI", "application", "-kill", app]  # fmt: skip
            user_env = {**hadoop.host_env(), **hadoop.login(user)}
            return hadoop.run(GATEWAY, command, env=user_env, capture_output=True, text=True, timeout=120)

        # Its containers run as their NodeManager's user, not as alice (docs/cluster.md says what that leaves open).
        containers = hadoop.container_processes(app)
        assert containers, app
        nm_uid = service_user(daemons.NODEMANAGER.unix_user).uid
        assert {psutil.Process(process.pid).uids().real for process in containers} == {nm_uid}
        refused = kill_as("bob")
        assert refused.returncode != 0, refused.stdout[-2000:]
        assert f"User bob cannot perform operation MODIFY_APP on {app}" in refused.stderr + refused.stdout
        # Viewing: the ResourceManager shows bob no more than the application's name and state
        # (YARN's VIEW_APP ACL), and its proxy hands bob's requests for her Spark UI to Spark,
        # whose ACL (spark.acls.enable) refuses them; alice sees both. The cookie says the proxy's
        # warning page (another user's application) was seen and approved.
        report = f"{hadoop.rm_url}/ws/v1/cluster/apps/{app}"
        owner_view, bob_view = (json.loads(_web_as(hadoop, user, report)[1])["app"] for user in ("alice", "bob"))
        assert owner_view["amContainerLogs"].startswith("http") and "amContainerLogs" not in bob_view
        assert bob_view["user"] == "alice" and bob_view["state"] == "RUNNING"
        ui = f"{hadoop.rm_url}/proxy/{app}/jobs/"
        approved = f"checked_{app}=true"
        code, page = _web_as(hadoop, "alice", ui, approved)
        assert code == 200 and "Spark Jobs" in page, page[-2000:]
        code, page = _web_as(hadoop, "bob", ui, approved)
        assert code == 403 and "User bob is not authorized to access this page" in page, page[-2000:]
        state = hadoop.get_json(f"{hadoop.rm_url}/ws/v1/cluster/apps/{app}")["app"]  # as alice, its owner
        assert state["state"] == "RUNNING" and state["user"] == "alice", state
        killed = kill_as("alice")
        assert killed.returncode == 0 and f"Killed application {app}" in killed.stdout + killed.stderr, killed.stderr
    finally:
        driver.stdin.close()
        driver.wait(timeout=120)
