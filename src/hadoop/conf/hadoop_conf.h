#pragma once
// The cluster's addresses, read from the standard Hadoop client configuration in
// $HADOOP_CONF_DIR (core-site.xml, hdfs-site.xml, yarn-site.xml), with Hadoop's defaults.

#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "hadoop/conf/tls_trust.h"

namespace loom::hadoop {

struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const { return host + ":" + std::to_string(port); }
};

// "host:port" (the last colon splits; the port is 1-65535); InvalidArgument otherwise.
Result<HostPort> ParseHostPort(std::string_view text);
// "h1:p1,h2:p2" (what job records and manifests keep for HA clusters), and back.
Result<std::vector<HostPort>> ParseHostPortList(std::string_view text);
std::string HostPortListString(const std::vector<HostPort>& list);

// Site files named explicitly on top of HADOOP_CONF_DIR's (loom.application.hdfs-conf-path and
// yarn-conf-path, TonY's keys): each is merged right after the directory's file of its kind,
// so its properties win over the directory's. Empty: none.
struct ExtraSiteFiles {
  std::string hdfs_site;
  std::string yarn_site;
};

// Hadoop's HttpConfig.Policy: which web servers (NameNode, ResourceManager, NodeManagers) a
// cluster runs. Clients use https only under kHttpsOnly (DFSUtil.getHttpClientScheme,
// YarnConfiguration.useHttps); kHttpAndHttps still serves http.
enum class HttpPolicy { kHttpOnly, kHttpsOnly, kHttpAndHttps };

// ssl.client.truststore.* from the ssl-client.xml of `conf_dir` (the file core-site.xml's
// hadoop.ssl.client.conf names, "ssl-client.xml" by default, relative to conf_dir). A missing
// default file means no truststore; a missing file named explicitly, or a malformed one, is
// an error naming it.
Result<TrustStoreSettings> ReadTrustStoreSettings(const std::string& conf_dir);

// Site properties by name, ${var} expanded.
using SiteProperties = std::map<std::string, std::string>;
// Every property of `files` in order (later files win; a missing or empty path adds nothing; a
// malformed file is InvalidArgument naming it), each expanded as Hadoop expands on get (over
// the defaults HadoopConf knows): for the keys HadoopConf has no field for.
Result<SiteProperties> ReadSiteProperties(const std::vector<std::string>& files);

