#!/usr/bin/env bash
# Spark GPU discovery script: prints the GPUs this executor may use as
#   {"name": "gpu", "addresses": ["0", "1"]}
# (Spark's ResourceInformation JSON), for
#   spark.executor.resource.gpu.discoveryScript
# Modelled on Spark's examples/src/main/scripts/getGpusResources.sh.
#
# It lists every GPU nvidia-smi can see, so it must run inside a container
# that sees only its own GPUs (YARN GPU isolation, yarn.io/gpu). Without
# isolation every executor on a node would report all of the node's GPUs and
# Spark would hand the same address to tasks of different executors.
#
# Only shell builtins besides nvidia-smi, so it runs with a minimal PATH.
set -euo pipefail

if ! command -v nvidia-smi >/dev/null 2>&1; then
  # Fail loudly: an executor asked for GPUs on a host without the NVIDIA
  # driver should not start (Spark reports this script's exit and stderr).
  echo "get_gpus_resources.sh: nvidia-smi not found on PATH" >&2
  exit 1
fi

indices="$(nvidia-smi --query-gpu=index --format=csv,noheader)"
addresses=""
for index in $indices; do
  case "$index" in
    '' | *[!0-9]*)
      echo "get_gpus_resources.sh: unexpected GPU index from nvidia-smi: '$index'" >&2
      exit 1
      ;;
  esac
  addresses="${addresses:+$addresses, }\"$index\""
done
printf '{"name": "gpu", "addresses": [%s]}\n' "$addresses"
