#include "hadoop/conf/hadoop_conf.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>


#include "core/config/site_xml.h"
#include "core/files.h"
#include "core/strings.h"

namespace loom::hadoop {
namespace {

constexpr char kDefaultSource[] = "Hadoop's default";

struct Value {
  std::string text;    // as written, before ${var} expansion
  std::string source;  // the file it came from, or kDefaultSource
};
using Props = std::map<std::string, Value>;

// The subset of core-default.xml, hdfs-default.xml and yarn-default.xml that Loom reads.
// They take part in ${var} expansion like in Hadoop, where the *-default.xml files are
// loaded first.
Props Defaults() {
  Props p;
  auto set = [&](const char* key, const char* value) { p[key] = {value, kDefaultSource}; };
  set("fs.defaultFS", "file:///");
  set("hadoop.security.authentication", "simple");
  set("hadoop.rpc.protection", "authentication");
  set("yarn.resourcemanager.hostname", "0.0.0.0");
  set("yarn.resourcemanager.address", "${yarn.resourcemanager.hostname}:8032");
  set("yarn.resourcemanager.scheduler.address", "${yarn.resourcemanager.hostname}:8030");
  set("yarn.resourcemanager.webapp.address", "${yarn.resourcemanager.hostname}:8088");
  set("dfs.namenode.http-address", "0.0.0.0:9870");
  set("dfs.namenode.https-address", "0.0.0.0:9871");
  set("dfs.http.policy", "HTTP_ONLY");
  set("yarn.http.policy", "HTTP_ONLY");
  set("yarn.resourcemanager.webapp.https.address", "${yarn.resourcemanager.hostname}:8090");
  set("yarn.nodemanager.webapp.https.address", "${yarn.nodemanager.hostname}:8044");
  set("hadoop.ssl.client.conf", "ssl-client.xml");
  set("yarn.nodemanager.hostname", "0.0.0.0");
  set("yarn.nodemanager.webapp.address", "${yarn.nodemanager.hostname}:8042");
  set("yarn.log-aggregation-enable", "false");
  set("yarn.nodemanager.remote-app-log-dir", "/tmp/logs");
  set("yarn.nodemanager.remote-app-log-dir-suffix", "logs");
  set("yarn.scheduler.minimum-allocation-mb", "1024");
  set("yarn.resourcemanager.connect.retry-interval.ms", "30000");
  set("yarn.resourcemanager.connect.max-wait.ms", "900000");
  set("yarn.resourcemanager.ha.enabled", "false");
  set("yarn.log-aggregation.file-formats", "TFile");
  return p;
}

// Merges one *-site.xml. A missing file is fine (Hadoop's defaults apply); an unreadable or
// malformed one is an error naming it, since silently ignoring it would send Loom to 0.0.0.0.
Status MergeSiteFile(const std::string& path, Props& props) {
  if (!PathExists(path)) return Status::Ok();
  LOOM_ASSIGN_OR_RETURN(std::vector<config::SiteProperty> properties, config::ReadSiteXmlFile(path));
  for (const config::SiteProperty& p : properties) props[p.name] = {p.value, path};
  return Status::Ok();
}

// Hadoop's defaults, then `files` in order over them (an empty path: none).
Result<Props> MergeSiteFiles(const std::vector<std::string>& files) {
  Props props = Defaults();
  for (const std::string& file : files) {
    if (!file.empty()) LOOM_RETURN_IF_ERROR(MergeSiteFile(file, props));
  }
  return props;
}

// Hadoop's substituteVars: ${key} is another property, ${env.NAME} an environment variable;
// an unresolvable reference stays as written. Hadoop stops after 20 rounds, which also
// catches cycles.
Result<std::string> Expand(const Props& props, const std::string& key) {
  auto it = props.find(key);
  if (it == props.end()) return std::string();
  std::string value = it->second.text;
  for (int round = 0; round < 20; ++round) {
    size_t search = 0, begin = std::string::npos, end = std::string::npos;
    std::string replacement;
    while ((begin = value.find("${", search)) != std::string::npos) {
      end = value.find('}', begin + 2);
      if (end == std::string::npos) return value;
      std::string var = value.substr(begin + 2, end - begin - 2);
      bool found = false;
      if (StartsWith(var, "env.")) {
        const char* env = std::getenv(var.c_str() + 4);
        if (env != nullptr) replacement = env, found = true;
      } else if (auto ref = props.find(var); ref != props.end()) {
        replacement = ref->second.text;
        found = true;
      }
      if (found) break;
      search = end + 1;
    }
    if (begin == std::string::npos) return value;
    value.replace(begin, end - begin + 1, replacement);
  }
  return Status::InvalidArgument(it->second.source + ": " + key +
                                 ": variable substitution depth too large (a ${...} cycle?)");
}

std::string SourceOf(const Props& props, const std::string& key) {
  auto it = props.find(key);
  return it == props.end() ? kDefaultSource : it->second.source;
}

Result<HostPort> HostPortOf(const Props& props, const std::string& key) {
  LOOM_ASSIGN_OR_RETURN(std::string value, Expand(props, key));
  Result<HostPort> hp = ParseHostPort(value);
  if (!hp.ok()) {
    return Status::InvalidArgument(SourceOf(props, key) + ": " + key + " = '" + value + "' is not host:port");
  }
  return hp;
}

// fs.defaultFS "hdfs://host[:port][/]" -> scheme, host, port (-1 when absent, as for an HA
// nameservice). Only hdfs:// can carry YARN's staged files.
Status ParseDefaultFs(const Props& props, HadoopConf& conf) {
  LOOM_ASSIGN_OR_RETURN(conf.default_fs, Expand(props, "fs.defaultFS"));
  const std::string& fs = conf.default_fs;
  size_t scheme_end = fs.find("://");
  conf.fs_scheme = scheme_end == std::string::npos ? "" : ToLower(fs.substr(0, scheme_end));
  if (conf.fs_scheme != "hdfs") {
    std::string where = SourceOf(props, "fs.defaultFS");
    if (where == kDefaultSource) where += " (no fs.defaultFS in " + conf.conf_dir + "/core-site.xml)";
    return Status::FailedPrecondition("YARN staging needs an hdfs:// defaultFS, but fs.defaultFS is '" +
                                      fs + "' from " + where);
  }
  std::string authority = fs.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find('/'));
  if (authority.empty()) {
    return Status::InvalidArgument(SourceOf(props, "fs.defaultFS") + ": fs.defaultFS = '" + fs +
                                   "' names no host");
  }
  size_t colon = authority.rfind(':');
  conf.fs_host = authority.substr(0, colon);
  conf.fs_port = -1;
  if (colon != std::string::npos) {
    Result<int64_t> port = ParseInt(authority.substr(colon + 1));
    if (!port.ok() || *port <= 0 || *port > 65535) {
      return Status::InvalidArgument(SourceOf(props, "fs.defaultFS") + ": fs.defaultFS = '" + fs +
                                     "' has a bad port");
    }
    conf.fs_port = static_cast<int>(*port);
  }
  return Status::Ok();
}

// HttpConfig.Policy.fromString: the names, any case. Java's YARN side takes an unknown value
// as "not HTTPS_ONLY" quietly; Loom refuses it on both sides rather than guess.
Result<HttpPolicy> PolicyOf(const Props& props, const std::string& key) {
  LOOM_ASSIGN_OR_RETURN(std::string value, Expand(props, key));
  std::string v = ToLower(Trim(value));
  if (v == "http_only") return HttpPolicy::kHttpOnly;
  if (v == "https_only") return HttpPolicy::kHttpsOnly;
  if (v == "http_and_https") return HttpPolicy::kHttpAndHttps;
  return Status::InvalidArgument(SourceOf(props, key) + ": " + key + " = '" + value +
                                 "' is not HTTP_ONLY, HTTPS_ONLY or HTTP_AND_HTTPS");
}

// "https://host:port", IPv6 hosts in brackets.
std::string WebUrl(const std::string& scheme, const HostPort& hp) {
  bool ipv6 = hp.host.find(':') != std::string::npos;
  return scheme + "://" + (ipv6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(hp.port);
}

// Hadoop's getTrimmedStringCollection: comma-separated, trimmed, empty entries dropped.
std::vector<std::string> TrimmedList(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& item : Split(text, ',')) {
    if (!Trim(item).empty()) out.push_back(Trim(item));
  }
  return out;
}

// dfs.namenode.http-address (https-address under HTTPS_ONLY). With an HA nameservice as the fs host (DFSUtil's
// dfs.nameservices / dfs.ha.namenodes.<ns>), the per-NameNode key of each NameNode listed, in
// order: WebHdfs tries them and skips a standby. A wildcard host means "the NameNode's own
// host", which a client knows from fs.defaultFS.
Result<std::vector<HostPort>> NameNodeHttps(const Props& props, const HadoopConf& conf) {
  std::string key = conf.dfs_http_policy == HttpPolicy::kHttpsOnly ? "dfs.namenode.https-address"
                                                                   : "dfs.namenode.http-address";
  std::vector<std::string> keys = {key};
  LOOM_ASSIGN_OR_RETURN(std::string nameservices, Expand(props, "dfs.nameservices"));
  for (const std::string& ns : TrimmedList(nameservices)) {
    if (ns != conf.fs_host) continue;
    LOOM_ASSIGN_OR_RETURN(std::string nns, Expand(props, "dfs.ha.namenodes." + ns));
    std::vector<std::string> ids = TrimmedList(nns);
    keys.clear();
    if (ids.empty()) keys.push_back(key + "." + ns);
    for (const std::string& id : ids) keys.push_back(key + "." + ns + "." + id);
    for (const std::string& ha_key : keys) {
      if (props.count(ha_key) == 0) {
        return Status::InvalidArgument("fs.defaultFS names the nameservice " + ns + " but " + ha_key +
                                       " is not set in " + conf.conf_dir + "/hdfs-site.xml");
      }
    }
  }
  std::vector<HostPort> out;
  for (const std::string& k : keys) {
    LOOM_ASSIGN_OR_RETURN(HostPort hp, HostPortOf(props, k));
    if (hp.host == "0.0.0.0") hp.host = conf.fs_host;
    out.push_back(hp);
  }
  return out;
}

// One RM service address of an HA id, as HAUtil.checkAndSetRMRPCAddress resolves it:
// <key>.<id>, else yarn.resourcemanager.hostname.<id>:<default port>, else an error naming both.
Result<HostPort> RmAddressOf(const Props& props, const std::string& key, const std::string& id, int default_port) {
  std::string id_key = key + "." + id;
  if (props.count(id_key) > 0) return HostPortOf(props, id_key);
  std::string host_key = "yarn.resourcemanager.hostname." + id;
  LOOM_ASSIGN_OR_RETURN(std::string host, Expand(props, host_key));
  if (Trim(host).empty()) {
    return Status::InvalidArgument("yarn.resourcemanager.ha.enabled is true but neither " + host_key + " nor " +
                                   id_key + " is set (HA needs one for each id of yarn.resourcemanager.ha.rm-ids)");
  }
  return HostPort{Trim(host), default_port};
}

// yarn.resourcemanager.ha.* and yarn.client.failover-*. Like Configuration.getBoolean,
// anything but "true" (any case) is false.
Status FillRmHa(const Props& props, HadoopConf& conf) {
  LOOM_ASSIGN_OR_RETURN(std::string enabled, Expand(props, "yarn.resourcemanager.ha.enabled"));
  conf.rm_ha_enabled = ToLower(Trim(enabled)) == "true";
  auto long_of = [&](const std::string& key, int64_t fallback) -> Result<int64_t> {
    LOOM_ASSIGN_OR_RETURN(std::string v, Expand(props, key));
    if (Trim(v).empty()) return fallback;
    Result<int64_t> n = ParseInt(Trim(v));
    if (!n.ok()) {
      return Status::InvalidArgument(SourceOf(props, key) + ": " + key + " = '" + v + "' is not an integer");
    }
    return *n;
  };
  LOOM_ASSIGN_OR_RETURN(int64_t max_wait, long_of("yarn.resourcemanager.connect.max-wait.ms", 900000));
  int64_t interval = conf.rm_connect_retry_interval_ms;
  LOOM_ASSIGN_OR_RETURN(conf.rm_failover_sleep_base_ms, long_of("yarn.client.failover-sleep-base-ms", interval));
  LOOM_ASSIGN_OR_RETURN(conf.rm_failover_sleep_max_ms, long_of("yarn.client.failover-sleep-max-ms", interval));
  if (conf.rm_failover_sleep_base_ms < 0 || conf.rm_failover_sleep_max_ms < 0) {
    return Status::InvalidArgument("yarn.client.failover-sleep-base-ms and -max-ms must not be negative");
  }
  LOOM_ASSIGN_OR_RETURN(int64_t max_attempts, long_of("yarn.client.failover-max-attempts", -1));
  if (max_attempts == -1) {
    // RMProxy: "try connect once" when the wait is shorter than the interval.
    if (max_wait != -1 && max_wait < interval) max_wait = 0;
    max_attempts = max_wait == -1 ? INT32_MAX
                   : conf.rm_failover_sleep_base_ms > 0 ? max_wait / conf.rm_failover_sleep_base_ms
                                                        : INT32_MAX;
  }
  conf.rm_failover_max_attempts = static_cast<int>(std::clamp<int64_t>(max_attempts, 0, INT32_MAX));

  conf.rm_ids.clear();
  conf.rms = {conf.rm};
  conf.schedulers = {conf.scheduler};
  conf.rm_webapps = {conf.rm_webapp};
  LOOM_ASSIGN_OR_RETURN(HostPort web, HostPortOf(props, conf.yarn_http_policy == HttpPolicy::kHttpsOnly
                                                            ? "yarn.resourcemanager.webapp.https.address"
                                                            : "yarn.resourcemanager.webapp.address"));
  conf.rm_web_urls = {WebUrl(conf.nm_web_scheme, web)};
  if (!conf.rm_ha_enabled) return Status::Ok();
  LOOM_ASSIGN_OR_RETURN(std::string ids, Expand(props, "yarn.resourcemanager.ha.rm-ids"));
  conf.rm_ids = TrimmedList(ids);
  if (conf.rm_ids.empty()) {
    return Status::InvalidArgument("yarn.resourcemanager.ha.enabled is true but yarn.resourcemanager.ha.rm-ids is " +
                                   std::string(ids.empty() ? "not set" : "empty") + " (in " + conf.conf_dir +
                                   "/yarn-site.xml)");
  }
  conf.rms.clear();
  conf.schedulers.clear();
  conf.rm_webapps.clear();
  conf.rm_web_urls.clear();
  for (const std::string& id : conf.rm_ids) {
    LOOM_ASSIGN_OR_RETURN(HostPort rm, RmAddressOf(props, "yarn.resourcemanager.address", id, 8032));
    LOOM_ASSIGN_OR_RETURN(HostPort sched, RmAddressOf(props, "yarn.resourcemanager.scheduler.address", id, 8030));
    LOOM_ASSIGN_OR_RETURN(HostPort web, RmAddressOf(props, "yarn.resourcemanager.webapp.address", id, 8088));
    conf.rms.push_back(rm);
    conf.schedulers.push_back(sched);
    conf.rm_webapps.push_back(web.ToString());
    if (conf.yarn_http_policy == HttpPolicy::kHttpsOnly) {
      LOOM_ASSIGN_OR_RETURN(web, RmAddressOf(props, "yarn.resourcemanager.webapp.https.address", id, 8090));
    }
    conf.rm_web_urls.push_back(WebUrl(conf.nm_web_scheme, web));
  }
  conf.rm = conf.rms.front();
  conf.scheduler = conf.schedulers.front();
  conf.rm_webapp = conf.rm_webapps.front();
  return Status::Ok();
}

// Log aggregation and the NodeManager web address. Like Hadoop's Configuration.getBoolean,
// anything but "true"/"false" (any case) leaves the default.
Status FillLogSettings(const Props& props, HadoopConf& conf) {
  LOOM_ASSIGN_OR_RETURN(conf.nm_webapp, HostPortOf(props, conf.yarn_http_policy == HttpPolicy::kHttpsOnly
                                                               ? "yarn.nodemanager.webapp.https.address"
                                                               : "yarn.nodemanager.webapp.address"));
  LOOM_ASSIGN_OR_RETURN(std::string enable, Expand(props, "yarn.log-aggregation-enable"));
  conf.log_aggregation_enable = ToLower(Trim(enable)) == "true";
  LOOM_ASSIGN_OR_RETURN(std::string min_mb, Expand(props, "yarn.scheduler.minimum-allocation-mb"));
  if (auto mb = ParseInt(Trim(min_mb)); mb.ok() && *mb > 0) conf.min_allocation_mb = *mb;
  LOOM_ASSIGN_OR_RETURN(std::string retry_ms, Expand(props, "yarn.resourcemanager.connect.retry-interval.ms"));
  if (auto ms = ParseInt(Trim(retry_ms)); ms.ok() && *ms >= 0) conf.rm_connect_retry_interval_ms = *ms;
  LOOM_ASSIGN_OR_RETURN(conf.remote_app_log_dir, Expand(props, "yarn.nodemanager.remote-app-log-dir"));
  LOOM_ASSIGN_OR_RETURN(conf.remote_app_log_dir_suffix, Expand(props, "yarn.nodemanager.remote-app-log-dir-suffix"));
  LOOM_ASSIGN_OR_RETURN(std::string formats, Expand(props, "yarn.log-aggregation.file-formats"));
  conf.log_aggregation_file_formats.clear();
  for (const std::string& f : Split(formats, ',')) {
    if (!Trim(f).empty()) conf.log_aggregation_file_formats.push_back(Trim(f));
  }
  const std::string prefix = "yarn.log-aggregation.";
  for (const auto& [key, value] : props) {
    if (!StartsWith(key, prefix)) continue;
    for (const auto& [suffix, target] :
         {std::pair<std::string, std::map<std::string, std::string>*>{".remote-app-log-dir", &conf.log_aggregation_format_dirs},
          {".remote-app-log-dir-suffix", &conf.log_aggregation_format_suffixes}}) {
      if (!EndsWith(key, suffix) || key.size() <= prefix.size() + suffix.size()) continue;
      std::string format = key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
      LOOM_ASSIGN_OR_RETURN(std::string v, Expand(props, key));
      if (!v.empty()) (*target)[format] = v;
    }
  }
  return Status::Ok();
}

Status Fill(const Props& props, HadoopConf& conf) {
  LOOM_RETURN_IF_ERROR(ParseDefaultFs(props, conf));
  LOOM_ASSIGN_OR_RETURN(conf.dfs_http_policy, PolicyOf(props, "dfs.http.policy"));
  LOOM_ASSIGN_OR_RETURN(conf.yarn_http_policy, PolicyOf(props, "yarn.http.policy"));
  conf.nm_web_scheme = conf.yarn_http_policy == HttpPolicy::kHttpsOnly ? "https" : "http";
  LOOM_ASSIGN_OR_RETURN(conf.rm, HostPortOf(props, "yarn.resourcemanager.address"));
  LOOM_ASSIGN_OR_RETURN(conf.scheduler, HostPortOf(props, "yarn.resourcemanager.scheduler.address"));
  LOOM_ASSIGN_OR_RETURN(HostPort webapp, HostPortOf(props, "yarn.resourcemanager.webapp.address"));
  conf.rm_webapp = webapp.ToString();
  LOOM_ASSIGN_OR_RETURN(conf.namenode_https, NameNodeHttps(props, conf));
  conf.namenode_http = conf.namenode_https.front();
  conf.namenode_web_urls.clear();
  for (const HostPort& nn : conf.namenode_https) {
    conf.namenode_web_urls.push_back(WebUrl(conf.dfs_http_policy == HttpPolicy::kHttpsOnly ? "https" : "http", nn));
  }
  LOOM_ASSIGN_OR_RETURN(conf.security, Expand(props, "hadoop.security.authentication"));
  conf.security = ToLower(conf.security);
  LOOM_ASSIGN_OR_RETURN(conf.rpc_protection, Expand(props, "hadoop.rpc.protection"));
  conf.rpc_protection = ToLower(conf.rpc_protection);
  LOOM_ASSIGN_OR_RETURN(conf.rm_principal, Expand(props, "yarn.resourcemanager.principal"));
  conf.rm_principal = Trim(conf.rm_principal);
  LOOM_ASSIGN_OR_RETURN(conf.nn_principal, Expand(props, "dfs.namenode.kerberos.principal"));
  conf.nn_principal = Trim(conf.nn_principal);
  LOOM_RETURN_IF_ERROR(FillLogSettings(props, conf));
  return FillRmHa(props, conf);
}

// SSLFactory's client configuration: hadoop.ssl.client.conf (from core-site) is a resource of
// its own, read apart from the site files; its ${var}s refer to its own properties.
Result<TrustStoreSettings> TrustStoreSettingsOf(const std::string& conf_dir, const Props& core) {
  LOOM_ASSIGN_OR_RETURN(std::string name, Expand(core, "hadoop.ssl.client.conf"));
  name = Trim(name);
  std::string path = StartsWith(name, "/") ? name : conf_dir + "/" + name;
  TrustStoreSettings settings;
  settings.source = path;
  if (!PathExists(path)) {
    if (SourceOf(core, "hadoop.ssl.client.conf") == kDefaultSource) return settings;
    return Status::FailedPrecondition(path + " does not exist (hadoop.ssl.client.conf in " +
                                      SourceOf(core, "hadoop.ssl.client.conf") + ")");
  }
  Props ssl;
  ssl["ssl.client.truststore.type"] = {"jks", kDefaultSource};
  LOOM_RETURN_IF_ERROR(MergeSiteFile(path, ssl));
  LOOM_ASSIGN_OR_RETURN(settings.location, Expand(ssl, "ssl.client.truststore.location"));
  LOOM_ASSIGN_OR_RETURN(settings.type, Expand(ssl, "ssl.client.truststore.type"));
  LOOM_ASSIGN_OR_RETURN(settings.password, Expand(ssl, "ssl.client.truststore.password"));
  settings.location = Trim(settings.location);
  return settings;
}

}  // namespace

