#include "cluster/yarn/client_security.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "core/config/key_registry.h"
#include "core/strings.h"
#include "hadoop/wire/kerberos_login.h"

namespace loom::cluster::yarn {
namespace {

// A Kerberos key's value (`value` of `key`), or else the value of TonY's name for it
// (`tony_value` of `tony_key`) when that is not tony-default.xml's placeholder; `written` gets
// the key as the user wrote it.
std::string KerberosKey(const config::Config& conf, const std::string& key, const std::string& value,
                        const std::string& tony_key, const std::string& tony_value, const std::string& placeholder,
                        std::string* written) {
  *written = config::Spelled(conf, key);
  if (!Trim(value).empty()) return Trim(value);
  if (Trim(tony_value).empty() || Trim(tony_value) == placeholder) return "";
  *written = config::Spelled(conf, tony_key);
  return Trim(tony_value);
}

// hadoop.security.authentication=kerberos: logs in (kinit's ticket cache, or the job's keytab)
// before anything is asked or staged, and makes this process's ResourceManager connections
// authenticate with SASL GSSAPI. InvalidArgument (exit 2): no or expired ticket, a keytab that
// does not exist, keytab keys on a cluster without Kerberos. Returns the logged-in principal
// ("alice@REALM"), or "" on a cluster without Kerberos.
}  // namespace

Result<std::string> LoginForCluster(const hadoop::HadoopConf& conf, const config::Config& job_conf) {
  hadoop::KerberosLoginOptions o;
  o.keytab = KerberosKey(job_conf, "loom.kerberos.keytab", config::GetString(job_conf, "loom.kerberos.keytab"),
                         "loom.keytab.location", config::GetString(job_conf, "loom.keytab.location"),
                         "/location/to/tony.keytab", &o.keytab_key);
  o.principal = KerberosKey(job_conf, "loom.kerberos.principal", config::GetString(job_conf, "loom.kerberos.principal"),
                            "loom.keytab.user", config::GetString(job_conf, "loom.keytab.user"), "user1",
                            &o.principal_key);
  if (conf.security != "kerberos") {
    hadoop::SetProcessKerberos(nullptr);
    if (o.keytab.empty() && o.principal.empty()) return std::string();
    return Status::InvalidArgument((o.keytab.empty() ? o.principal_key + "=" + o.principal : o.keytab_key + "=" + o.keytab) +
                                   ": the cluster does not use Kerberos (hadoop.security.authentication=" + conf.security +
                                   " in " + conf.conf_dir + "); remove the key");
  }
  if (!config::GetBool(job_conf, "loom.application.security.enabled")) {
    return Status::InvalidArgument(config::Spelled(job_conf, "loom.application.security.enabled") +
                                   "=false, but the cluster uses Kerberos (hadoop.security.authentication=kerberos in " +
                                   conf.conf_dir + "): its ResourceManager and NameNodes accept no other login; "
                                   "remove the key");
  }
  LOOM_ASSIGN_OR_RETURN(std::shared_ptr<hadoop::KerberosLogin> login, hadoop::KerberosLogin::Acquire(o));
  std::string principal = login->principal();
  auto kerberos = std::make_shared<hadoop::KerberosClientConf>();
  kerberos->login = std::move(login);
  kerberos->rpc_protection = conf.rpc_protection;
  kerberos->rm_principal = conf.rm_principal;
  kerberos->nn_principal = conf.nn_principal;
  hadoop::SetProcessKerberos(std::move(kerberos));
  return principal;
}


std::string KerberosShortName(const std::string& principal) {
  return principal.substr(0, principal.find_first_of("/@"));
}

Result<std::vector<TokenFileSystem>> TokenFileSystems(const hadoop::HadoopConf& conf, const config::Config& job_conf) {
  std::vector<TokenFileSystem> listed;
  auto add = [&](const std::vector<std::string>& uris, const std::string& key) {
    for (const std::string& uri : uris) {
      if (!Trim(uri).empty()) listed.push_back({Trim(uri), config::Spelled(job_conf, key)});
    }
  };
  add(config::GetList(job_conf, "loom.application.file-systems"), "loom.application.file-systems");
  add(config::GetList(job_conf, "loom.other.namenodes"), "loom.other.namenodes");  // TonY's name
  if (conf.security != "kerberos") {
    if (listed.empty()) return std::vector<TokenFileSystem>{};
    return Status::InvalidArgument(listed[0].key + "=" + listed[0].uri +
                                   ": HDFS delegation tokens are for a Kerberized cluster, and this one does not use "
                                   "Kerberos (hadoop.security.authentication=" + conf.security + " in " + conf.conf_dir +
                                   "): remove the key");
  }
  for (const TokenFileSystem& fs : listed) {
    if (!StartsWith(ToLower(fs.uri), "hdfs://") || fs.uri.size() <= 7) {
      return Status::InvalidArgument(fs.key + "=" + fs.uri + ": not an hdfs:// URI (hdfs://<nameservice> or " +
                                     "hdfs://<namenode host>[:<port>]); delegation tokens come from NameNodes");
    }
  }
  std::vector<TokenFileSystem> out;
  if (!conf.default_fs.empty()) out.push_back({conf.default_fs, "fs.defaultFS"});
  for (const TokenFileSystem& fs : listed) {
    bool seen = false;
    for (const TokenFileSystem& o : out) seen = seen || o.uri == fs.uri;
    if (!seen) out.push_back(fs);
  }
  return out;
}

Result<std::vector<FetchedToken>> FetchHdfsDelegationTokens(const std::vector<TokenFileSystem>& systems,
                                                            const hadoop::SiteProperties& site, const hadoop::IpcOptions& base,
                                                            const std::string& renewer) {
  std::vector<FetchedToken> fetched;
  auto fail = [&](Status s) {
    CancelDelegationTokens(fetched, base);  // none may outlive a submission that failed
    return s;
  };
  std::vector<std::string> services;
  for (const TokenFileSystem& fs : systems) {
    auto resolved = hadoop::ResolveHdfsFileSystem(fs.uri, site);
    if (!resolved.ok()) return fail(Status::InvalidArgument(fs.key + "=" + fs.uri + ": " + resolved.status().message()));
    if (std::find(services.begin(), services.end(), resolved->token_service) != services.end()) continue;
    hadoop::NameNodeClient nn(*resolved, base);
    auto token = nn.GetDelegationToken(renewer);
    if (!token.ok()) {
      std::string what = "getting an HDFS delegation token for " + fs.uri + " (" + fs.key + ", renewer " + renewer +
                         "): " + token.status().message();
      // A NameNode that does not answer is the cluster's state, not the user's mistake: it may
      // be tried again (exit 1, as an unreachable ResourceManager), unlike a refusal (exit 2).
      StatusCode code = token.status().code();
      bool unreachable = code == StatusCode::kUnavailable || code == StatusCode::kDeadlineExceeded;
      return fail(unreachable ? Status(code, what) : Status::InvalidArgument(what));
    }
    services.push_back(token->service);
    fetched.push_back({*token, *resolved});
  }
  return fetched;
}

int CancelDelegationTokens(const std::vector<FetchedToken>& tokens, const hadoop::IpcOptions& base) {
  int cancelled = 0;
  for (const FetchedToken& t : tokens) {
    Status s = hadoop::NameNodeClient(t.fs, base).CancelDelegationToken(t.token);
    if (s.ok()) {
      ++cancelled;
    } else {
      spdlog::warn("cancelling the HDFS delegation token for {} (it expires by itself): {}", t.fs.uri, s.ToString());
    }
  }
  return cancelled;
}

}  // namespace loom::cluster::yarn
