#pragma once
// A scriptable Hadoop IPC server for tests: SIMPLE, or TOKEN-only with DIGEST-MD5 like the RM
// scheduler and NM ports. Every call goes to a handler that decides the reply: a response, a
// remote error, a FATAL, nothing, raw bytes; after a delay (so replies overtake each other) and
// optionally closing the connection afterwards.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/message_lite.h>

#include "core/status.h"
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

  int port() const { return port_; }
  int connections() const { return connections_.load(); }
  // How many times the server has closed a connection after a call or in CloseConnections().
  int closes() const { return closes_.load(); }
  // Waits (up to 5 s) until closes() reaches `n`: the FIN is then queued at the client.
  bool WaitForCloses(int n) const;
  // The token later handshakes must use (the RM rolled its AMRMToken key).
  void SetToken(Token token);
  // Closes every open connection, as the server's idle timeout does.
  void CloseConnections();
  // What each connection's context said: "user@protocol" ("@protocol" after TOKEN auth), or
  // "auth failed: ..." for a refused handshake.
  std::vector<std::string> contexts() const;

 private:
  struct Conn;
  void AcceptLoop();
  void Serve(std::shared_ptr<Conn> conn);
  Status Handshake(Conn& conn);
  void Reply(std::shared_ptr<Conn> conn, FakeCall call, FakeReply reply);

  Handler handler_;
  const bool separate_challenge_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> closes_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::optional<Token> token_;                  // guarded by mu_
  std::vector<std::weak_ptr<Conn>> open_;       // guarded by mu_
  std::vector<std::thread> threads_;            // guarded by mu_
  std::vector<std::string> contexts_;           // guarded by mu_
};

}  // namespace loom::hadoop::testing
