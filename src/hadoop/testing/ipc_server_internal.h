#pragma once
// What ipc_server.cc (the listener, a connection's socket I/O and framing, its calls) and
// ipc_server_sasl.cc (a connection's set-up: preamble, SASL TOKEN/DIGEST-MD5, KERBEROS/GSSAPI
// or SIMPLE, and the connection context) share: the Session each connection runs, and the
// exceptions both send. Not for other files.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "hadoop/proto/hadoop_rpc.pb.h"
#include "hadoop/testing/gss_acceptor.h"
#include "hadoop/testing/ipc_server.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop::testing::ipc_internal {

using ::hadoop::common::IpcConnectionContextProto;
using ::hadoop::common::RequestHeaderProto;
using ::hadoop::common::RpcRequestHeaderProto;
using ::hadoop::common::RpcResponseHeaderProto;
using ::hadoop::common::RpcSaslProto;

inline constexpr char kAccessControlException[] = "org.apache.hadoop.security.AccessControlException";
inline constexpr char kSaslException[] = "javax.security.sasl.SaslException";
inline constexpr char kInvalidToken[] = "org.apache.hadoop.security.token.SecretManager$InvalidToken";
// Not in the recordings: the class Hadoop's Server uses for malformed IPC input.
inline constexpr char kIpcException[] = "org.apache.hadoop.ipc.IpcException";

inline RpcError Fatal(std::string cls, std::string msg, ErrorCode detail = RpcResponseHeaderProto::FATAL_UNAUTHORIZED) {
  return RpcError{std::move(cls), std::move(msg), detail, true};
}

// One connection, from preamble to close. Runs on its own thread, plus one per delayed reply.
class Session {
 public:
  // `shut` shuts the connection both ways and counts it in IpcServer::closes() (once);
  // `delayed_written` counts the delayed replies written (IpcServer::delayed_replies()).
  Session(int fd, int index, const IpcServerOptions& options, std::atomic<bool>* stopping, std::function<void()> shut,
          std::atomic<int>* delayed_written)
      : fd_(fd), options_(options), stopping_(stopping), delayed_written_(delayed_written), shut_(std::move(shut)) {
    info_.index = index;
    Result<std::vector<std::string>> qops = hadoop::QopsFromRpcProtection(options.rpc_protection);
    qops_ = qops.ok() ? *qops : std::vector<std::string>{"auth"};  // Start() has refused a bad value
  }

  // Serves the connection until it ends; returns once the delayed replies are written too.
  void Run();

 private:
  // ---- socket I/O (ipc_server.cc) ------------------------------------------------------------

  std::string PeerIp() const;
  bool ReadExact(char* buf, size_t n);
  std::optional<std::string> ReadFrame();
  std::optional<std::string> ReadPlainFrame();
  std::nullopt_t Drop(const std::string& why);
  void SendAll(const std::string& bytes);  // callers hold write_mu_
  void SendResponse(const RpcResponseHeaderProto& header, const std::string* body);
  static RpcResponseHeaderProto Header(int32_t call_id, RpcResponseHeaderProto::RpcStatusProto status,
                                       const std::string& client_id, int32_t retry);
  void SendSuccess(int32_t call_id, const std::string& client_id, int32_t retry, const std::string& body);
  void SendError(int32_t call_id, const std::string& client_id, int32_t retry, const RpcError& e);
  void CloseGracefully();

  // ---- connection set-up (ipc_server_sasl.cc) ------------------------------------------------

  bool kerberos() const { return !options_.kerberos_principal.empty(); }
  // A Kerberized Hadoop server never offers SIMPLE, on any port (K5.4).
  bool simple_allowed() const { return options_.allow_simple && !kerberos(); }
  bool token_allowed() const { return options_.token_auth; }
  std::string AvailableMethods() const;

  bool Handshake();
  bool Sasl();
  std::optional<RpcSaslProto> ReadSaslResponse();
  bool AcceptGssapi(const std::string& first_token);
  bool VerifyDigest(const std::string& client_token, const std::string& nonce);
  static RpcSaslProto::SaslAuth TokenAuth();
  RpcSaslProto::SaslAuth KerberosAuth() const;
  static RpcSaslProto::SaslAuth SimpleAuth();
  RpcSaslProto NegotiateReply(const std::string& nonce) const;
  // SASL replies: callId -33, empty clientId, retryCount -1.
  void SendSaslReply(const RpcSaslProto& msg) { SendSuccess(hadoop::kSaslCallId, "", -1, msg.SerializeAsString()); }
  void SendSaslFailure(const RpcError& e) { SendError(hadoop::kSaslCallId, "", -1, e); }
  bool ReadContext();

  // ---- calls (ipc_server.cc) -----------------------------------------------------------------

  bool HandleFrame(const std::string& frame);
  // Writes a handler's reply for `call_id`; false: the connection is over.
  bool Reply(int32_t call_id, const std::string& client_id, int32_t retry, const CallReply& reply);
  // The set-up's outcome to options_.on_setup.
  void ReportSetup(bool ok);

  int fd_;
  const IpcServerOptions& options_;
  std::atomic<bool>* stopping_;
  std::atomic<int>* delayed_written_;
  ConnectionInfo info_;
  std::vector<std::string> qops_;                   // what the DIGEST challenge offers
  std::unique_ptr<GssAcceptor> acceptor_;           // KERBEROS: the GSSAPI context (before layer_)
  std::unique_ptr<hadoop::SaslSecurityLayer> layer_;  // after SUCCESS with auth-int/auth-conf
  std::string plain_;                               // unwrapped bytes not yet a whole frame
  std::function<void()> shut_;
  std::string refusal_;                             // the last FATAL's message, for on_setup
  // Replies are written by the connection's thread and by delayed replies' threads: one frame
  // (and its WRAP, which numbers the tokens) at a time.
  std::mutex write_mu_;
  std::vector<std::thread> delayed_;                // only the connection's thread touches it
};

}  // namespace loom::hadoop::testing::ipc_internal
