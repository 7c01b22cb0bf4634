"""Shared fixtures: one Spark session, one small generated data set and its
shards per test session (petastorm's pattern: session-scoped Spark plus small
synthetic data), so each stage is tested on real components without paying
for set-up more than once."""

from __future__ import annotations

import codecs
import gc
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tfbs.config import PipelineConfig, load_config

# The GCS emulator's fixtures; importing it sets STORAGE_EMULATOR_HOST before any Spark JVM starts.
# netwatch: the watched TensorFlowOnSpark training run shared by test_tfos and test_network_security.
pytest_plugins = ["gcs_emulator", "netwatch"]

REPO = Path(__file__).resolve().parents[1]
#: The suite's folder: its helpers (this file, netwatch, airflow_runs...) import by bare name from here.
TESTS = REPO / "tests"
DEMO_CONFIG = REPO / "conf" / "demo.yaml"
#: The real ENCODE-DREAM files bundled with the repository.
DREAM_DATA = REPO / "data" / "dream"

#: The suite's short trainings start their first filters as the planted
#: motifs: their quality floors were set that way, and a 60-step training is
#: a test of the pipeline, not of what the default learns unaided (off by
#: default; bench/seeding.py measures both).
SEEDED = "train.model.motif_cnn.seed_motifs=true"

#: The model and sampling the suite's trainings use: the demo's before it took the
#: partners' reading (conf/demo.yaml). The suite's data (the basic profile) has no
#: RNA-seq and no partners, and its floors were set with this model; the partners'
#: reading is tested by its own tests (tests/training/test_models.py,
#: tests/shards/test_segregate.py) and run end to end by `make demo`.
SUITE_MODEL = [
    "preprocess.cross_cell_negatives=false",
    "train.model.use_expression=false",
    "train.model.motif_cnn.expression_products=false",
    "train.model.motif_cnn.scales_bp=null",
    "train.model.motif_cnn.match_activation=relu",
    "train.model.motif_cnn.match_dropout=0.25",
    "train.model.motif_cnn.seed_motif_db=null",
    "train.model.dropout=0.25",
]

#: A genome of ~0.6 Mb: big enough for every split, small enough for CI. The basic
#: profile, every cell a training cell: the suite's floors were set on it
#: (tests/scoring/test_heldout_cells.py and tests/generator/test_realistic_profile.py test the demo's profile and protocol).
SMALL_OVERRIDES = [
    SEEDED,
    *SUITE_MODEL,
    "generate.profile=basic",
    "generate.motifless_bound_fraction=0.15",
    "data.heldout_cells=[]",
    "evaluate.min_auprc_margin=null",
    "evaluate.bootstrap_resamples=200",
    "generate.chromosomes={chr1: 150000, chr2: 200000, chr3: 120000, chr8: 60000, chr11: 80000, chr21: 60000}",
    "data.tfs=[CTCF, FOXA1]",
    "generate.tfs=[{name: CTCF, motif: CTCF_f2, family: zf-ctcf}, {name: FOXA1, motif: FOXA1_f1, family: forkhead}]",
    f"generate.motif_db={DREAM_DATA / 'annotations' / 'HOCOMOCOv9.meme'}",
    "preprocess.rows_per_record_file=256",
    "train.steps=60",
    "train.steps_per_execution=10",
    "train.checkpoint_every_steps=30",
    "train.batch_size=32",
    "train.model.motif_cnn.filters=16",
    "train.model.aa_filters=[8, 8]",
    "train.model.aa_max_length=200",
    "train.model.dense_units=16",
]

#: What a model trained on SMALL_OVERRIDES must reach (mean test auPRC): 0.34-0.41 here; with its
#: training labels shuffled, the filters seeded with the TFs' motifs alone gave 0.22-0.23
#: (and mean auROC 0.91 against 0.95: auROC barely tells them apart).
SMALL_RUN_MIN_MEAN_AUPRC = 0.28

