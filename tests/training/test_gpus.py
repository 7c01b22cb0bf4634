"""GPUs: Spark resource settings, CUDA_VISIBLE_DEVICES per TF role, mixed
precision, the YARN GPU profile and the discovery script.

No GPU exists here, so the mapping logic is tested with the addresses Spark
would hand a task, and the discovery script with a fake ``nvidia-smi``.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SUITE_MODEL

from tf_models import MODEL_FORMAT
from tf_models.gpus import apply_visible_devices, visible_devices
from tf_models.training_launch import training_needs
from tfbs.config import DEFAULT_GPU_DISCOVERY_SCRIPT, load_config
from tfbs.errors import ConfigError
from tfbs.launch import stage_conf

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "conf" / "demo.yaml"
YARN_GPU = REPO / "conf" / "yarn_gpu.yaml"
SCRIPT = REPO / "scripts" / "get_gpus_resources.sh"


# --------------------------------------------------------------------------
# CUDA_VISIBLE_DEVICES per role
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "role, addresses, expected",
    [
        ("worker", ["1"], "1"),
        ("chief", ["0"], "0"),
        ("chief", ["0", "3"], "0,3"),
        ("worker", ["2", "5", "7"], "2,5,7"),
        ("ps", ["1"], ""),
        ("ps", [], ""),
        ("worker", [], ""),
    ],
)
def test_visible_devices_per_role(role, addresses, expected):
    assert visible_devices(role, addresses) == expected


def test_visible_devices_rejects_unknown_role():
    with pytest.raises(ValueError, match="evaluator"):
        visible_devices("evaluator", ["0"])


def test_apply_sets_env_to_the_task_addresses(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")  # what a careless launcher left
    assert apply_visible_devices("worker", 1, ["2"]) == "2"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2"
    assert apply_visible_devices("ps", 1, ["3"]) == ""
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""


def test_apply_fails_when_spark_gave_a_worker_too_few_gpus(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "untouched")
    with pytest.raises(RuntimeError, match="gpus_per_worker=2"):
        apply_visible_devices("chief", 2, ["0"])
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "untouched"


def test_apply_outside_a_spark_task_reads_no_gpus(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    # No TaskContext in the test process: a CPU node hides every GPU ...
    assert apply_visible_devices("worker", 0) == ""
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
    # ... and a node that needs one fails instead of training on the CPU.
    with pytest.raises(RuntimeError, match="Spark assigned none"):
        apply_visible_devices("worker", 1)


def _node_info(job_name: str):
    from tf_models.tfos import NodeInfo

    return NodeInfo(
        job_name=job_name,
        task_index=0,
        executor_id=0,
        spark_executor_id="1",
        cluster_spec={"chief": ["h:1"], "ps": ["h:2"], "worker": ["h:3"]},
        hostname="h",
        pid=1,
    )


def test_a_node_is_pinned_to_the_cpus_named_for_it():
    from tf_models.tfos import pin_to_cpus

    before = os.sched_getaffinity(0)
    worker = _node_info("worker")
    try:
        assert pin_to_cpus(worker, {"ps": "0"}) is None and os.sched_getaffinity(0) == before
        first = min(before)
        # worker:0 wins over worker; the process may then run on that CPU only.
        assert pin_to_cpus(worker, {"worker": "0-4095", "worker:0": str(first)}) == {first}
        assert os.sched_getaffinity(0) == {first}
        # Every thread of the process, not just this one.
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
        assert len(threads) > 1 and all(os.sched_getaffinity(tid) == {first} for tid in threads[:8])
    finally:
        for tid in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(tid), before)
    with pytest.raises(RuntimeError, match="worker:0: train.placement.node_cpus '4095' names no CPU of this host"):
        pin_to_cpus(worker, {"worker": "4095"})


def test_a_pinned_nodes_thread_pools_are_sized_for_its_cpus(monkeypatch):
    """One compute thread per CPU the node is pinned to, at least two to run ops; unpinned, TensorFlow's defaults."""
    from tf_models.tfos import size_thread_pools

    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        monkeypatch.delenv(name, raising=False)
    worker = _node_info("worker")
    size_thread_pools(worker, {"ps": "0"})
    assert "TF_NUM_INTRAOP_THREADS" not in os.environ and "TF_NUM_INTEROP_THREADS" not in os.environ
    cpus = sorted(os.sched_getaffinity(0))
    size_thread_pools(worker, {"worker:0": str(cpus[0])})
    assert (os.environ["TF_NUM_INTRAOP_THREADS"], os.environ["TF_NUM_INTEROP_THREADS"]) == ("1", "2")
    size_thread_pools(worker, {"worker": ",".join(map(str, cpus))})
    assert os.environ["TF_NUM_INTRAOP_THREADS"] == str(len(cpus))