struct HadoopConf {
  std::string conf_dir;
  std::string default_fs;            // fs.defaultFS, e.g. "hdfs://127.0.0.1:9000"
  std::string fs_scheme;             // "hdfs"
  std::string fs_host;               // "127.0.0.1"
  int fs_port = -1;                  // -1 when the URI has none (an HA nameservice)
  HostPort rm;                       // yarn.resourcemanager.address (default <rm host>:8032)
  HostPort scheduler;                // yarn.resourcemanager.scheduler.address (default <rm host>:8030)
  std::string rm_webapp;             // yarn.resourcemanager.webapp.address (default <rm host>:8088)
  // dfs.http.policy (HTTP_ONLY; any case): under HTTPS_ONLY the NameNode web addresses below
  // are the https ones, dfs.namenode.https-address[.<ns>.<nn>] (default 0.0.0.0:9871).
  HttpPolicy dfs_http_policy = HttpPolicy::kHttpOnly;
  HostPort namenode_http;            // dfs.namenode.http-address (default 0.0.0.0:9870 -> fs host)
  // NameNode HA: fs.defaultFS names a nameservice of dfs.nameservices with dfs.ha.namenodes.<ns>:
  // dfs.namenode.http-address.<ns>.<nn> of each, in that order (namenode_http is the first).
  // Otherwise namenode_http alone.
  std::vector<HostPort> namenode_https;
  // The WebHDFS base URL of each of namenode_https, with the policy's scheme:
  // "https://127.0.0.1:19871" (IPv6 hosts in brackets). What WebHdfs takes.
  std::vector<std::string> namenode_web_urls;
  // RM HA (yarn.resourcemanager.ha.enabled): yarn.resourcemanager.ha.rm-ids and per id
  // yarn.resourcemanager.{address,scheduler.address,webapp.address}.<id>, each defaulting to
  // yarn.resourcemanager.hostname.<id> with the standard port (HAUtil). rm, scheduler and
  // rm_webapp are then the first id's. Without HA: one entry each, rm and scheduler.
  bool rm_ha_enabled = false;
  std::vector<std::string> rm_ids;
  std::vector<HostPort> rms;
  std::vector<HostPort> schedulers;
  std::vector<std::string> rm_webapps;
  // The failover policy RMProxy.createRetryPolicy builds for HA: yarn.client.failover-max-attempts
  // (unset or -1: yarn.resourcemanager.connect.max-wait.ms / sleep base, 900000 / 30000 = 30),
  // yarn.client.failover-sleep-base-ms and -max-ms (both default to the connect retry interval).
  int rm_failover_max_attempts = 30;
  int64_t rm_failover_sleep_base_ms = 30000;
  int64_t rm_failover_sleep_max_ms = 30000;
  std::string security;              // hadoop.security.authentication ("simple")
  std::string rpc_protection;        // hadoop.rpc.protection ("authentication")
  // With security "kerberos": the servers' principals, `_HOST` unexpanded (sasl_gssapi.h).
  std::string rm_principal;          // yarn.resourcemanager.principal
  std::string nn_principal;          // dfs.namenode.kerberos.principal
  // yarn.scheduler.minimum-allocation-mb (yarn-default: 1024): asks round up to a multiple.
  int64_t min_allocation_mb = 1024;
  // yarn.resourcemanager.connect.retry-interval.ms (yarn-default: 30000): how long a client
  // waits before it tries an unreachable ResourceManager again.
  int64_t rm_connect_retry_interval_ms = 30000;
  // Where containers' logs are (yarn-site.xml), for `loom logs`: a NodeManager's web server
  // while it keeps them, then HDFS if the cluster aggregates logs.
  // yarn.http.policy (HTTP_ONLY): under HTTPS_ONLY NodeManagers and ResourceManagers serve
  // https only, nm_webapp is yarn.nodemanager.webapp.https.address (default 0.0.0.0:8044),
  // and the node http address the RM reports for a container is that https one.
  HttpPolicy yarn_http_policy = HttpPolicy::kHttpOnly;
  std::string nm_web_scheme = "http";            // "https" under HTTPS_ONLY
  HostPort nm_webapp;                            // yarn.nodemanager.webapp.address (default 0.0.0.0:8042)
  // The RM web of each of rms, with scheme: yarn.resourcemanager.webapp[.https].address[.<id>]
  // (defaults <rm host>:8088 / :8090).
  std::vector<std::string> rm_web_urls;
  bool log_aggregation_enable = false;           // yarn.log-aggregation-enable
  std::string remote_app_log_dir;                // yarn.nodemanager.remote-app-log-dir ("/tmp/logs")
  std::string remote_app_log_dir_suffix;         // yarn.nodemanager.remote-app-log-dir-suffix ("logs")
  std::vector<std::string> log_aggregation_file_formats;  // yarn.log-aggregation.file-formats ("TFile")
  // Per file format ("TFile", "IFile"), where set: yarn.log-aggregation.<format>.remote-app-log-dir
  // and yarn.log-aggregation.<format>.remote-app-log-dir-suffix (they override the two above).
  std::map<std::string, std::string> log_aggregation_format_dirs;
  std::map<std::string, std::string> log_aggregation_format_suffixes;
  // The HTTPS trust (ssl-client.xml), read when a policy above is HTTPS_ONLY: the truststore
  // settings and its certificates as PEM ("" = the system CA store). Load fails, naming the
  // file and key, when the truststore cannot be read or opened, and otherwise makes the bundle
  // this process's HTTPS trust (curl_library.h SetHttpsTrust).
  TrustStoreSettings truststore;
  std::string https_trust_pem;
  // Reads the three files (missing files mean defaults; a malformed one is an error naming it),
  // then `extra` over them (a file named there must exist: FailedPrecondition naming it).
  // yarn.resourcemanager.hostname fills unset addresses, ${var} references are expanded.
  static Result<HadoopConf> Load(const std::string& conf_dir, const ExtraSiteFiles& extra = {});
  // From $HADOOP_CONF_DIR; FailedPrecondition when it is unset.
  static Result<HadoopConf> FromEnvironment();
};

// The NameNodes' WebHDFS base URLs, comma-separated, as WebHdfs and job records take them:
// namenode_web_urls (Load fills it), else, for a conf put together by hand, http:// on
// namenode_https, or on namenode_http alone.
std::string WebHdfsBaseList(const HadoopConf& conf);

}  // namespace loom::hadoop
