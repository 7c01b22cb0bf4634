#!/usr/bin/env bash
# System packages the pipeline needs: the bedtools binary, Java 17 (a JDK) for Spark,
# and Maven, which fetches Hadoop's mini cluster for the HDFS/YARN tests
# (hadoop/pom.xml). Installs only what is missing (Debian/Ubuntu, apt-get).
# TEST_DEPS=1 (`make test`) adds headless Chromium and its WebDriver, which
# render the HTML report in tests/scoring/test_report_html.py; iproute2 and
# util-linux (ip, unshare, setpriv), which make the hosts of hadoop/hosts.py;
# MIT Kerberos (a KDC, kinit), curl (SPNEGO) and OpenSSL (their certificates),
# which secure them.
# The demo needs none of them.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
command -v bedtools >/dev/null 2>&1 || missing+=(bedtools)
java_major() { java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print v[1]}'; }
# A JDK: the YARN launch profile compiles its executor plugin (tfbs/launch/java/) with javac.
if ! command -v java >/dev/null 2>&1 || [ "$(java_major)" -lt 17 ] || ! command -v javac >/dev/null 2>&1; then
  missing+=(openjdk-17-jdk-headless)
fi
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v python3.11 >/dev/null 2>&1 || python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || missing+=(python3.11 python3.11-venv)
if [ "${TEST_DEPS:-0}" = "1" ]; then
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  command -v unshare >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
  command -v krb5kdc >/dev/null 2>&1 || missing+=(krb5-kdc)
  command -v kadmin.local >/dev/null 2>&1 || missing+=(krb5-admin-server)
  command -v kinit >/dev/null 2>&1 || missing+=(krb5-user)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "bedtools: $(bedtools --version)"
echo "java: $(java -version 2>&1 | head -n 1)"
echo "maven: $(mvn -v 2>/dev/null | head -n 1)"
if [ "${TEST_DEPS:-0}" = "1" ]; then
  echo "chromium: $(chromedriver --version 2>/dev/null | head -n 1)"
fi