def test_the_chief_sizes_the_ps_and_workers_op_pools_for_the_pinned_workers():
    """One thread per CPU of the largest pinned worker (job:index or job); none pinned, TensorFlow's defaults."""
    from tf_models.tfos import function_threads

    assert function_threads({"worker:0": "0", "worker:1": "1", "chief": "0-1", "ps": "0-1"}) == 1
    assert function_threads({"worker": "0-1", "worker:1": "2-5"}) == 4
    assert function_threads({"ps": "0", "chief": "0-3"}) is None
    assert function_threads({}) is None


def test_a_cpu_plan_sizes_the_pools_first_and_pins_after(monkeypatch):
    """Step one touches no affinity and, off the chief of a ps cluster, no TensorFlow; step two pins."""
    from tf_models.tfos import CpuPlan

    for name in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        monkeypatch.delenv(name, raising=False)
    before = os.sched_getaffinity(0)
    first = min(before)
    plans = {
        strategy: CpuPlan.of(_node_info("worker"), {"worker": str(first)}, strategy)
        for strategy in ("parameter_server", "multi_worker_mirrored")
    }
    assert CpuPlan.of(_node_info("chief"), {}, "parameter_server").sends_functions
    assert not any(plan.sends_functions for plan in plans.values())
    assert not CpuPlan.of(_node_info("chief"), {}, "multi_worker_mirrored").sends_functions
    plan = plans["parameter_server"]
    try:
        plan.before_tensorflow_starts()
        assert os.environ["TF_NUM_INTRAOP_THREADS"] == "1" and os.sched_getaffinity(0) == before
        assert plan.after_server_is_up() == {first} and os.sched_getaffinity(0) == {first}
    finally:
        for tid in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(tid), before)
    assert CpuPlan.of(_node_info("worker"), {"ps": "0"}, "parameter_server").after_server_is_up() is None


def test_node_main_sets_devices_before_starting_tf(monkeypatch, tmp_path):
    """The ps hides the GPU; a worker with no Spark GPU fails before its server starts."""
    import tf_models.tfos as tfos
    from tf_models.node import NodeJob, node_main
    from tf_models.node_inputs import NodeInputs
    from tfbs.lineage import Lineage

    started = []
    monkeypatch.setattr(tfos, "start_server", lambda info: started.append(info.job_name))
    monkeypatch.setattr(tfos, "wait_for_chief", lambda *a, **k: "ok")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    config = load_config(DEMO, [*SUITE_MODEL, f"run_dir={tmp_path}", "train.placement.gpus_per_worker=1"])
    job = NodeJob(config, {}, Lineage.of(config, {}, MODEL_FORMAT), NodeInputs(str(tmp_path), None, None))
    args = {**job.node_args(), "run_id": "r"}

    node_main(args, _node_info("ps"))
    assert started == ["ps"]
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""

    with pytest.raises(RuntimeError, match="needs train.placement.gpus_per_worker=1"):
        node_main(args, _node_info("worker"))
    assert started == ["ps"]


