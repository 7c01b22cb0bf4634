"""Which host name the Python HDFS client connects by, so that it finds its delegation token."""

from __future__ import annotations

from tfbs.storage.hadoop_conf import TOKEN_FILE_ENV, hadoop_setting, token_service_host

CORE_SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>fs.defaultFS</name><value>hdfs://master:8020</value></property>
  <property><name>hadoop.security.token.service.use_ip</name><value>{use_ip}</value></property>
</configuration>
"""


def _conf(tmp_path, monkeypatch, use_ip: str) -> None:
    (tmp_path / "core-site.xml").write_text(CORE_SITE.format(use_ip=use_ip))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))


def test_a_setting_is_read_from_core_site_or_defaults(tmp_path, monkeypatch):
    _conf(tmp_path, monkeypatch, "false")
    assert hadoop_setting("fs.defaultFS", "") == "hdfs://master:8020"
    assert hadoop_setting("dfs.replication", "3") == "3"
    assert hadoop_setting("fs.defaultFS", "none", conf_dir=str(tmp_path / "missing")) == "none"


def test_with_a_token_file_the_client_connects_by_address_as_hadoop_files_tokens(tmp_path, monkeypatch):
    _conf(tmp_path, monkeypatch, "true")
    monkeypatch.delenv(TOKEN_FILE_ENV, raising=False)
    assert token_service_host("localhost") == "localhost"  # a ticket: the name the server's principal has
    monkeypatch.setenv(TOKEN_FILE_ENV, str(tmp_path / "tokens"))
    assert token_service_host("localhost") == "127.0.0.1"
    assert token_service_host("no-such-host.invalid") == "no-such-host.invalid"  # an HA name service
    _conf(tmp_path, monkeypatch, "false")
    assert token_service_host("localhost") == "localhost"
