#!/usr/bin/env bash
# Submit one stage to YARN (client mode) in the packed environment of `make dist`:
#
#   scripts/submit_yarn.sh <stage> [spark-submit options] -- [stage arguments]
#   scripts/submit_yarn.sh train -- --config conf/yarn_gpu.yaml
#   scripts/submit_yarn.sh path/to/app.py [spark-submit options] -- [its arguments]
#
# Training sizes its own executors (one single-core executor per TF node);
# other stages take --num-executors and the like.
#
# Needs HADOOP_CONF_DIR (the cluster's client configuration). Reads:
#   TFBS_ENV_ARCHIVE    the packed environment (build/dist/tfbs-env.tar.gz by
#                       default); better an hdfs:// copy readable by all: YARN
#                       then caches it on each node across applications
#   TFBS_SPARK_ARCHIVE  the zip of Spark's jars for spark.yarn.archive, likewise
#                       (build/dist/spark-jars.zip by default)
#   TFBS_PYTHON         the driver's Python, default this checkout's .venv
#   SPARK_LOCAL_IP      passed on to the application master and executors when set
#   TFBS_PRINCIPAL, TFBS_KEYTAB   a Kerberos-secured cluster: Spark logs in from
#                       the keytab (--principal/--keytab; in client mode the keytab
#                       stays on this machine, containers get delegation tokens), and
#                       the driver's own HDFS client gets a ticket of its own
# Nothing needs to be installed on the cluster's nodes: executors run
# ./environment/bin/python from the archive, with Spark's jars from the zip.
#
# The launch profile of the stage's configuration (its --config and --set
# arguments; `python -m tfbs.launch --deploy yarn`, tfbs/launch/) gives the
# rest: Spark authenticates and encrypts its connections and its local spills
# (spark.authenticate, spark.network.crypto.enabled, spark.io.encryption.enabled;
# a job refuses to run on YARN with any of them off), and the JVMs of its
# spark.quick_jvm start on the quick compiler. No secret is given: Spark on YARN draws one
# per application and hands it to its containers through YARN's credentials,
# so it is on no command line and in no log. (The TF cluster's reservations
# carry a secret of their own, in the task closures these connections carry.)
set -euo pipefail
cd "$(dirname "$0")/.."

stage="${1:?usage: $0 <stage> [spark-submit options] -- [stage arguments]}"
shift
# The submitter's own --files go to the launch profile, which ships them with
# the GPU discovery script (spark-submit keeps only the last --files).
submit_options=()
user_files=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  if [ "$1" = "--files" ] && [ "$#" -gt 1 ]; then
    user_files=(--files "$2"); shift 2
  else
    submit_options+=("$1"); shift
  fi
done
[ "${1:-}" = "--" ] && shift
: "${HADOOP_CONF_DIR:?set HADOOP_CONF_DIR to the client configuration of the cluster}"

python="${TFBS_PYTHON:-$PWD/.venv/bin/python}"
with_ticket=()
if [ -n "${TFBS_PRINCIPAL:-}" ]; then
  : "${TFBS_KEYTAB:?set TFBS_KEYTAB beside TFBS_PRINCIPAL}"
  submit_options+=(--principal "$TFBS_PRINCIPAL" --keytab "$TFBS_KEYTAB")
  # The driver's HDFS client (hdfs-native) reads a ticket cache: this
  # submission's own, gone when it ends (tfbs/launch/kerberos.py).
  with_ticket=("$python" -m tfbs.launch.kerberos --principal "$TFBS_PRINCIPAL" --keytab "$TFBS_KEYTAB" --)
fi
env_archive="${TFBS_ENV_ARCHIVE:-build/dist/tfbs-env.tar.gz}"
spark_archive="${TFBS_SPARK_ARCHIVE:-build/dist/spark-jars.zip}"
# pip's pyspark is the Spark of the gateway: its spark-submit, its Python zips.
if [ -z "${SPARK_HOME:-}" ]; then
  SPARK_HOME=$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
fi
export SPARK_HOME YARN_CONF_DIR="${YARN_CONF_DIR:-$HADOOP_CONF_DIR}" PYSPARK_PYTHON="$python"

# The stage's configuration, as the job will read it: its --config and --set arguments.
profile_args=()
arguments=("$@")
for ((i = 0; i < ${#arguments[@]}; i++)); do
  case "${arguments[i]}" in
    --config | --set) profile_args+=("${arguments[i]}" "${arguments[i + 1]:-}"); i=$((i + 1)) ;;
    --config=* | --set=*) profile_args+=("${arguments[i]}") ;;
  esac
done
# One argument a line; a value may hold spaces (JVM options), never a newline.
# With the packaging: the driver on this Python, executors on the archive's
# (--archives), the cluster found in the Hadoop configuration Spark puts in
# every container, the files a container needs (--files).
launch_options=(--deploy yarn --python "$python" --env-archive "$env_archive" --spark-archive "$spark_archive")
launch_options+=("${user_files[@]}")
[ -z "${SPARK_LOCAL_IP:-}" ] || launch_options+=(--local-ip "$SPARK_LOCAL_IP")
profile=$("$python" -m tfbs.launch "${launch_options[@]}" "${profile_args[@]}")
profile_options=()
[ -z "$profile" ] || mapfile -t profile_options <<<"$profile"
case "$stage" in
  *.py) application=$stage ;;
  *) application=jobs/$stage.py ;;
esac
exec "${with_ticket[@]}" "$SPARK_HOME/bin/spark-submit" --master yarn --deploy-mode client \
  "${profile_options[@]}" "${submit_options[@]}" \
  "$application" "$@"