def test_train_on_spark_tells_tfos_the_gpu_count(monkeypatch, tmp_path):
    """TFoS gets num_gpus, so it never picks GPUs from nvidia-smi itself."""
    import tf_models.tfos as tfos
    from tf_models.train import train_on_spark

    seen = {}
    monkeypatch.setattr(tfos, "run_cluster", lambda sc, main, node_args, **kw: seen.update(node_args))
    spark = type("FakeSpark", (), {"sparkContext": None})()
    from tfbs.formats.manifest import FileEntry, Manifest, SplitRecords

    records = SplitRecords(
        positives=[FileEntry(path="p.rec", rows=100, blake3="0" * 64)],
        negatives=[[FileEntry(path="n.rec", rows=300, blake3="1" * 64)]],
    )
    # Only what the driver reads before it hands the manifest to the (patched) cluster.
    manifest = Manifest.model_construct(
        records={"train": records, "valid": records},
        window=1000,
        tfs=["CTCF"],
        cells=["K562"],
        proteins={"CTCF": "MKV"},
        dnase=True,
    )
    for gpus in (0, 2):
        config = load_config(DEMO, [*SUITE_MODEL, f"run_dir={tmp_path}", f"train.placement.gpus_per_worker={gpus}"])
        train_on_spark(spark, config, manifest)
        assert seen["num_gpus"] == gpus


# --------------------------------------------------------------------------
# Spark settings
# --------------------------------------------------------------------------


def gpu_spark_conf(config) -> dict[str, str]:
    """The GPU settings of the training session's launch profile."""
    return {key: value for key, value in stage_conf(training_needs(config)).items() if ".resource." in key}


def test_spark_conf_for_one_gpu_per_worker():
    assert gpu_spark_conf(load_config(DEMO, ["train.placement.gpus_per_worker=1"])) == {
        "spark.executor.resource.gpu.amount": "1",
        "spark.executor.resource.gpu.discoveryScript": DEFAULT_GPU_DISCOVERY_SCRIPT,
        "spark.task.resource.gpu.amount": "1",
    }


def test_spark_conf_task_takes_all_executor_gpus():
    config = load_config(DEMO, ["train.placement.gpus_per_worker=2", "train.placement.gpu_discovery_script=./find.sh"])
    conf = gpu_spark_conf(config)
    assert conf["spark.executor.resource.gpu.amount"] == conf["spark.task.resource.gpu.amount"] == "2"
    assert conf["spark.executor.resource.gpu.discoveryScript"] == "./find.sh"


@pytest.mark.parametrize("overrides", [[], ["train.placement.gpus_per_worker=1", "train.placement.strategy=local"]])
def test_spark_conf_empty_without_cluster_gpus(overrides):
    assert gpu_spark_conf(load_config(DEMO, overrides)) == {}


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


def test_gpu_defaults_and_shipped_script():
    train = load_config(DEMO).train
    assert (train.placement.gpus_per_worker, train.mixed_precision) == (0, False)
    assert not [key for key in train.placement.spark_conf if ".resource.gpu." in key]
    assert train.placement.gpu_discovery_script == str(SCRIPT)
    assert SCRIPT.stat().st_mode & stat.S_IXUSR, "Spark runs the script directly: it must be executable"


@pytest.mark.parametrize(
    "override, message",
    [
        ("train.placement.gpus_per_worker=-1", "train.placement.gpus_per_worker"),
        ("train.placement.gpu_discovery_script=''", "train.placement.gpu_discovery_script"),
        ("train.placement.spark_conf={spark.executor.resource.gpu.amount: '1'}", "gpus_per_worker"),
    ],
)
def test_gpu_config_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(DEMO, [override])


def test_mixed_precision_without_gpus_is_allowed():
    train = load_config(DEMO, ["train.mixed_precision=true"]).train
    assert train.mixed_precision and train.placement.gpus_per_worker == 0


def test_yarn_gpu_profile_loads():
    config = load_config(YARN_GPU)
    train = config.train
    assert config.spark.master == train.placement.training_master(config.spark.master) == "yarn"
    assert config.run_dir.startswith("hdfs://") and config.data.root.startswith("hdfs://")
    assert (train.placement.gpus_per_worker, train.mixed_precision) == (1, True)
    # Exactly one TF node task per executor, as tf_models.tfos.run_cluster demands.
    assert (
        int(train.placement.spark_conf["spark.executor.instances"])
        == train.placement.num_ps + train.placement.num_workers + 1
    )
    assert train.placement.spark_conf["spark.task.cpus"] == train.placement.spark_conf["spark.executor.cores"]
    assert gpu_spark_conf(config)["spark.executor.resource.gpu.discoveryScript"] == "./get_gpus_resources.sh"


