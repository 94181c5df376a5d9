#include "am/control_service.h"

#include <spdlog/spdlog.h>

#include "control/auth.h"

namespace loom::am {

grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

grpc::ServerUnaryReactor* ControlServiceImpl::RefuseUnlessAuthenticated(grpc::CallbackServerContext* ctx,
                                                                       const char* method) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(control::kSecretMetadataKey);
  if (it != md.end() && control::SecretsEqual(std::string(it->second.data(), it->second.size()), secret_)) {
    return nullptr;
  }
  spdlog::warn("refused {} from {}: {} job secret", method, ctx->peer(), it == md.end() ? "no" : "wrong");
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job secret"));
  return reactor;
}

template <typename Req, typename Resp, typename Fn>
grpc::ServerUnaryReactor* ControlServiceImpl::Dispatch(grpc::CallbackServerContext* ctx, const char* method,
                                                       const Req* req, Resp* resp, Fn fn) {
  if (auto* refused = RefuseUnlessAuthenticated(ctx, method)) return refused;
  auto* reactor = ctx->DefaultReactor();
  // `resp` and `reactor` stay valid until Finish(); the handler replies exactly once.
  fn(*req, [reactor, resp](const Status& s, const Resp& r) {
    if (s.ok()) *resp = r;
    reactor->Finish(ToGrpcStatus(s));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ControlServiceImpl::Register(grpc::CallbackServerContext* ctx,
                                                       const control::RegisterRequest* req,
                                                       control::RegisterResponse* resp) {
  return Dispatch(ctx, "Register", req, resp, [this](auto& r, auto reply) { handler_->HandleRegister(r, reply); });
}

grpc::ServerUnaryReactor* ControlServiceImpl::GetClusterSpec(grpc::CallbackServerContext* ctx,
                                                             const control::ClusterSpecRequest* req,
                                                             control::ClusterSpecResponse* resp) {
  return Dispatch(ctx, "GetClusterSpec", req, resp,
                  [this](auto& r, auto reply) { handler_->HandleGetClusterSpec(r, reply); });
}

grpc::ServerUnaryReactor* ControlServiceImpl::TaskStarted(grpc::CallbackServerContext* ctx,
                                                          const control::TaskStartedRequest* req, control::Ack* resp) {
  return Dispatch(ctx, "TaskStarted", req, resp,
                  [this](auto& r, auto reply) { handler_->HandleTaskStarted(r, reply); });
}

grpc::ServerUnaryReactor* ControlServiceImpl::Heartbeat(grpc::CallbackServerContext* ctx,
                                                        const control::HeartbeatRequest* req,
                                                        control::HeartbeatResponse* resp) {
  return Dispatch(ctx, "Heartbeat", req, resp, [this](auto& r, auto reply) { handler_->HandleHeartbeat(r, reply); });
}

grpc::ServerUnaryReactor* ControlServiceImpl::ReportExit(grpc::CallbackServerContext* ctx,
                                                         const control::ExitReport* req, control::Ack* resp) {
  return Dispatch(ctx, "ReportExit", req, resp, [this](auto& r, auto reply) { handler_->HandleReportExit(r, reply); });
}

}  // namespace loom::am
