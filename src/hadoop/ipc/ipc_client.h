#pragma once
// IpcClient: one Hadoop IPC (RPC v9) connection to one server and protocol, as Java's
// ipc.Client speaks it: preamble, SASL (SIMPLE, or TOKEN via DIGEST-MD5), the connection
// context, then calls. When SASL negotiates integrity or privacy (hadoop.rpc.protection), every
// frame after SASL SUCCESS, the context included, travels in callId -33 WRAP frames both ways. Calls are thread-safe and may run concurrently on the one
// connection (responses are matched by call id). A connection the server closed (idle for
// 20 s, restarted) is reopened, with the handshake, on the next call.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <google/protobuf/message.h>

#include "core/status.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/kerberos_login.h"

namespace loom::hadoop {

// Protocol names (the connection context's `protocol` and each call's declaring class).
inline constexpr char kClientProtocol[] = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB";
inline constexpr char kAmProtocol[] = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB";
inline constexpr char kNmProtocol[] = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB";

struct IpcOptions {
  std::string host;
  int port = 0;
  std::string protocol;  // one of the k*Protocol names
  // SIMPLE auth (preamble auth byte 0x00): the effective user named in the context.
  std::string user;
  // TOKEN auth (SASL DIGEST-MD5) when set; the context then carries an empty userInfo.
  std::optional<Token> token;
  // KERBEROS auth (SASL GSSAPI, sasl_gssapi.h) when set and there is no token; the context then
  // names the full principal. Unset: ProcessKerberos() for the protocols that have a server
  // principal key (the RM's client protocol), as Java's UGI login user.
  std::shared_ptr<const KerberosClientConf> kerberos;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds call_timeout{60000};
  // Close the connection after each call (what Java does towards NodeManagers).
  bool one_call_per_connection = false;
  // hadoop.rpc.protection for SASL TOKEN (DIGEST-MD5) connections: which qops this client
  // accepts (authentication, integrity, privacy, or a list). Empty: the process's
  // (SetProcessRpcProtection), else "authentication". With
  // integrity or privacy every frame after SASL travels wrapped (callId -33 WRAP, K4.9).
  std::string rpc_protection;
  // Tests only: fixed 16-byte client id and DIGEST cnonce, to compare with recorded bytes.
  std::string client_id_for_test;
  std::string cnonce_for_test;
};

// hadoop.rpc.protection for every IpcOptions that names none: what Java's SaslPropertiesResolver
// takes from the process's Configuration. The program sets it from the Hadoop configuration it
// reads (a YARN AM: its container's HADOOP_CONF_DIR); unset means "authentication".
void SetProcessRpcProtection(std::string rpc_protection);

// Call ids are per process, shared by all connections, as in Java.
int32_t NextCallId();
// Tests only: the next call id NextCallId() returns.
void SetNextCallIdForTest(int32_t id);

class IpcClient {
 public:
  explicit IpcClient(IpcOptions options);
  ~IpcClient();
  IpcClient(const IpcClient&) = delete;
  IpcClient& operator=(const IpcClient&) = delete;

  // Sends `request` as `method` and fills `response`. A remote exception comes back as the
  // Status of RemoteErrorStatus (class name and first message line); a connection failure as
  // kUnavailable naming host:port. Waits at most options.call_timeout.
  Status Call(const std::string& method, const google::protobuf::Message& request,
              google::protobuf::Message* response);
  // A new token (the RM rolls the AMRMToken) for the next (re)connection.
  void UpdateToken(const Token& token);
  // Closes the connection; pending calls fail. The next Call reconnects.
  void Close();
  std::string Describe() const;  // "host:port (protocol short name)"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::hadoop