# --------------------------------------------------------------------------
# Mixed precision
# --------------------------------------------------------------------------


def _tiny_model(mixed: bool):
    from tf_models.model import build_model
    from tfbs.config import ModelConfig

    config = ModelConfig(
        aa_filters=[4, 4], aa_max_length=12, dense_units=8, dna_center_bp=None, motif_cnn={"filters": 4, "kernel": 5}
    )
    return build_model(config, n_cells=2, window=24, mixed_precision=mixed), config


def _batch(config, size: int = 4):
    import tensorflow as tf

    return {
        "dna": tf.one_hot(tf.random.uniform([size, 24], 0, 4, tf.int32), 4),
        "tf_index": tf.zeros([size], tf.int32),
        "cell_index": tf.range(size) % 2,
        "dnase": tf.ones([size]),
        "label": tf.constant([0.0, 1.0, 0.0, 1.0][:size]),
    }, tf.random.uniform([1, config.aa_max_length, 21])


def test_mixed_precision_policy_float16_compute_float32_logits():
    import keras

    model, config = _tiny_model(mixed=True)
    assert keras.mixed_precision.dtype_policy().name == "float32", "policy must not leak"
    assert model.dense.compute_dtype == "float16"
    assert model.motifs.compute_dtype == "float16"
    assert model.logit.compute_dtype == "float32"
    assert {v.dtype for v in model.trainable_variables} == {"float32"}
    batch, proteins = _batch(config)
    assert model({**batch, "proteins": proteins}).dtype == "float32"

    plain, _ = _tiny_model(mixed=False)
    assert plain.dense.compute_dtype == "float32"


def test_mixed_precision_training_step_scales_loss(tmp_path):
    """One step with the LossScaleOptimizer that train() uses: finite loss, updated
    float32 weights, and a checkpoint that saves."""
    import keras
    import numpy as np
    import tensorflow as tf

    from tf_models.train_loop import _gradient_step

    model, config = _tiny_model(mixed=True)
    optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-2))
    optimizer.build(model.trainable_variables)
    assert float(optimizer.scale_loss(tf.constant(1.0))) > 1.0  # the loss really is scaled
    before = [np.array(v) for v in model.trainable_variables]
    batch, proteins = _batch(config)
    loss = _gradient_step(model, optimizer, batch, proteins, replicas=1)
    assert np.isfinite(float(loss)) and float(loss) < 10  # unscaled loss, not loss * 2**15
    changed = [not np.allclose(b, np.array(v)) for b, v in zip(before, model.trainable_variables)]
    assert any(changed)
    assert tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "ckpt"))


# --------------------------------------------------------------------------
# Discovery script
# --------------------------------------------------------------------------


def _fake_nvidia_smi(folder: Path, body: str) -> None:
    """An ``nvidia-smi`` that answers only the query the script must ask."""
    fake = folder / "nvidia-smi"
    fake.write_text(
        "#!/bin/sh\n"
        'if [ "$*" != "--query-gpu=index --format=csv,noheader" ]; then echo "bad args: $*" >&2; exit 9; fi\n'
        f"{body}\n"
    )
    fake.chmod(0o755)


