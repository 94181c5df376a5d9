#pragma once
// The server side of Hadoop IPC (RPC version 9) for tests, the one both test servers run: the
// YARN test double's RM, NM and NameNode ports (tests/yarn_double) and the IPC client's
// scripted FakeIpcServer (fake_ipc_server.h). Preamble, SASL (TOKEN/DIGEST-MD5, KERBEROS/GSSAPI
// with a service keytab (gss_acceptor.h, K4), and SIMPLE where a port allows it), the
// connection context, and calls of the protobuf engine. Replies follow the recorded Hadoop
// 3.3.6 bytes (tests/data/yarn-captures): uint32 call ids, serverIpcVersionNum 9, echoed
// clientId and retryCount, FATAL for authentication failures (then the connection is closed),
// ERROR for application errors (the connection stays open). The owner supplies token passwords
// and the call handler; this file knows nothing about YARN.
//
// Thread-safe: each connection runs on its own thread, so the handler and the hooks are called
// concurrently from several connections; the owner's callbacks lock what they share.

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>

#include "core/status.h"
#include "hadoop/proto/hadoop_rpc.pb.h"

namespace loom::hadoop::testing {

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
  int index = 0;  // 1, 2, ... in accept order
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

// One call, as the handler sees it.
struct Call {
  int32_t id = 0;
  std::string method;
  std::string_view request;  // the request message's bytes
  const ConnectionInfo& connection;
};

// What the server does with a call: reply with its result (a plain CallResult converts to
// this), and what a test script may add (FakeIpcServer): no reply, raw bytes instead, a delay
// (the reply is written from another thread while later calls are read and answered, so
// replies overtake each other), a close of the connection once written.
struct CallReply {
  // Implicit, so that a handler returns a body or an RpcError as it would a CallResult.
  CallReply(CallResult r) : result(std::move(r)) {}
  CallReply(std::string body) : result(std::move(body)) {}
  CallReply(RpcError e) : result(std::move(e)) {}
  static CallReply None() { return CallReply(std::nullopt); }
  static CallReply Raw(std::string bytes) {
    CallReply r(std::nullopt);
    r.raw = std::move(bytes);
    return r;
  }

  std::optional<CallResult> result;  // nullopt: nothing but `raw`, if any, is written
  std::string raw;                   // written as it is (a security layer does not wrap it)
  std::chrono::milliseconds delay{0};
  // Shut the connection (both ways) once the reply is written, as an idle-closing or a failing
  // server does; counted in IpcServer::closes().
  bool close_after = false;

 private:
  explicit CallReply(std::nullopt_t) {}
};

struct IpcServerOptions {
  std::string name;      // for diagnostics: "rm", "scheduler", "nm"
  // The protocol served, e.g. org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB; a call
  // declaring another gets RpcNoSuchProtocolException. Empty: any protocol.
  std::string protocol;
  // The loopback address to listen on: each of several NodeManagers has its own
  // (127.0.0.2, ...), so that their NodeIds name different hosts.
  std::string bind_ip = "127.0.0.1";
  // Whether SIMPLE is offered next to TOKEN (the RM client port). TOKEN-only ports reject a
  // NONE preamble with FATAL "SIMPLE authentication is not enabled.  Available:[TOKEN]".
  bool allow_simple = false;
  // Whether SASL TOKEN/DIGEST-MD5 is offered (a secret manager: password_for). False, with
  // allow_simple and no Kerberos, is a server with security off: SIMPLE only, and a SASL
  // NEGOTIATE is answered with SUCCESS ("switch to simple"), as Hadoop's SIMPLE-only servers do.
  bool token_auth = true;
  // Send the DIGEST-MD5 challenge in a CHALLENGE round after the client's INITIATE (which then
  // carries no token) instead of inside the NEGOTIATE reply, as a mechanism without an initial
  // challenge does.
  bool separate_challenge = false;
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
  std::function<std::string()> next_nonce;  // 40 chars per SASL connection; unset: random
  std::function<PasswordLookup(const std::string& identifier)> password_for;  // TOKEN secret manager
  std::function<std::string(const std::string& identifier)> token_user;    // the attempt id string
  // The call handler; `respond` is the general form (a call's id, and a CallReply). Set one.
  std::function<CallResult(const std::string& method, std::string_view request, const ConnectionInfo&)> handle;
  std::function<CallReply(const Call&)> respond;
  // Called once per connection when its set-up ends: OK with who connected, or why it was
  // refused (the FATAL's message) or ended. Not called for connections the server stops.
  std::function<void(const ConnectionInfo&, const Status&)> on_setup;
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

  // Connections accepted so far.
  int connections() const { return connections_.load(); }
  // Connections the server shut: after a reply with close_after, or in CloseConnections().
  int closes() const { return closes_.load(); }
  // Replies with a delay (CallReply::delay) written so far: a test waits for a late reply to
  // have been sent instead of sleeping out its delay.
  int delayed_replies() const { return delayed_replies_.load(); }
  // Shuts every open connection, as the server's idle timeout does.
  void CloseConnections();

 private:
  struct Conn {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
    std::atomic<bool> shut{false};  // by Shut(): counted once in closes_
  };
  void AcceptLoop();
  void Serve(Conn* conn, int index);
  void ReapFinished();
  void Shut(Conn* conn);

  IpcServerOptions options_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> closes_{0};
  std::atomic<int> delayed_replies_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::list<std::unique_ptr<Conn>> conns_;
};

}  // namespace loom::hadoop::testing
