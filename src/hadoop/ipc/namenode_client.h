#pragma once
// NameNodeClient: the HDFS NameNode's ClientProtocol ("org.apache.hadoop.hdfs.protocol.
// ClientProtocol", version 1) for delegation tokens only: getDelegationToken as `hdfs fetchdt`
// and DFSClient call it (yarn-captures kerberos/rpc/02), renewDelegationToken and
// cancelDelegationToken as the RM's DelegationTokenRenewer calls them (rpc/05).
//
// Authentication is IpcClient's: with hadoop.security.authentication=kerberos (ProcessKerberos()
// set) every connection speaks SASL GSSAPI to dfs.namenode.kerberos.principal, which is the only
// way a NameNode issues a token; otherwise SIMPLE (the NameNode then refuses, saying why).
//
// Which NameNodes, and the token's service, follow DFSClient (DFSUtilClient / HAUtilClient):
// ResolveHdfsFileSystem below. Thread-compatible: one NameNodeClient per thread.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "hadoop/conf/hadoop_conf.h"
#include "hadoop/ipc/ipc_client.h"
#include "hadoop/wire/credentials.h"

namespace loom::hadoop {

inline constexpr char kNameNodeProtocol[] = "org.apache.hadoop.hdfs.protocol.ClientProtocol";
// dfs.namenode.rpc-port's default (HdfsClientConfigKeys.DFS_NAMENODE_RPC_PORT_DEFAULT).
inline constexpr int kDefaultNameNodeRpcPort = 8020;
// HAUtilClient's prefix of a logical URI's token service: "ha-" + scheme + ":" + nameservice.
inline constexpr char kHaTokenServicePrefix[] = "ha-";

// `conf_dir`'s core-site.xml and hdfs-site.xml, then `extra_hdfs_site` (loom.application.
// hdfs-conf-path; empty: none) over them (ReadSiteProperties: the reader and expansion of
// HadoopConf). A missing file adds nothing; a malformed one is InvalidArgument naming it.
Result<SiteProperties> LoadHdfsSiteProperties(const std::string& conf_dir, const std::string& extra_hdfs_site = "");

// One hdfs:// file system as DFSClient reaches it.
struct HdfsFileSystem {
  std::string uri;                  // as the user wrote it: "hdfs://ns1", "hdfs://nn1:8020/data"
  std::vector<HostPort> namenodes;  // RPC addresses, tried in order (several for HA)
  // The token's service, which is also its alias in the credentials (the NameNode answers
  // with an empty one: K5.5). A logical HA URI: "ha-hdfs:<nameservice>"; otherwise
  // SecurityUtil.buildTokenService of host:port (BuildTokenService).
  std::string token_service;
};

// `uri` must be hdfs://host[:port][/path] (InvalidArgument otherwise). A host that is one of
// dfs.nameservices with dfs.ha.namenodes.<ns> is logical (HAUtilClient.isLogicalUri): every
// dfs.namenode.rpc-address.<ns>.<nn> in that order, each required (InvalidArgument naming the
// missing key). A nameservice without HA: dfs.namenode.rpc-address.<ns>. Any other host is
// the NameNode itself, on port 8020 when the URI has none. hadoop.security.token.service.use_ip
// (default true) picks the service's form.
Result<HdfsFileSystem> ResolveHdfsFileSystem(std::string_view uri, const SiteProperties& site);

// SecurityUtil.buildTokenService: "<ip>:<port>" with the address `address.host` resolves to
// (IPv4 first, as JVMs with java.net.preferIPv4Stack do), or with `use_ip` false the host name
// lowercased. InvalidArgument when the host does not resolve (Java throws the same way).
Result<std::string> BuildTokenService(const HostPort& address, bool use_ip = true);

// The delegation tokens' renewer, as Hadoop's Master.getMasterPrincipal: yarn.resourcemanager.
// principal with `_HOST` replaced by the RM's host name (an IP address reverse-resolved, as
// InetSocketAddress.getHostName does; 0.0.0.0 or empty: this machine's name), lowercased.
std::string RenewerPrincipal(const std::string& rm_principal, const std::string& rm_host);

class NameNodeClient {
 public:
  // `base` holds what every connection shares (the SIMPLE user, timeouts, tests' client id);
  // host, port and protocol are set per NameNode.
  NameNodeClient(HdfsFileSystem fs, IpcOptions base);

  // A new HDFS_DELEGATION_TOKEN for `renewer` (a principal: the NameNode stores its short
  // name), its service set to fs.token_service. NameNodes are asked in order; a
  // StandbyException or an unreachable one moves on to the next. The error names the file
  // system and each NameNode's answer (the NameNode's own words for a refusal, e.g. "Delegation
  // Token can be issued only with kerberos or web authentication").
  Result<Token> GetDelegationToken(const std::string& renewer);
  // The token's new expiry (ms since the epoch). Only its renewer may (webhdfs/07).
  Result<int64_t> RenewDelegationToken(const Token& token);
  // Its owner or renewer may.
  Status CancelDelegationToken(const Token& token);

  const HdfsFileSystem& file_system() const { return fs_; }

 private:
  Status CallActive(const std::string& method, const google::protobuf::Message& request,
                    google::protobuf::Message* response);

  HdfsFileSystem fs_;
  IpcOptions base_;
};

}  // namespace loom::hadoop