#: The pipeline run end to end (the DAG's runs, the runs across hosts): the
#: small genome with three times its training chromosomes, and a model
#: trained long enough to beat the motif scan on every TF/cell. On the small
#: data set alone FOXA1 was learnt in some trainings only (test auPRC 0.07
#: to 0.73 over 7 seeds, the scan 0.30); here, over 3 seeds in one process
#: and 3 under ps: FOXA1 0.56-0.67 against the scan's 0.42-0.49, CTCF
#: 0.85-0.94 against 0.41-0.55, at 300 steps. One ps run on YARN across the
#: hosts then gave FOXA1/GM12878 0.47 against the scan's 0.49 (its
#: validation auPRC still rising at 300 steps): 400 now. The last weights
#: are kept: the validation chromosome holds 5 to 13 positives per TF/cell,
#: too few to pick a checkpoint by. One run on YARN kept step 200's (pooled
#: validation auPRC 0.919 against 0.910 at step 400; FOXA1/GM12878 1.0 at
#: both), whose FOXA1 scored 0.36 on the test chromosomes against step
#: 400's 0.63 to 0.68.
PIPELINE_OVERRIDES = [
    *SMALL_OVERRIDES,
    "generate.chromosomes={chr1: 150000, chr2: 600000, chr3: 400000, chr8: 60000, chr11: 80000, chr21: 60000}",
    "train.steps=400",
    "train.early_stopping_patience=null",
    "train.batch_size=64",
    "train.checkpoint_every_steps=100",
    "train.model.motif_cnn.filters=32",
    "train.model.dense_units=64",
]

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

#: Fixtures that start Spark, and those that start the Hadoop mini cluster:
#: a test using one carries the marker, so ``-m "not spark"`` leaves it out.
_SPARK_FIXTURES = {"spark", "small_shards", "motif_shards"}
_CLUSTER_FIXTURES = {"hadoop", "hdfs", "webhdfs", "hdfs_dataset", "yarn_archives", "dag_on_yarn"}


def _uses_hosts(item: pytest.Item) -> bool:
    """Whether a test needs the cluster of hosts or the YARN archive (both go last)."""
    return bool({"dist_archive", "hadoop"} & set(getattr(item, "fixturenames", ())))


def _needs_archive(item: pytest.Item) -> bool:
    """Whether a test needs ``make dist``'s archive (built in the background from collection)."""
    return "dist_archive" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by the fixtures they use (modules mark what runs in subprocesses); the hosts' last.

    The tests of the cluster of hosts and of ``make dist``'s archive (YARN,
    the DAG on YARN, the archive itself) carry the ``hosts`` marker:
    ``make test`` runs them and the rest as two pytest sessions side by side
    (``tests/run_suite.py``), because the hosts' tests mostly wait on
    daemons, container launches and heartbeats while the one-machine tests
    keep the cores busy. Run in one session, the hosts' tests come after the
    others: their daemons then run only while needed. Among them, those
    that need the archive come last: its build, started in the background
    once the session is collected (:func:`pytest_collection_finish`), is
    done by then. Otherwise the modules run in file-name order (:func:`_module_order`).
    """
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & (_SPARK_FIXTURES | _CLUSTER_FIXTURES):
            item.add_marker(pytest.mark.spark)
        if used & _CLUSTER_FIXTURES:
            item.add_marker(pytest.mark.cluster)
        if _uses_hosts(item):
            item.add_marker(pytest.mark.hosts)
    items.sort(key=lambda item: (_uses_hosts(item), _needs_archive(item), _module_order(item)))


def _module_order(item: pytest.Item) -> tuple[int, str]:
    """The suite's modules by file name whatever their folder, then the packages' doctests as collected.

    The folders group the tests for readers; the two sessions of ``make
    test`` were balanced on the flat folder's order (which test starts the
    hosts' cluster, which runs beside which), so that order stays. The sort
    is stable: a module's tests keep their order.
    """
    path = Path(str(item.path))
    return (0, path.name) if TESTS in path.parents else (1, "")


#: Where the session keeps the background build of the archive, if it started one.
_ARCHIVE_BUILD = pytest.StashKey[tuple[subprocess.Popen, Path]]()


def _build_dist_command() -> tuple[list[str], dict[str, str]]:
    """``scripts/build_dist.sh`` from the interpreter under this ``.venv``, with its environment.

    (``make dist`` would first reinstall ``.venv`` when pyproject.toml is newer.)
    """
    env = {**os.environ, "PYTHON": getattr(sys, "_base_executable", sys.executable)}
    env.pop("PYTHONPATH", None)
    return ["bash", "scripts/build_dist.sh"], env


def pytest_report_header(config: pytest.Config) -> str:
    """The free disk where the session's temp dirs go: a full disk shows as HDFS in safe mode."""
    root = Path(config.option.basetemp or tempfile.gettempdir()).absolute()
    existing = next(path for path in (root, *root.parents) if path.exists())
    free = shutil.disk_usage(existing).free
    return f"free disk under {root}: {free / 2**30:.1f} GiB (the full suite writes up to about 6 GiB there)"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start building ``make dist``'s archive when a collected test needs it (minutes when the sources changed).

    First, what collection imported (the test modules, Spark, pandas, TensorFlow where a module imports it)
    goes out of the garbage collector's reach for the session (:func:`gc.freeze`): every full collection
    would otherwise walk it again, as ``tf_models.lean_import`` explains for TensorFlow.
    """
    gc.freeze()
    if session.config.option.collectonly or not any(
        "dist_archive" in getattr(item, "fixturenames", ()) for item in session.items
    ):
        return
    command, env = _build_dist_command()
    log = Path(tempfile.mkstemp(prefix="tfbs-dist-build-", suffix=".log")[1])
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    session.config.stash[_ARCHIVE_BUILD] = (process, log)


#: A motif data set big enough to compare training strategies: two TFs, the
#: demo's model, ~1,800 training positives and ~500 validation positives.
MOTIF_OVERRIDES = [
    SEEDED,
    *SUITE_MODEL,
    "generate.chromosomes={chr1: 20000, chr2: 1500000, chr8: 20000, chr11: 500000, chr21: 20000}",
    "data.tfs=[CTCF, FOXA1]",
    "generate.tfs=[{name: CTCF, motif: CTCF_f2, family: zf-ctcf}, {name: FOXA1, motif: FOXA1_f1, family: forkhead}]",
    f"generate.motif_db={DREAM_DATA / 'annotations' / 'HOCOMOCOv9.meme'}",
    "generate.profile=basic",
    "generate.motifless_bound_fraction=0.15",
    "data.heldout_cells=[]",
    "evaluate.min_auprc_margin=null",
]


class StreamedProcess:
    """A running command (in the checkout) whose merged stdout/stderr is collected as it arrives.

    Read as it comes rather than by lines: Spark's progress bar redraws one
    line with carriage returns, and a line reader would hand a stage's bar
    over only when the bar next changes (a task later). Carriage returns
    become newlines, so each redraw reads as a line of its own.
    """

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.chunks: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := os.read(self.proc.stdout.fileno(), 1 << 16):
            self.chunks.append(decoder.decode(chunk).replace("\r\n", "\n").replace("\r", "\n"))
        self.chunks.append(decoder.decode(b"", final=True))

    @property
    def output(self) -> str:
        return "".join(self.chunks)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def script_env() -> dict[str, str]:
    """The environment for running a test module as a script: the suite's helpers importable, as under pytest."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    return env


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Return once ``condition()`` holds; fail naming ``what`` after ``timeout`` seconds.

    The tests' one way to wait for another process or thread: on the event
    itself, never on a sleep long enough on a quiet machine.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.005)


