#include "hadoop/ipc/namenode_client.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "core/files.h"
#include "core/host_resolver.h"
#include "core/strings.h"
#include "hadoop/ipc/rm_failover.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/wire/sasl_gssapi.h"

namespace loom::hadoop {

namespace hc = ::hadoop::common;

namespace {

std::string Get(const SiteProperties& site, const std::string& key) {
  auto it = site.find(key);
  return it == site.end() ? std::string() : Trim(it->second);
}

std::vector<std::string> ListOf(const std::string& value) {
  std::vector<std::string> out;
  for (const std::string& part : Split(value, ',')) {
    if (!Trim(part).empty()) out.push_back(Trim(part));
  }
  return out;
}

hc::TokenProto ToProto(const Token& t) {
  hc::TokenProto p;
  p.set_identifier(t.identifier);
  p.set_password(t.password);
  p.set_kind(t.kind);
  p.set_service(t.service);
  return p;
}

// Whether the next NameNode of an HA pair may have the answer: this one is standby or gone.
bool TryNext(const Status& s) {
  return FailoverPolicy::IsStandby(s) || s.code() == StatusCode::kUnavailable ||
         s.code() == StatusCode::kDeadlineExceeded;
}

}  // namespace

Result<SiteProperties> LoadHdfsSiteProperties(const std::string& conf_dir, const std::string& extra_hdfs_site) {
  return ReadSiteProperties({conf_dir + "/core-site.xml", conf_dir + "/hdfs-site.xml", extra_hdfs_site});
}

Result<std::string> BuildTokenService(const HostPort& address, bool use_ip) {
  if (!use_ip) return ToLower(address.host) + ":" + std::to_string(address.port);
  if (Result<std::string> ip = ResolveHostToIp(address.host); ip.ok()) return *ip + ":" + std::to_string(address.port);
  return Status::InvalidArgument("cannot resolve " + address.host +
                                 " for the token's service (hadoop.security.token.service.use_ip is true)");
}

Result<HdfsFileSystem> ResolveHdfsFileSystem(std::string_view uri_text, const SiteProperties& site) {
  std::string uri(Trim(std::string(uri_text)));
  const std::string scheme = "hdfs://";
  if (!StartsWith(ToLower(uri), scheme) || uri.size() == scheme.size()) {
    return Status::InvalidArgument("'" + uri + "' is not an hdfs:// URI (hdfs://<nameservice> or hdfs://<host>[:<port>])");
  }
  std::string authority = uri.substr(scheme.size());
  authority = authority.substr(0, authority.find('/'));
  if (size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  std::string host = authority;
  int port = -1;
  if (size_t colon = authority.rfind(':'); colon != std::string::npos && authority.find(']') == std::string::npos) {
    host = authority.substr(0, colon);
    LOOM_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(authority));
    port = hp.port;
  }
  if (host.empty()) return Status::InvalidArgument("'" + uri + "' names no host");
  HdfsFileSystem fs;
  fs.uri = uri;
  std::string use_ip_text = ToLower(Get(site, "hadoop.security.token.service.use_ip"));
  const bool use_ip = use_ip_text != "false";

  std::vector<std::string> nameservices = ListOf(Get(site, "dfs.nameservices"));
  bool is_nameservice = port < 0 && std::find(nameservices.begin(), nameservices.end(), host) != nameservices.end();
  std::vector<std::string> nn_ids = ListOf(Get(site, "dfs.ha.namenodes." + host));
  if (is_nameservice && !nn_ids.empty()) {
    // A logical URI: every NameNode of the nameservice, one token for all of them.
    for (const std::string& nn : nn_ids) {
      std::string key = "dfs.namenode.rpc-address." + host + "." + nn;
      std::string value = Get(site, key);
      if (value.empty()) {
        return Status::InvalidArgument(uri + " is the HA nameservice " + host + " (dfs.ha.namenodes." + host + "=" +
                                       Join(nn_ids, ",") + ") but " + key + " is not set");
      }
      auto hp = ParseHostPort(value);
      if (!hp.ok()) return Status::InvalidArgument(key + "=" + value + ": " + hp.status().message());
      fs.namenodes.push_back(*hp);
    }
    fs.token_service = std::string(kHaTokenServicePrefix) + "hdfs:" + host;
    return fs;
  }
  HostPort address{host, port > 0 ? port : kDefaultNameNodeRpcPort};
  if (is_nameservice) {
    std::string key = "dfs.namenode.rpc-address." + host;
    std::string value = Get(site, key);
    if (value.empty()) {
      return Status::InvalidArgument(uri + " is the nameservice " + host + " but neither dfs.ha.namenodes." + host +
                                     " nor " + key + " is set");
    }
    auto hp = ParseHostPort(value);
    if (!hp.ok()) return Status::InvalidArgument(key + "=" + value + ": " + hp.status().message());
    address = *hp;
  }
  fs.namenodes.push_back(address);
  auto service = BuildTokenService(address, use_ip);
  if (!service.ok()) return service.status().WithContext(uri);
  fs.token_service = *service;
  return fs;
}

std::string RenewerPrincipal(const std::string& rm_principal, const std::string& rm_host) {
  std::string host = rm_host;
  if (host.empty() || host == "0.0.0.0") {
    char name[256] = {};
    host = ::gethostname(name, sizeof name - 1) == 0 ? CanonicalHostName(name) : "localhost";
  } else {
    host = ServicePrincipalHost(host);
  }
  return ExpandHostInPrincipal(rm_principal, host);
}

NameNodeClient::NameNodeClient(HdfsFileSystem fs, IpcOptions base) : fs_(std::move(fs)), base_(std::move(base)) {
  base_.protocol = kNameNodeProtocol;
}

Status NameNodeClient::CallActive(const std::string& method, const google::protobuf::Message& request,
                                  google::protobuf::Message* response) {
  if (fs_.namenodes.empty()) return Status::InvalidArgument(fs_.uri + " has no NameNode");
  std::vector<std::string> answers;
  Status last = Status::Ok();
  for (const HostPort& nn : fs_.namenodes) {
    IpcOptions o = base_;
    o.host = nn.host;
    o.port = nn.port;
    IpcClient client(o);
    last = client.Call(method, request, response);
    if (last.ok()) return last;
    answers.push_back(nn.ToString() + ": " + last.message());
    if (!TryNext(last)) break;
  }
  return Status(last.code(), method + " on " + fs_.uri + ": " + Join(answers, "; "));
}

Result<Token> NameNodeClient::GetDelegationToken(const std::string& renewer) {
  hc::GetDelegationTokenRequestProto request;
  request.set_renewer(renewer);
  hc::GetDelegationTokenResponseProto response;
  LOOM_RETURN_IF_ERROR(CallActive("getDelegationToken", request, &response));
  // A NameNode without security answers with no token at all (Java's DFSClient returns null).
  if (!response.has_token() || response.token().identifier().empty()) {
    return Status::FailedPrecondition(fs_.uri + " gave no delegation token (is the NameNode's security on?)");
  }
  Token t{response.token().identifier(), response.token().password(), response.token().kind(), fs_.token_service};
  return t;
}

Result<int64_t> NameNodeClient::RenewDelegationToken(const Token& token) {
  hc::RenewDelegationTokenRequestProto request;
  *request.mutable_token() = ToProto(token);
  hc::RenewDelegationTokenResponseProto response;
  LOOM_RETURN_IF_ERROR(CallActive("renewDelegationToken", request, &response));
  return static_cast<int64_t>(response.newexpirytime());
}

Status NameNodeClient::CancelDelegationToken(const Token& token) {
  hc::CancelDelegationTokenRequestProto request;
  *request.mutable_token() = ToProto(token);
  hc::CancelDelegationTokenResponseProto response;
  return CallActive("cancelDelegationToken", request, &response);
}

}  // namespace loom::hadoop