Result<TrustStoreSettings> ReadTrustStoreSettings(const std::string& conf_dir) {
  Props core = Defaults();
  LOOM_RETURN_IF_ERROR(MergeSiteFile(conf_dir + "/core-site.xml", core));
  return TrustStoreSettingsOf(conf_dir, core);
}

std::string WebHdfsBaseList(const HadoopConf& conf) {
  if (!conf.namenode_web_urls.empty()) return Join(conf.namenode_web_urls, ",");
  std::vector<std::string> urls;
  for (const HostPort& nn : conf.namenode_https.empty() ? std::vector<HostPort>{conf.namenode_http}
                                                        : conf.namenode_https) {
    urls.push_back(WebUrl("http", nn));
  }
  return Join(urls, ",");
}

Result<SiteProperties> ReadSiteProperties(const std::vector<std::string>& files) {
  LOOM_ASSIGN_OR_RETURN(Props props, MergeSiteFiles(files));
  SiteProperties site;
  for (const auto& [name, value] : props) {
    if (value.source == kDefaultSource) continue;
    LOOM_ASSIGN_OR_RETURN(site[name], Expand(props, name));
  }
  return site;
}

Result<HadoopConf> HadoopConf::Load(const std::string& conf_dir, const ExtraSiteFiles& extra) {
  if (!IsDirectory(conf_dir)) {
    return Status::FailedPrecondition("Hadoop configuration directory " + conf_dir +
                                      " does not exist or is not a directory");
  }
  for (const std::string& file : {extra.hdfs_site, extra.yarn_site}) {
    if (!file.empty() && !PathExists(file)) return Status::FailedPrecondition(file + " does not exist");
  }
  // Same order as a Hadoop client: core first, then the HDFS and YARN layers over it, each
  // followed by the file named for its kind (as TonY adds it to its hdfs / yarn Configuration).
  LOOM_ASSIGN_OR_RETURN(Props props, MergeSiteFiles({conf_dir + "/core-site.xml", conf_dir + "/hdfs-site.xml",
                                                     extra.hdfs_site, conf_dir + "/yarn-site.xml", extra.yarn_site}));
  HadoopConf conf;
  conf.conf_dir = conf_dir;
  LOOM_RETURN_IF_ERROR(Fill(props, conf));
  // The truststore only matters to https; an HTTP-only cluster with a stale ssl-client.xml
  // keeps working, as a Java client only opens it for an https connection.
  if (conf.dfs_http_policy == HttpPolicy::kHttpsOnly || conf.yarn_http_policy == HttpPolicy::kHttpsOnly) {
    LOOM_ASSIGN_OR_RETURN(conf.truststore, TrustStoreSettingsOf(conf_dir, props));
    LOOM_ASSIGN_OR_RETURN(conf.https_trust_pem, LoadTrustStorePem(conf.truststore));
    SetHttpsTrust(conf.https_trust_pem);
  }
  return conf;
}

