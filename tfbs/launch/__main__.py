"""``python -m tfbs.launch``: the ``spark-submit`` options (or, with ``--json``, settings, environment, archives and
files) of a configuration."""

from __future__ import annotations

import argparse
import json
import sys

from tfbs.config import SparkConfig, load_config
from tfbs.launch.profile import command_line, submission_profile
from tfbs.spark_master import spark_master


def main(argv: list[str] | None = None) -> int:
    """Print the ``spark-submit`` arguments (or, with ``--json``, settings and environment) of a configuration."""
    parser = argparse.ArgumentParser(description="the spark-submit arguments of a configuration (tfbs.launch)")
    parser.add_argument("--config", help="the pipeline YAML (none: the network policy alone)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--deploy", choices=["local", "yarn"], help="where spark-submit runs it")
    where.add_argument("--master", help="the master spark-submit is given (a standalone or other cluster: nothing)")
    parser.add_argument("--python", help="the driver's interpreter: add the packaging settings (python_packaging)")
    parser.add_argument("--env-archive", help="the packed environment the executors run: <tar.gz>[#<alias>]")
    parser.add_argument("--spark-archive", help="the zip of Spark's jars YARN ships (spark.yarn.archive)")
    parser.add_argument("--local-ip", help="SPARK_LOCAL_IP of the YARN containers")
    parser.add_argument("--files", help="the submitter's own --files (comma-separated), shipped beside the profile's")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a configuration override")
    parser.add_argument(
        "--json", action="store_true", help='print {"conf", "env", "archives", "files"} as JSON instead'
    )
    args = parser.parse_args(argv)
    spark = load_config(args.config, args.set).spark if args.config else SparkConfig()
    master = spark_master(args.master or args.deploy)
    profile = submission_profile(
        spark,
        master,
        python=args.python,
        env_archive=args.env_archive,
        spark_archive=args.spark_archive,
        local_ip=args.local_ip,
        files=tuple(args.files.split(",")) if args.files else (),
    )
    if args.json:
        print(
            json.dumps({"conf": profile.conf, "env": profile.env, "archives": profile.archives, "files": profile.files})
        )
    else:
        print("\n".join(command_line(profile)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
