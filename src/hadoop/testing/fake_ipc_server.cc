#include "hadoop/testing/fake_ipc_server.h"

#include <spdlog/spdlog.h>

#include "core/eventually.h"

namespace loom::hadoop::testing {

FakeReply FakeReply::Ok(const google::protobuf::MessageLite& response) {
  FakeReply r;
  r.body = response.SerializeAsString();
  return r;
}

FakeReply FakeReply::Error(std::string exception_class, std::string message) {
  FakeReply r;
  r.kind = Kind::kError;
  r.exception_class = std::move(exception_class);
  r.message = std::move(message);
  return r;
}

namespace {

CallReply ToCallReply(FakeReply reply) {
  CallReply out = CallReply::None();
  switch (reply.kind) {
    case FakeReply::Kind::kSuccess:
      out = CallReply(std::move(reply.body));
      break;
    case FakeReply::Kind::kError:
      out = CallReply(RpcError{std::move(reply.exception_class), std::move(reply.message)});
      break;
    case FakeReply::Kind::kFatal:
      out = CallReply(RpcError{std::move(reply.exception_class), std::move(reply.message),
                               ::hadoop::common::RpcResponseHeaderProto::FATAL_UNKNOWN, true});
      reply.close_after = true;
      break;
    case FakeReply::Kind::kNoReply:
      break;
    case FakeReply::Kind::kRaw:
      out = CallReply::Raw(std::move(reply.body));
      break;
  }
  out.delay = reply.delay;
  out.close_after = reply.close_after;
  return out;
}

}  // namespace

IpcServerOptions FakeIpcServer::ServerOptions(const FakeServerOptions& options, Handler handler) {
  IpcServerOptions o;
  o.name = "fake";
  // Without a token: a server with security off (SIMPLE, and SUCCESS to a SASL NEGOTIATE).
  o.token_auth = options.token.has_value();
  o.allow_simple = !options.token.has_value();
  o.separate_challenge = options.separate_challenge;
  o.idle_close_ms = 60000;
  o.password_for = [this](const std::string& identifier) -> PasswordLookup {
    std::lock_guard lock(mu_);
    if (!token_ || identifier != token_->identifier) {
      return RpcError{"javax.security.sasl.SaslException", "token identifier not found"};
    }
    return token_->password;
  };
  o.respond = [handler = std::move(handler)](const Call& call) {
    return ToCallReply(handler(FakeCall{call.connection.index, call.id, call.method, std::string(call.request)}));
  };
  o.on_setup = [this](const ConnectionInfo& info, const Status& status) {
    std::lock_guard lock(mu_);
    contexts_.push_back(status.ok() ? info.user + "@" + info.protocol : "auth failed: " + status.message());
  };
  return o;
}

FakeIpcServer::FakeIpcServer(FakeServerOptions options, Handler handler)
    : token_(options.token), server_(ServerOptions(options, std::move(handler))) {
  if (Status s = server_.Start(); !s.ok()) spdlog::error("fake IPC server: {}", s.ToString());
}

FakeIpcServer::~FakeIpcServer() { server_.Stop(); }

void FakeIpcServer::SetToken(Token token) {
  std::lock_guard lock(mu_);
  token_ = std::move(token);
}

bool FakeIpcServer::WaitForCloses(int n) const {
  return loom::testing::Eventually([&] { return closes() >= n; }, std::chrono::seconds(5));
}

std::vector<std::string> FakeIpcServer::contexts() const {
  std::lock_guard lock(mu_);
  return contexts_;
}

}  // namespace loom::hadoop::testing