def small_config(root: Path, *extra: str) -> PipelineConfig:
    """The demo configuration scaled down, writing under ``root``."""
    return load_config(
        DEMO_CONFIG,
        [f"run_dir={root / 'run'}", f"data.root={root / 'data'}", *SMALL_OVERRIDES, *extra],
    )


def model_inputs(dna: list[bytes], proteins: list[str], aa_max_length: int, tf_index, cells, dnase) -> dict:
    """The dict a model takes, built from raw sequences as the export does."""
    import numpy as np
    import tensorflow as tf

    from tf_models.encoding import dna_one_hot, protein_one_hot
    from tfbs.formats.proteins import protein_table

    return {
        "dna": dna_one_hot(np.frombuffer(b"".join(dna), np.uint8).reshape(len(dna), -1)),
        "proteins": protein_one_hot(protein_table(proteins, aa_max_length)),
        "tf_index": tf.constant(tf_index),
        "cell_index": tf.constant(cells),
        "dnase": tf.constant(dnase),
    }


#: Where a folder any user may enter is made: the system's temporary folder
#: itself, not $TMPDIR or pytest's base (both may be private, mode 700).
SHARED_TMP = "/tmp"
#: What a process of another user runs of the project: its packages, configuration,
#: scripts, and the motif file the small runs name (``SMALL_OVERRIDES``).
CODE_FOR_EVERYONE = ("tfbs", "tf_models", "preprocess", "synthetic", "jobs", "hadoop", "conf", "scripts")
MOTIFS_FOR_EVERYONE = Path("data") / "dream" / "annotations" / "HOCOMOCOv9.meme"


@pytest.fixture(scope="session")
def python_for_everyone() -> Iterator[None]:
    """The folders on the way to this Python and its packages searchable by other users meanwhile.

    The virtualenv (inside the clone) and the interpreter it links to (pyenv's,
    under ``/root`` here) may sit under folders of mode 700: another user's
    process, started from a root shell, could then import nothing. Only the
    search bit (``o+x``) is added, to the closed folders on those two paths,
    nothing is listed or written, and every mode is put back at the end.
    """
    ends = [Path(os.path.realpath(sys.executable)), Path(sysconfig.get_paths()["purelib"])]
    closed = {folder for end in ends for folder in end.parents if not folder.stat().st_mode & 0o001}
    modes = {folder: folder.stat().st_mode & 0o7777 for folder in closed}
    for folder, mode in modes.items():
        folder.chmod(mode | 0o001)
    try:
        yield
    finally:
        for folder, mode in modes.items():
            folder.chmod(mode)


