"""hdfs_data.py's parsers against recorded and tool-made bytes (the WebHDFS read itself runs in
tests/integration/yarn_kerberos_test.cc, in every task of a job on the Kerberized test double)."""
import os
import shutil
import ssl
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import hdfs_data  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CAPTURES = os.path.join(ROOT, "tests", "data", "yarn-captures", "kerberos")
CERT = os.path.join(CAPTURES, "cluster-conf", "localhost-cert.pem")


def test_reads_the_recorded_container_tokens():
    tokens = hdfs_data.read_tokens(os.path.join(CAPTURES, "container", "am-container_tokens.bin"))
    assert [(t["alias"], t["kind"], t["service"]) for t in tokens] == [
        ("127.0.0.1:19000", "HDFS_DELEGATION_TOKEN", "127.0.0.1:19000"), ("", "YARN_AM_RM_TOKEN", "")]
    assert tokens[0]["identifier"].startswith(b"\x00\x0eroot@LOOM.TEST\x02rm")


def test_url_string_is_hadoops():
    # webhdfs/03: the NameNode's own encoding of a token, decoded and encoded back.
    with open(os.path.join(CAPTURES, "webhdfs", "03-nn-19871-GETDELEGATIONTOKEN-spnego.s2c.bin"), "rb") as f:
        reply = f.read().decode(errors="replace")
    text = reply.split('"urlString":"')[1].split('"')[0]
    import base64
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    n = raw[0]
    token = {"identifier": raw[1:1 + n], "password": raw[2 + n:2 + n + raw[1 + n]],
             "kind": "SWEBHDFS delegation", "service": "127.0.0.1:19000"}
    assert hdfs_data.url_string(token) == text


@pytest.mark.skipif(shutil.which("keytool") is None, reason="needs keytool to write a JKS")
def test_trusts_the_certificates_of_a_keytool_jks(tmp_path):
    jks = tmp_path / "truststore.jks"
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "nn", "-file", CERT, "-keystore", str(jks),
                    "-storetype", "jks", "-storepass", "loomtest"], check=True, capture_output=True)
    certs = hdfs_data._jks_certificates(jks.read_bytes(), "loomtest")
    with open(CERT) as f:
        assert certs == [ssl.PEM_cert_to_DER_cert(f.read())]
    with pytest.raises(ValueError, match="wrong ssl.client.truststore.password"):
        hdfs_data._jks_certificates(jks.read_bytes(), "not-the-password")


def test_namenode_urls_follow_the_http_policy(tmp_path):
    conf = tmp_path
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://ns1</value></property></configuration>")
    (conf / "hdfs-site.xml").write_text("<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in {
            "dfs.http.policy": "HTTPS_ONLY", "dfs.nameservices": "ns1", "dfs.ha.namenodes.ns1": "nn1,nn2",
            "dfs.namenode.https-address.ns1.nn1": "a:9871", "dfs.namenode.https-address.ns1.nn2": "b:9871"}.items())
        + "</configuration>")
    assert hdfs_data._namenode_urls(str(conf), None) == (["https://a:9871", "https://b:9871"], True)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl tool")
def test_trusts_a_pkcs12_truststore_whatever_its_type_says(tmp_path):
    p12 = tmp_path / "truststore.jks"  # keytool's default format since Java 9, under a .jks name
    subprocess.run(["openssl", "pkcs12", "-export", "-nokeys", "-in", CERT, "-out", str(p12), "-passout",
                    "pass:loomtest"], check=True, capture_output=True)
    (tmp_path / "ssl-client.xml").write_text("<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in {
            "ssl.client.truststore.location": str(p12), "ssl.client.truststore.type": "jks",
            "ssl.client.truststore.password": "loomtest"}.items()) + "</configuration>")
    context = hdfs_data._ssl_context(str(tmp_path))
    assert context.cert_store_stats()["x509"] == 1
    (tmp_path / "ssl-client.xml").write_text((tmp_path / "ssl-client.xml").read_text().replace(
        ">loomtest<", ">wrong<"))
    with pytest.raises(ValueError, match="ssl.client.truststore.password"):
        hdfs_data._ssl_context(str(tmp_path))


def test_token_is_picked_by_service(tmp_path, monkeypatch):
    import urllib.parse
    core = {"fs.defaultFS": "hdfs://127.0.0.1:19000"}
    hdfs = {"dfs.nameservices": "ns1"}
    service = hdfs_data._token_service
    assert service(urllib.parse.urlparse("hdfs:///user/a"), core, hdfs) == "127.0.0.1:19000"
    assert service(urllib.parse.urlparse("hdfs://ns1/user/a"), core, hdfs) == "ha-hdfs:ns1"
    assert service(urllib.parse.urlparse("hdfs://127.0.0.2/x"), core, hdfs) == "127.0.0.2:8020"
    # A job whose only token is for another NameNode says which key to set.
    tokens = hdfs_data.read_tokens(os.path.join(CAPTURES, "container", "am-container_tokens.bin"))
    assert tokens[0]["service"] == "127.0.0.1:19000"
    (tmp_path / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://127.0.0.1:19000</value></property>"
        "</configuration>")
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("HADOOP_TOKEN_FILE_LOCATION", os.path.join(CAPTURES, "container", "am-container_tokens.bin"))
    with pytest.raises(OSError, match="no delegation token for 127.0.0.2:8020.*loom.application.file-systems"):
        hdfs_data.read("hdfs://127.0.0.2/user/root/x")
