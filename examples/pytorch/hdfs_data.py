"""Read a file from HDFS inside a Loom task, with the job's delegation token (stdlib only).

On a Kerberized YARN cluster a container has no Kerberos ticket: `loom submit` got an HDFS
delegation token for the job, and Loom hands it to every task in the Hadoop credentials file
named by $HADOOP_TOKEN_FILE_LOCATION ("HDTS" format, what Hadoop's own clients read). This
module reads that file and fetches the bytes over WebHDFS with `delegation=<token>`, so no
Hadoop client (no JVM) is needed in the task. On a cluster without Kerberos (no token in the
file) it asks as `user.name=$USER`, as WebHDFS's simple auth wants.

The NameNode's web address, the HTTP policy (dfs.http.policy) and, for HTTPS, the trusted
certificates (ssl-client.xml's JKS or PKCS12 truststore) come from $HADOOP_CONF_DIR, which every
YARN container has. NameNode HA: each NameNode of the nameservice is tried, a standby skipped.
Each file system's token is picked by its service, as Hadoop does: ha-hdfs:<nameservice>, else
the NameNode's ip:port (other file systems: loom.application.file-systems).

    import hdfs_data
    raw = hdfs_data.read("hdfs:///user/alice/digits.csv")
"""
import base64
import hashlib
import json
import os
import ssl
import socket
import struct
import subprocess
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

HDFS_DELEGATION_KIND = "HDFS_DELEGATION_TOKEN"


# ---- Hadoop's Writable encodings and the HDTS credentials file ----------------------------

def _read_vlong(buf, at):
    first = struct.unpack_from("b", buf, at)[0]
    at += 1
    if first >= -112:
        return first, at
    negative = first < -120
    size = -(first + 120) if negative else -(first + 112)
    value = 0
    for _ in range(size):
        value = (value << 8) | buf[at]
        at += 1
    return (~value if negative else value), at


def _read_bytes(buf, at):
    n, at = _read_vlong(buf, at)
    if n < 0 or at + n > len(buf):
        raise ValueError("credentials file: a length runs past the end")
    return bytes(buf[at:at + n]), at + n


def _write_vlong(v):
    if -112 <= v <= 127:
        return struct.pack("b", v)
    size = -112
    if v < 0:
        v, size = ~v, -120
    body = v.to_bytes((v.bit_length() + 7) // 8, "big")
    return struct.pack("b", size - len(body)) + body


def read_tokens(path=None):
    """The tokens of an HDTS file (version 0): a list of dicts alias/identifier/password/kind/service."""
    path = path or os.environ.get("HADOOP_TOKEN_FILE_LOCATION", "")
    if not path:
        return []
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:4] != b"HDTS" or len(buf) < 5 or buf[4] != 0:
        raise ValueError(f"{path}: not a Hadoop credentials file (HDTS version 0)")
    at = 5
    count, at = _read_vlong(buf, at)
    tokens = []
    for _ in range(count):
        alias, at = _read_bytes(buf, at)
        identifier, at = _read_bytes(buf, at)
        password, at = _read_bytes(buf, at)
        kind, at = _read_bytes(buf, at)
        service, at = _read_bytes(buf, at)
        tokens.append({"alias": alias.decode(), "identifier": identifier, "password": password,
                       "kind": kind.decode(), "service": service.decode()})
    return tokens


def url_string(token):
    """Token.encodeToUrlString: the Writable token in URL-safe Base64 without padding."""
    raw = b"".join([
        _write_vlong(len(token["identifier"])), token["identifier"],
        _write_vlong(len(token["password"])), token["password"],
        _write_vlong(len(token["kind"].encode())), token["kind"].encode(),
        _write_vlong(len(token["service"].encode())), token["service"].encode()])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# ---- the cluster's configuration -----------------------------------------------------------

def _site(conf_dir, name):
    props = {}
    path = os.path.join(conf_dir, name)
    if not os.path.exists(path):
        return props
    for prop in ET.parse(path).getroot().iter("property"):
        key, value = prop.findtext("name"), prop.findtext("value")
        if key is not None and value is not None:
            props[key.strip()] = value.strip()
    return props


def _namenode_urls(conf_dir, host_of_uri):
    core, hdfs = _site(conf_dir, "core-site.xml"), _site(conf_dir, "hdfs-site.xml")
    https = hdfs.get("dfs.http.policy", "HTTP_ONLY").upper() == "HTTPS_ONLY"
    key = "dfs.namenode.https-address" if https else "dfs.namenode.http-address"
    default_port = 9871 if https else 9870
    fs_host = host_of_uri or urllib.parse.urlparse(core.get("fs.defaultFS", "")).hostname or "localhost"
    nameservices = [n.strip() for n in hdfs.get("dfs.nameservices", "").split(",") if n.strip()]
    if fs_host in nameservices:
        ids = [i.strip() for i in hdfs.get(f"dfs.ha.namenodes.{fs_host}", "").split(",") if i.strip()]
        addresses = [hdfs.get(f"{key}.{fs_host}.{i}", "") for i in ids] or [hdfs.get(f"{key}.{fs_host}", "")]
    elif host_of_uri and host_of_uri != urllib.parse.urlparse(core.get("fs.defaultFS", "")).hostname:
        addresses = [f"{host_of_uri}:{default_port}"]  # another NameNode: its web port
    else:
        addresses = [hdfs.get(key, f"{fs_host}:{default_port}")]
    scheme = "https" if https else "http"
    return [f"{scheme}://{a.replace('0.0.0.0', fs_host)}" for a in addresses if a], https


