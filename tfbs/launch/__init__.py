"""The launch profile: what a Spark application of the pipeline starts with, decided from where it runs.

The one package that writes Spark's settings, whoever starts the JVM
(the network policy per master in :mod:`tfbs.launch.policy`, the JVM's
options and class archive in :mod:`tfbs.launch.jvm`, a stage's needs and
the whole profile in :mod:`tfbs.launch.profile`, re-exported here):
:func:`launch_profile` for a session (:func:`tfbs.launch.session.build_session`,
in-process or under ``spark-submit``; the class archive's run), and
:func:`submission_profile` for a ``spark-submit`` command line
(``scripts/submit_yarn.sh``, the Airflow DAG through ``python -m
tfbs.launch``). A stage states what it needs of Spark in its own words
(:class:`StageNeeds`: executors, retries, GPUs); :func:`stage_conf`
writes them as settings. The profile holds:

- the network policy per master (:func:`network_conf`): loopback and a
  per-session secret on one machine, authentication and encryption on YARN;
- on YARN also the executor plugin that keeps the containers' Hadoop
  tokens current for their Python processes (:func:`yarn_conf`);
- the JVM options of the configuration's ``spark.quick_jvm`` roles
  (:data:`QUICK_JVM_OPTIONS`, :func:`java_options`);
- the driver's class archive (:func:`with_archive`, built by
  :mod:`tfbs.launch.class_archive`);
- for a ``spark-submit``, which interpreters the driver and the executors
  run, the packed environment's on YARN (:func:`python_packaging`), and
  the archive of Spark's jars YARN ships;
- the stage's needs (:func:`stage_conf`) and the configuration's own
  ``spark.conf``, checked against the master's policy
  (:func:`check_security`) before anything starts.

``python -m tfbs.launch --config conf/demo.yaml --deploy yarn`` prints the
``--conf key=value`` arguments a ``spark-submit`` of that configuration
needs, one argument per line (``--json``: the settings and environment as
JSON, for programs); ``--master URL`` instead of ``--deploy`` lets the
master decide (:func:`tfbs.spark_master.spark_master`; nothing for a
standalone or other cluster). Under ``spark-submit`` the driver JVM is up before the
job reads its configuration: JVM options and the network policy can only
come from the submitter.
"""

from __future__ import annotations

from tfbs.launch.jvm import DUMP_OPTION, QUICK_JVM_OPTIONS, USE_OPTION, archive_path, java_options, with_archive
from tfbs.launch.policy import (
    ALL_INTERFACES,
    AUTH_SECRET,
    CLUSTER_SECURITY,
    GCM_CIPHER,
    LOCAL_ENV,
    LOOPBACK,
    SECRET_FILE_ENV,
    SESSION_SECRETS,
    YARN_SECURITY,
    check_security,
    cluster_secret,
    insecure_settings,
    network_conf,
    yarn_conf,
)
from tfbs.launch.profile import (
    ENVIRONMENT_ALIAS,
    GPU_RESOURCE,
    HADOOP_CONF_IN_CONTAINER,
    LaunchProfile,
    StageNeeds,
    command_line,
    launch_profile,
    packed_environment,
    python_packaging,
    stage_conf,
    submission_profile,
    submit_arguments,
)

__all__ = [
    "ALL_INTERFACES",
    "AUTH_SECRET",
    "CLUSTER_SECURITY",
    "DUMP_OPTION",
    "ENVIRONMENT_ALIAS",
    "GCM_CIPHER",
    "GPU_RESOURCE",
    "HADOOP_CONF_IN_CONTAINER",
    "LOCAL_ENV",
    "LOOPBACK",
    "QUICK_JVM_OPTIONS",
    "SECRET_FILE_ENV",
    "SESSION_SECRETS",
    "USE_OPTION",
    "YARN_SECURITY",
    "LaunchProfile",
    "StageNeeds",
    "archive_path",
    "check_security",
    "cluster_secret",
    "command_line",
    "insecure_settings",
    "java_options",
    "launch_profile",
    "network_conf",
    "packed_environment",
    "python_packaging",
    "stage_conf",
    "submission_profile",
    "submit_arguments",
    "with_archive",
    "yarn_conf",
]
