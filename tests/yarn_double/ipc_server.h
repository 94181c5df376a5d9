#pragma once
// The server side of Hadoop IPC (RPC version 9) for the YARN test double: preamble, SASL
// (TOKEN/DIGEST-MD5, KERBEROS/GSSAPI with a service keytab (gss_acceptor.h, K4), and SIMPLE
// where a port allows it), the connection context, and calls of
// the protobuf engine. Replies follow the recorded Hadoop 3.3.6 bytes
// (tests/data/yarn-captures): uint32 call ids, serverIpcVersionNum 9, echoed clientId and
// retryCount, FATAL for authentication failures (then the connection is closed), ERROR for
// application errors (the connection stays open). The owner supplies token passwords and the
// call handler; this file knows nothing about YARN.

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <variant>

#include "core/status.h"
#include "hadoop/proto/hadoop_rpc.pb.h"

namespace loom::yarn_double {

using ErrorCode = ::hadoop::common::RpcResponseHeaderProto::RpcErrorCodeProto;

// A Java exception as the IPC layer sends it: errorMsg is the message, and for application
// errors the server's stack trace after it ("\n\tat ...").
struct RpcError {
  std::string exception_class;
  std::string message;
  ErrorCode detail = ::hadoop::common::RpcResponseHeaderProto::ERROR_APPLICATION;
  bool fatal = false;  // FATAL: the server closes the connection after the reply
};

// Who is on the other end of a connection, once set up.
struct ConnectionInfo {
  std::string peer_ip;
  std::string protocol;          // from the connection context
  bool token_auth = false;       // SASL TOKEN (DIGEST-MD5) rather than SIMPLE
  // SASL KERBEROS (GSSAPI): the authenticated client principal, "root@LOOM.TEST"; empty otherwise.
  std::string kerberos_principal;
  // SIMPLE: effectiveUser; TOKEN: the user the token names; KERBEROS: the full principal (the
  // connection context's effectiveUser must be that principal, K4.11).
  std::string user;
  std::string token_identifier;  // TOKEN: the verified identifier bytes
};

// A serialized response message, or the exception to reply with.
using CallResult = std::variant<std::string, RpcError>;
using PasswordLookup = std::variant<std::string, RpcError>;

struct IpcServerOptions {
  std::string name;      // for diagnostics: "rm", "scheduler", "nm"
  std::string protocol;  // the protocol served, e.g. org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB
  // The loopback address to listen on: each of several NodeManagers has its own
  // (127.0.0.2, ...), so that their NodeIds name different hosts.
  std::string bind_ip = "127.0.0.1";
  // Whether SIMPLE is offered next to TOKEN (the RM client port). TOKEN-only ports reject a
  // NONE preamble with FATAL "SIMPLE authentication is not enabled.  Available:[TOKEN]".
  bool allow_simple = false;
  // Hadoop's server closes a connection idle for 2 x ipc.client.connection.maxidletime (20 s);
  // clients must reconnect. 0: never.
  int idle_close_ms = 0;
  // hadoop.rpc.protection of this server: the qops its DIGEST-MD5 challenge offers, as Hadoop's
  // SaslPropertiesResolver makes them (authentication -> auth, integrity -> auth-int, privacy ->
  // auth-conf with cipher="3des,rc4,des,rc4-56,rc4-40"). With integrity or privacy every frame
  // after SASL SUCCESS travels in callId -33 WRAP frames both ways, and a frame in clear closes
  // the connection. A value QopsFromRpcProtection refuses makes Start() fail.
  std::string rpc_protection = "authentication";
  // SASL KERBEROS/GSSAPI next to TOKEN (K1, K4): the service principal ("rm/localhost@LOOM.TEST";
  // NEGOTIATE offers protocol "rm", serverId "localhost") and the keytab holding its key. Set:
  // SIMPLE is never offered (allow_simple is ignored), the RFC 4752 layer offer follows
  // rpc_protection (authentication 0x01, integrity 0x02, privacy 0x04, a list OR'd), a choice
  // outside the offer is FATAL, and integrity/privacy wrap every later frame (callId -33 WRAP).
  std::string kerberos_principal;
  std::string kerberos_keytab;
  std::function<std::string()> next_nonce;                                  // 40 chars per SASL connection
  std::function<PasswordLookup(const std::string& identifier)> password_for;  // TOKEN secret manager
  std::function<std::string(const std::string& identifier)> token_user;    // the attempt id string
  std::function<CallResult(const std::string& method, std::string_view request, const ConnectionInfo&)> handle;
};

class IpcServer {
 public:
  explicit IpcServer(IpcServerOptions options);
  ~IpcServer();
  IpcServer(const IpcServer&) = delete;
  IpcServer& operator=(const IpcServer&) = delete;

  // Listens on `bind_ip` with an ephemeral port and starts accepting.
  Status Start();
  // Closes the listener and every connection, and joins their threads. Idempotent.
  void Stop();
  int port() const { return port_; }

 private:
  struct Conn {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void AcceptLoop();
  void Serve(Conn* conn);
  void ReapFinished();

  IpcServerOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  std::mutex mu_;
  std::list<std::unique_ptr<Conn>> conns_;
};

}  // namespace loom::yarn_double
