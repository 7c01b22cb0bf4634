"""What the Python HDFS client needs from the Hadoop client configuration.

hdfs-native reads ``$HADOOP_CONF_DIR`` for the name node and security
itself; this module answers the one question it leaves to its caller: which
host name a delegation token is filed under.
"""

from __future__ import annotations

import os
import socket
import xml.etree.ElementTree as ElementTree
from pathlib import Path

#: Set by YARN in a container (and by ``hdfs fetchdt`` users): the delegation tokens of the application.
TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"


def hadoop_setting(name: str, default: str, conf_dir: str | None = None) -> str:
    """A property of ``core-site.xml`` in ``conf_dir`` (default ``$HADOOP_CONF_DIR``), else ``default``."""
    folder = conf_dir if conf_dir is not None else os.environ.get("HADOOP_CONF_DIR", "")
    path = Path(folder) / "core-site.xml"
    if not folder or not path.is_file():
        return default
    for prop in ElementTree.parse(path).getroot().iter("property"):
        if prop.findtext("name", "").strip() == name:
            return prop.findtext("value", default).strip()
    return default


def token_service_host(host: str) -> str:
    """The host name under which a delegation token for the name node at ``host`` is filed.

    Hadoop's clients file a token under the name node's address unless
    ``hadoop.security.token.service.use_ip`` is false; hdfs-native picks the
    token whose service is the very ``host:port`` it connects to. So where a
    token file is in use (a YARN container), connect by that address. Elsewhere,
    or when ``host`` does not resolve (an HA name service), ``host`` itself.
    """
    if not os.environ.get(TOKEN_FILE_ENV):
        return host
    if hadoop_setting("hadoop.security.token.service.use_ip", "true").lower() != "true":
        return host
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host