Result<HadoopConf> HadoopConf::FromEnvironment() {
  const char* dir = std::getenv("HADOOP_CONF_DIR");
  if (dir == nullptr || *dir == '\0') {
    return Status::FailedPrecondition(
        "HADOOP_CONF_DIR is not set: point it at the cluster's client configuration "
        "(core-site.xml, yarn-site.xml)");
  }
  return Load(dir);
}

Result<HostPort> ParseHostPort(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not host:port");
  }
  Result<int64_t> port = ParseInt(text.substr(colon + 1));
  if (!port.ok() || *port <= 0 || *port > 65535) {
    return Status::InvalidArgument("'" + std::string(text) + "' is not host:port (bad port)");
  }
  return HostPort{std::string(text.substr(0, colon)), static_cast<int>(*port)};
}

Result<std::vector<HostPort>> ParseHostPortList(std::string_view text) {
  std::vector<HostPort> out;
  for (const std::string& item : Split(text, ',')) {
    if (Trim(item).empty()) continue;
    LOOM_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(Trim(item)));
    out.push_back(hp);
  }
  if (out.empty()) return Status::InvalidArgument("'" + std::string(text) + "' names no host:port");
  return out;
}

std::string HostPortListString(const std::vector<HostPort>& list) {
  std::string out;
  for (const HostPort& hp : list) out += (out.empty() ? "" : ",") + hp.ToString();
  return out;
}

}  // namespace loom::hadoop