@pytest.fixture(scope="session")
def code_for_everyone(python_for_everyone) -> Iterator[Path]:
    """A copy of the project any user can read, for the tests that run code as ``nobody``.

    The clone may sit under a folder only its owner can enter (a home folder
    of mode 700): another user's process can then neither import ``tfbs``
    from it nor read its configuration. The copy lives outside the clone
    and outside pytest's base folder (private too), and goes at the end.
    """
    folder = Path(tempfile.mkdtemp(prefix="tfbs-code-", dir=SHARED_TMP))
    try:
        for name in CODE_FOR_EVERYONE:
            shutil.copytree(REPO / name, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        (folder / MOTIFS_FOR_EVERYONE).parent.mkdir(parents=True)
        shutil.copyfile(REPO / MOTIFS_FOR_EVERYONE, folder / MOTIFS_FOR_EVERYONE)
        subprocess.run(["chmod", "-R", "a+rX", str(folder)], check=True)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole test run, its driver on the class archive (built if missing)."""
    from tfbs.launch import java_options
    from tfbs.launch.class_archive import build_archive
    from tfbs.launch.session import build_session

    config = load_config(DEMO_CONFIG)
    build_archive(config.spark.class_archive_dir, java_options(config.spark).get("spark.driver.extraJavaOptions", ""))
    session = build_session(config.spark, master="local[2]", app_suffix="-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def small_dataset(tmp_path_factory) -> PipelineConfig:
    """A generated ENCODE-DREAM-format data set (real bedtools labels)."""
    from synthetic.generate import generate_dataset

    config = small_config(tmp_path_factory.mktemp("small"))
    generate_dataset(config.generate, config.data)
    return config


@pytest.fixture(scope="session")
def pipeline_dataset(tmp_path_factory) -> PipelineConfig:
    """The data set of the end-to-end runs (``PIPELINE_OVERRIDES``), generated."""
    from synthetic.generate import generate_dataset

    root = tmp_path_factory.mktemp("pipeline")
    config = load_config(DEMO_CONFIG, [f"run_dir={root / 'run'}", f"data.root={root / 'data'}", *PIPELINE_OVERRIDES])
    generate_dataset(config.generate, config.data)
    return config


@pytest.fixture(scope="session")
def small_shards(spark, small_dataset) -> tuple[PipelineConfig, dict]:
    """Shards and manifest built by the preprocessing job on ``small_dataset``."""
    from preprocess.build_shards import build_shards

    return small_dataset, build_shards(spark, small_dataset)


@pytest.fixture(scope="session")
def motif_shards(spark, tmp_path_factory) -> tuple[PipelineConfig, dict]:
    """A generated two-TF data set with the demo's model, and its shards."""
    from preprocess.build_shards import build_shards
    from synthetic.generate import generate_dataset

    root = tmp_path_factory.mktemp("motif")
    config = load_config(DEMO_CONFIG, [f"run_dir={root / 'run'}", f"data.root={root / 'data'}", *MOTIF_OVERRIDES])
    generate_dataset(config.generate, config.data)
    return config, build_shards(spark, config)


#: The tenant the tests run as on the secure cluster: its Kerberos principal and HDFS user.
TENANT = "alice"
#: Where the tenant's data and runs go on HDFS: its home, its own (700), as an administrator sets
#: tenants up (hadoop/secure_conf.py). Only the shared archives (/dist) are outside it.
TENANT_HOME = f"/user/{TENANT}"
#: Delegation tokens of the secure cluster expire unless renewed this often: the DAG's run outlives several.
TOKEN_RENEW_S = 60


@pytest.fixture(scope="session")
def hadoop(tmp_path_factory):
    """HDFS and YARN on hosts of their own (hadoop/hosts.py): ``master``, ``node1..3``, ``gateway``, ``outsider``.

    Each host a network namespace on one bridge, each daemon a JVM of its
    own, all of it Kerberos-secured (a KDC on ``master``). The session holds
    :data:`TENANT`'s ticket: clients of this machine (hdfs-native, JVMs
    started from here) reach HDFS as that user. Needs root: without it the
    tests using it fail, naming what is missing.
    """
    from hosts import HostCluster

    # The daemons run as Unix users of their own (hadoop/service_users.py), which cannot pass
    # through pytest's private temp folder: the cluster lives in one of the machine's, and
    # leaves its logs in pytest's for a post-mortem (HDFS's blocks and the localised archives
    # are GBs a session).
    workdir = Path(tempfile.mkdtemp(prefix="tfbs-hosts-"))
    saved = dict(os.environ)
    try:
        with HostCluster(workdir, secure=True, users=(TENANT, "bob"), token_renew_s=TOKEN_RENEW_S) as cluster:
            print(f"cluster of hosts: ready in {cluster.info.startup_seconds} s, {cluster.status()['rss_mb']} MB RSS")
            os.environ.update({**cluster.login(TENANT), "HADOOP_CONF_DIR": str(cluster.machine_conf_dir)})
            try:
                yield cluster
            finally:
                os.environ.clear()
                os.environ.update(saved)
    finally:
        kept = tmp_path_factory.mktemp("hosts-logs")
        for logs in workdir.glob("hosts/*/logs"):
            shutil.move(logs, kept / logs.parent.name)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def hdfs(hadoop) -> str:
    """HDFS as this machine reaches it, by the NameNode's address: ``hdfs://10.x.y.2:8020``."""
    return hadoop.fs_by_address


@pytest.fixture(scope="session")
def webhdfs(hadoop):
    """An independent HDFS client for the checks: WebHDFS over the NameNode's HTTP port, with SPNEGO."""
    from hostnet import WebHdfs

    return WebHdfs(hadoop)


@pytest.fixture(scope="session")
def dist_archive(request: pytest.FixtureRequest) -> Path:
    """``make dist``'s output directory: the packed environment and Spark's jars.

    Built by ``scripts/build_dist.sh`` in the background since collection
    (:func:`pytest_collection_finish`), or here; minutes when the sources
    changed, else it is up to date at once.
    """
    if _ARCHIVE_BUILD in request.config.stash:
        process, log = request.config.stash[_ARCHIVE_BUILD]
        code, output = process.wait(timeout=1800), log.read_text()
    else:
        command, env = _build_dist_command()
        built = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
        code, output = built.returncode, built.stdout + built.stderr
    assert code == 0, output[-6000:]
    return REPO / "build" / "dist"


@pytest.fixture(scope="session")
def yarn_archives(hadoop, dist_archive) -> dict[str, str]:
    """``make dist``'s packed environment and Spark jars, on the cluster's HDFS.

    Readable by all, so YARN localises each once per node into its public
    cache and every later application reuses it. Keys: ``env`` and ``spark``.
    The URIs name the hosts (``hdfs://master:8020/dist/...``), as the
    gateway and the containers see them.
    """
    from tfbs import storage

    archives = {}
    for key, name in [("env", "tfbs-env.tar.gz"), ("spark", "spark-jars.zip")]:
        started = time.monotonic()
        storage.upload_file(dist_archive / name, f"{hadoop.fs_by_address}/dist/{name}")
        print(f"{name}: uploaded in {time.monotonic() - started:.0f} s")
        archives[key] = f"{hadoop.fs_default_fs}/dist/{name}"
    return archives


@pytest.fixture(scope="session")
def hdfs_dataset(hadoop, pipeline_dataset) -> str:
    """The end-to-end runs' data set, uploaded to the cluster's HDFS; its root as the hosts name it.

    ``hdfs://master:8020/user/alice/dream/data``: for runs on the gateway; the
    machine's own namespace reaches it at ``hadoop.by_address(...)``.
    """
    from tfbs import storage

    storage.upload_tree(
        storage.local_path(pipeline_dataset.data.root), f"{hadoop.fs_by_address}{TENANT_HOME}/dream/data"
    )
    return f"{hadoop.fs_default_fs}{TENANT_HOME}/dream/data"


@pytest.fixture(scope="session")
def airflow_env(tmp_path_factory) -> dict[str, str]:
    """An Airflow installation in a temporary folder (tests/airflow_runs.py), its database migrated."""
    from airflow_runs import airflow_home

    return airflow_home(tmp_path_factory.mktemp("airflow-home"))


@pytest.fixture(scope="session")
def dag_on_yarn(airflow_env, hadoop, yarn_archives, hdfs_dataset):
    """The DAG run once on YARN across hosts, from the gateway, data and run on HDFS (airflow_runs.run_dag_on_yarn).

    test_airflow_dag.py checks the run; test_yarn.py checks what YARN ran.
    """
    from airflow_runs import run_dag_on_yarn

    return run_dag_on_yarn(airflow_env, hadoop, yarn_archives, hdfs_dataset)
