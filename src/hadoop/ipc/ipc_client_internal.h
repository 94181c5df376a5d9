#pragma once
// What ipc_client.cc (connections, calls) and ipc_sasl.cc (the SASL handshakes) share: the
// definition of IpcClient::Impl and the connection state it works on. Not for other files.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <google/protobuf/message.h>

#include "core/status.h"
#include "hadoop/ipc/ipc_client.h"
#include "hadoop/ipc/ipc_socket.h"
#include "hadoop/wire/credentials.h"
#include "hadoop/wire/ipc_frame.h"
#include "hadoop/wire/kerberos_login.h"
#include "hadoop/wire/sasl_layer.h"

namespace loom::hadoop::ipc_internal {

// A server frame split into its header and the (optional) message after it.
struct ServerFrame {
  RpcResponseHeaderProto header;
  std::optional<std::string> body;
};

Result<ServerFrame> ParseServerFrame(const std::string& frame);

// A call waiting for its response; lives on the caller's stack, filled by the reader thread.
struct Pending {
  bool done = false;
  Status status;
  std::string body;
};

// An opened, authenticated connection: what Java sends in one segment with the first call
// (the preamble for SIMPLE, the connection context) is still in `unsent`.
struct Opened {
  Socket socket;
  FrameReader reader;
  std::string unsent;
  // Set when SASL negotiated integrity or privacy: every later frame, both ways, is wrapped.
  struct Wrapping {
    std::mutex mu;  // the layer's calls are serialised (sasl_layer.h): writers and the reader
    std::unique_ptr<SaslSecurityLayer> layer;
    FrameReader plain;  // unwrapped bytes; a frame may span WRAP tokens
  };
  std::unique_ptr<Wrapping> wrapping;
};

// The conf key naming the server's Kerberos principal (Java's SecurityInfo/KerberosInfo for the
// protocol); empty for protocols that are TOKEN only (scheduler, NodeManagers: K5.4).
std::string KerberosPrincipalKey(const std::string& protocol);

// The cnonce SetIpcIdentityForTest pinned, empty when none; it lives beside the client id that
// the same call pins, in ipc_client.cc.
std::string TestCnonce();

inline std::string ShortProtocolName(const std::string& protocol) {
  size_t dot = protocol.rfind('.');
  return dot == std::string::npos ? protocol : protocol.substr(dot + 1);
}

}  // namespace loom::hadoop::ipc_internal

namespace loom::hadoop {

struct IpcClient::Impl {
  using Clock = ipc_internal::Clock;
  using Opened = ipc_internal::Opened;
  using Pending = ipc_internal::Pending;

  // A long-lived connection with its reader thread.
  struct Connection {
    Opened io;
    std::thread reader;
    std::mutex write_mu;                   // one frame at a time; guards io.unsent
    bool dead = false;                     // guarded by Impl::mu
    std::map<int32_t, Pending*> pending;   // guarded by Impl::mu
    Clock::time_point last_active;         // guarded by Impl::mu
  };

  explicit Impl(IpcOptions o);
  ~Impl() { Close(); }

  Status Call(const std::string& method, const google::protobuf::Message& request,
              google::protobuf::Message* response);
  Status CallOnOwnConnection(int32_t call_id, const std::string& frame, const std::string& method,
                             Clock::time_point deadline, google::protobuf::Message* response);
  Result<std::shared_ptr<Connection>> Connected(Clock::time_point deadline);
  Status Send(Connection& c, const std::string& frame);
  Status Await(Connection& c, int32_t call_id, Pending* p, const std::string& method, Clock::time_point deadline,
               google::protobuf::Message* response);
  void ReadLoop(Connection* c);
  Status Dispatch(Connection* c, const std::string& frame);
  void Kill(Connection* c, const Status& why);
  void Close();

  Result<Opened> Open(Clock::time_point deadline);
  Result<bool> Sasl(Opened* o, const Token& token, Clock::time_point deadline);
  Status SaslKerberos(Opened* o, Clock::time_point deadline);
  Result<RpcSaslProto> ReadSasl(Opened* o, Clock::time_point deadline);
  Result<std::string> NextFrame(Opened* o, std::optional<Clock::time_point> deadline);
  std::string ContextFrame(bool token_auth) const;
  std::string CallFrame(int32_t call_id, const std::string& method, const google::protobuf::Message& request) const;

  // The remote error of a FATAL reply, naming the server (the class stays first for
  // RemoteExceptionClass).
  Status Fatal(const RpcResponseHeaderProto& h) const {
    Status s = RemoteErrorStatus(h);
    return Status(s.code(), s.message() + " [" + Describe() + "]");
  }
  Status Lost(const Status& why) const {
    return Status::Unavailable("connection to " + Describe() + " lost: " + why.message());
  }
  std::string Describe() const {
    return options.host + ":" + std::to_string(options.port) + " (" +
           ipc_internal::ShortProtocolName(options.protocol) + ")";
  }

  const IpcOptions options;
  std::string client_id;
  std::mutex connect_mu;  // one (re)connection at a time
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Token> token;         // guarded by mu
  std::shared_ptr<const KerberosClientConf> kerberos;  // set once, in the constructor
  std::shared_ptr<Connection> conn;   // guarded by mu
};

}  // namespace loom::hadoop