def _jks_certificates(data, password):
    """The trusted certificates (DER) of a JKS truststore; its keyed SHA-1 digest is checked."""
    if data[:4] != b"\xfe\xed\xfe\xed":
        raise ValueError("not a JKS keystore")
    if password is not None:
        digest = hashlib.sha1(password.encode("utf-16-be") + b"Mighty Aphrodite" + data[:-20]).digest()
        if digest != data[-20:]:
            raise ValueError("JKS integrity check failed: wrong ssl.client.truststore.password?")
    version, count = struct.unpack_from(">II", data, 4)
    at = 12
    certs = []
    for _ in range(count):
        tag = struct.unpack_from(">I", data, at)[0]
        at += 4
        alias_len = struct.unpack_from(">H", data, at)[0]
        at += 2 + alias_len + 8  # alias, timestamp
        if tag == 1:  # a private key entry: skip the key, then its chain (Java trusts its first cert)
            key_len = struct.unpack_from(">I", data, at)[0]
            at += 4 + key_len
            chain = struct.unpack_from(">I", data, at)[0]
            at += 4
        else:
            chain = 1
        for index in range(chain):
            if version == 2:  # version 1 has no certificate type
                type_len = struct.unpack_from(">H", data, at)[0]
                at += 2 + type_len
            cert_len = struct.unpack_from(">I", data, at)[0]
            at += 4
            if index == 0:
                certs.append(data[at:at + cert_len])
            at += cert_len
    return certs


def _pkcs12_certificates(location, password):
    """PKCS12 truststores (keytool's default since Java 9) through the openssl tool."""
    try:
        pem = subprocess.run(["openssl", "pkcs12", "-in", location, "-nokeys", "-passin", "stdin"],
                             input=(password or "").encode(), capture_output=True, check=True).stdout
    except FileNotFoundError:
        raise ValueError(f"{location} is a PKCS12 truststore: reading it needs the openssl tool") from None
    except subprocess.CalledProcessError as e:
        raise ValueError(f"{location}: openssl could not read the PKCS12 truststore (wrong "
                         f"ssl.client.truststore.password?): {e.stderr.decode(errors='replace')[:200]}") from None
    return pem.decode()


def _ssl_context(conf_dir):
    ssl_client = _site(conf_dir, _site(conf_dir, "core-site.xml").get("hadoop.ssl.client.conf", "ssl-client.xml"))
    location = ssl_client.get("ssl.client.truststore.location", "")
    if not location:
        return ssl.create_default_context()
    with open(location, "rb") as f:
        data = f.read()
    password = ssl_client.get("ssl.client.truststore.password")
    # The content decides, as Java's keystore loading does: "jks" files are often PKCS12.
    if data[:4] == b"\xfe\xed\xfe\xed":
        return ssl.create_default_context(cadata=b"".join(_jks_certificates(data, password)))
    if data[:1] == b"\x30":
        return ssl.create_default_context(cadata=_pkcs12_certificates(location, password))
    raise ValueError(f"{location}: not a JKS or PKCS12 truststore (ssl.client.truststore.location)")


def _token_service(parsed, core, hdfs):
    """The service Hadoop names a file system's token by: ha-hdfs:<nameservice>, else ip:port."""
    fs = parsed if parsed.hostname else urllib.parse.urlparse(core.get("fs.defaultFS", ""))
    host = fs.hostname or ""
    nameservices = [n.strip() for n in hdfs.get("dfs.nameservices", "").split(",") if n.strip()]
    if host in nameservices and fs.port is None:
        return f"ha-hdfs:{host}"
    try:
        ip = socket.gethostbyname(host)
    except OSError:
        ip = host
    return f"{ip}:{fs.port or 8020}"


# ---- WebHDFS -------------------------------------------------------------------------------

def read(uri):
    """The bytes of an HDFS file ("hdfs:///path", "hdfs://nameservice/path" or "/path")."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme not in ("", "hdfs"):
        raise ValueError(f"{uri}: only hdfs:// paths")
    conf_dir = os.environ.get("HADOOP_CONF_DIR", "/etc/hadoop/conf")
    bases, https = _namenode_urls(conf_dir, parsed.hostname)
    context = _ssl_context(conf_dir) if https else None
    tokens = [t for t in read_tokens() if t["kind"] == HDFS_DELEGATION_KIND]
    if tokens:
        service = _token_service(parsed, _site(conf_dir, "core-site.xml"), _site(conf_dir, "hdfs-site.xml"))
        token = next((t for t in tokens if t["service"] == service), None)
        if token is None:
            raise OSError(f"{uri}: the job has no delegation token for {service} (it has "
                          f"{', '.join(t['service'] for t in tokens)}): list the file system in "
                          "loom.application.file-systems")
        auth = f"delegation={url_string(token)}"
    else:
        auth = "user.name=" + urllib.parse.quote(os.environ.get("USER", ""))
    path = urllib.parse.quote(parsed.path or "/")
    errors = []
    for base in bases:
        url = f"{base}/webhdfs/v1{path}?op=OPEN&{auth}"
        try:
            # urllib follows the NameNode's 307 to the DataNode; its Location carries a token.
            with urllib.request.urlopen(url, context=context, timeout=60) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")
            if e.code == 403 and "StandbyException" in body:
                errors.append(f"{base}: standby")
                continue
            try:
                remote = json.loads(body)["RemoteException"]
                body = f"{remote.get('exception')}: {remote.get('message')}"
            except (ValueError, KeyError, TypeError):
                body = body[:300]
            raise OSError(f"WebHDFS OPEN {uri} at {base}: HTTP {e.code}: {body}") from None
        except urllib.error.URLError as e:
            errors.append(f"{base}: {e.reason}")
    raise OSError(f"WebHDFS OPEN {uri}: no NameNode answered ({'; '.join(errors)})")
