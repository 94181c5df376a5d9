#pragma once
// NameNodeRpc: the HDFS NameNode's RPC port (ClientProtocol, "org.apache.hadoop.hdfs.protocol.
// ClientProtocol") for the YARN TEST DOUBLE, delegation tokens only, as a Kerberized Hadoop
// 3.3.6 NameNode serves them (kerberos/ rpc/02, rpc/05, K5.4-K5.5):
//   SASL: TOKEN (HDFS delegation tokens this store minted) and KERBEROS (the NameNode's
//   principal, e.g. nn/localhost@LOOM.TEST); SIMPLE is never offered.
//   getDelegationToken     Kerberos callers only; owner = the full authenticated principal,
//                          renewer stored short, the answer's service "" (the client sets it).
//   renewDelegationToken   Kerberos callers only; only the token's renewer (DelegationTokenStore).
//   cancelDelegationToken  the owner or the renewer.
// Every other method is ERROR RpcNoSuchMethodException: the double stores files over WebHDFS
// (fake_hdfs.h) only.
//
// Thread-safe (the store is; each connection has its own thread).

#include <memory>
#include <string>

#include "core/status.h"
#include "delegation_token_store.h"
#include "ipc_server_names.h"

namespace loom::yarn_double {

inline constexpr char kNameNodeClientProtocol[] = "org.apache.hadoop.hdfs.protocol.ClientProtocol";

struct NameNodeRpcOptions {
  std::string kerberos_principal;  // "nn/localhost@LOOM.TEST"; required
  std::string kerberos_keytab;     // holds its key; required
  std::string rpc_protection = "authentication";  // hadoop.rpc.protection (both mechanisms)
  DelegationTokenStore* tokens = nullptr;          // required; outlives the server
  std::string bind_ip = "127.0.0.1";
  int idle_close_ms = 0;
};

class NameNodeRpc {
 public:
  explicit NameNodeRpc(NameNodeRpcOptions options);
  ~NameNodeRpc();
  NameNodeRpc(const NameNodeRpc&) = delete;
  NameNodeRpc& operator=(const NameNodeRpc&) = delete;

  // Listens on an ephemeral port. InvalidArgument without a principal, keytab or store;
  // FailedPrecondition when the keytab lacks the principal's key.
  Status Start();
  void Stop();  // idempotent
  int port() const;

 private:
  CallResult Handle(const std::string& method, std::string_view request, const ConnectionInfo& conn);

  NameNodeRpcOptions options_;
  std::unique_ptr<IpcServer> server_;
};

}  // namespace loom::yarn_double