def _discover(path_dir: Path) -> subprocess.CompletedProcess:
    # Only the fake on PATH: the script must manage with shell builtins.
    return subprocess.run(
        [shutil.which("bash"), str(SCRIPT)], env={"PATH": str(path_dir)}, capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize(
    "output, addresses",
    [("printf '0\\n1\\n'", ["0", "1"]), ("printf '3\\n'", ["3"]), ("true", [])],
)
def test_discovery_script_prints_resource_json(tmp_path, output, addresses):
    _fake_nvidia_smi(tmp_path, output)
    result = _discover(tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "gpu", "addresses": addresses}


def test_discovery_script_fails_without_nvidia_smi(tmp_path):
    result = _discover(tmp_path)
    assert result.returncode != 0
    assert "nvidia-smi not found" in result.stderr


@pytest.mark.parametrize("output", ["printf 'No devices were found\\n'", "exit 6"])
def test_discovery_script_fails_on_bad_nvidia_smi_output(tmp_path, output):
    _fake_nvidia_smi(tmp_path, output)
    result = _discover(tmp_path)
    assert result.returncode != 0
    assert result.stdout == ""


# --------------------------------------------------------------------------
# What each node sees (no GPU here: the CPU fallback)
# --------------------------------------------------------------------------


def test_a_node_logs_its_devices_and_warns_when_given_gpus_it_cannot_use(caplog, monkeypatch):
    import tensorflow as tf

    from tf_models.gpus import log_devices

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with caplog.at_level(logging.INFO, logger="tfbs.gpus"):
        assert log_devices("worker", 1, 0) == []
        assert log_devices("ps", 0, 1) == []
    lines = [record.getMessage() for record in caplog.records]
    cuda = tf.test.is_built_with_cuda()
    assert lines == [
        f"TF node worker:1 devices: CPU only (CUDA_VISIBLE_DEVICES=, TensorFlow built with CUDA: {cuda})",
        f"TF node ps:0 devices: CPU only (CUDA_VISIBLE_DEVICES=, TensorFlow built with CUDA: {cuda})",
    ]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="tfbs.gpus"):
        log_devices("chief", 0, 2)
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage().startswith("TF node chief:0 was given 2 GPU(s) but runs on the CPU: ")
    assert ("tensorflow-cpu" in warning.getMessage()) == (not cuda)


@pytest.mark.parametrize(
    "given, shipped",
    [([], DEFAULT_GPU_DISCOVERY_SCRIPT), (["--files", "extra.txt"], f"extra.txt,{DEFAULT_GPU_DISCOVERY_SCRIPT}")],
)
def test_submit_yarn_ships_the_discovery_script_with_any_other_files(tmp_path, given, shipped):
    """scripts/submit_yarn.sh, run against a spark-submit that prints its arguments."""
    spark_submit = tmp_path / "spark" / "bin" / "spark-submit"
    spark_submit.parent.mkdir(parents=True)
    spark_submit.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    spark_submit.chmod(0o755)
    env = {**os.environ, "SPARK_HOME": str(tmp_path / "spark"), "HADOOP_CONF_DIR": str(tmp_path)}
    env["TFBS_PYTHON"] = sys.executable
    # A configuration that exists: the script reads its launch profile (tfbs/launch/).
    command = ["bash", str(REPO / "scripts" / "submit_yarn.sh"), "train", *given, "--", "--config", "conf/demo.yaml"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    argv = done.stdout.splitlines()
    assert argv.count("--files") == 1 and argv[argv.index("--files") + 1] == shipped
    assert argv[-3:] == ["jobs/train.py", "--config", "conf/demo.yaml"]
    assert argv[argv.index("spark.authenticate=true") - 1] == "--conf"


def test_tensorflow_comes_from_one_extra_cpu_or_gpu_at_the_same_version():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # Both install the `tensorflow` module: in the base dependencies, one would overwrite the other.
    assert not [d for d in project["dependencies"] if d.startswith("tensorflow") and "onspark" not in d]
    extras = project["optional-dependencies"]
    (cpu,), (gpu,) = extras["cpu"], extras["gpu"]
    assert cpu.startswith("tensorflow-cpu==") and gpu.startswith("tensorflow[and-cuda]==")
    assert cpu.split("==")[1] == gpu.split("==")[1]


def test_a_missing_tensorflow_names_the_extra_to_install(monkeypatch, capsys, tmp_path):
    from jobs.common import run_stage

    def stage(config, args):
        import tensorflow  # noqa: F401

    monkeypatch.setitem(sys.modules, "tensorflow", None)  # as if not installed
    assert run_stage("a stage", stage, ["--config", str(DEMO), "--set", f"run_dir={tmp_path}"]) == 2
    assert "error: tensorflow: not installed; pip install 'tfbs-spark[cpu]'" in capsys.readouterr().err
