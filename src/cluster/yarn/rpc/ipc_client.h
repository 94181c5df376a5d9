#pragma once
// IpcClient: one Hadoop IPC (RPC v9) connection to one server and protocol, as Java's
// ipc.Client speaks it: preamble, SASL (SIMPLE, or TOKEN via DIGEST-MD5 with qop=auth), the
// connection context, then calls. Calls are thread-safe and may run concurrently on the one
// connection (responses are matched by call id). A connection the server closed (idle for
// 20 s, restarted) is reopened, with the handshake, on the next call.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <google/protobuf/message.h>

#include "cluster/yarn/wire/credentials.h"
#include "core/status.h"

namespace loom::cluster::yarn {

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
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds call_timeout{60000};
  // Close the connection after each call (what Java does towards NodeManagers).
  bool one_call_per_connection = false;
  // Tests only: fixed 16-byte client id and DIGEST cnonce, to compare with recorded bytes.
  std::string client_id_for_test;
  std::string cnonce_for_test;
};

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

}  // namespace loom::cluster::yarn
