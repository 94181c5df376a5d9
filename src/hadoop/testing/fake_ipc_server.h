#pragma once
// A scriptable Hadoop IPC server for the IPC client's tests: SIMPLE, or TOKEN-only with
// DIGEST-MD5 like the RM scheduler and NM ports. Every call goes to a handler that decides the
// reply: a response, a remote error, a FATAL, nothing, raw bytes; after a delay (so replies
// overtake each other) and optionally closing the connection afterwards. A thin layer over the
// test double's server (ipc_server.h), which does the handshake and the framing.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/message_lite.h>

#include "hadoop/testing/ipc_server.h"
#include "hadoop/wire/credentials.h"

namespace loom::hadoop::testing {

struct FakeCall {
  int connection = 0;   // 1, 2, ... in accept order
  int32_t call_id = 0;
  std::string method;
  std::string request;  // the request message bytes
};

struct FakeReply {
  enum class Kind { kSuccess, kError, kFatal, kNoReply, kRaw };
  Kind kind = Kind::kSuccess;
  std::string body;             // kSuccess: the response message; kRaw: bytes written as they are
  std::string exception_class;  // kError, kFatal
  std::string message;
  std::chrono::milliseconds delay{0};
  bool close_after = false;     // close the connection once this reply is written

  static FakeReply Ok(const google::protobuf::MessageLite& response);
  static FakeReply Error(std::string exception_class, std::string message);
};

struct FakeServerOptions {
  // TOKEN only, with this token (identifier and password); SIMPLE only when unset.
  std::optional<Token> token;
  // Send the DIGEST-MD5 challenge in a CHALLENGE round after INITIATE instead of inside the
  // NEGOTIATE reply (what a mechanism without an initial challenge does).
  bool separate_challenge = false;
};

class FakeIpcServer {
 public:
  using Handler = std::function<FakeReply(const FakeCall&)>;
  FakeIpcServer(FakeServerOptions options, Handler handler);
  ~FakeIpcServer();
  FakeIpcServer(const FakeIpcServer&) = delete;
  FakeIpcServer& operator=(const FakeIpcServer&) = delete;

  int port() const { return server_.port(); }
  int connections() const { return server_.connections(); }
  // How many times the server has closed a connection after a call or in CloseConnections().
  int closes() const { return server_.closes(); }
  // Waits (up to 5 s) until closes() reaches `n`: the FIN is then queued at the client.
  bool WaitForCloses(int n) const;
  // Replies with a FakeReply::delay written so far (their bytes are then sent to the client).
  int delayed_replies() const { return server_.delayed_replies(); }
  // The token later handshakes must use (the RM rolled its AMRMToken key).
  void SetToken(Token token);
  // Closes every open connection, as the server's idle timeout does.
  void CloseConnections() { server_.CloseConnections(); }
  // What each connection's context said: "user@protocol" ("@protocol" after TOKEN auth), or
  // "auth failed: ..." for a refused handshake.
  std::vector<std::string> contexts() const;

 private:
  IpcServerOptions ServerOptions(const FakeServerOptions& options, Handler handler);

  mutable std::mutex mu_;
  std::optional<Token> token_;         // guarded by mu_
  std::vector<std::string> contexts_;  // guarded by mu_
  // Last: it stops (joining its threads, which call back into the members above) first.
  IpcServer server_;
};

}  // namespace loom::hadoop::testing
