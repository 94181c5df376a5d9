#include "am/control_service.h"

#include <mutex>
#include <optional>

#include <spdlog/spdlog.h>

#include "control/auth.h"

namespace loom::am {

grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

bool ControlServiceImpl::Authenticated(grpc::CallbackServerContext* ctx, const char* method, bool observer_ok) const {
  const auto& md = ctx->client_metadata();
  auto it = md.find(control::kSecretMetadataKey);
  if (it != md.end()) {
    std::string presented(it->second.data(), it->second.size());
    if (control::SecretsEqual(presented, secret_)) return true;
    if (observer_ok && !observer_secret_.empty() && control::SecretsEqual(presented, observer_secret_)) return true;
  }
  spdlog::warn("refused {} from {}: {} job secret", method, ctx->peer(), it == md.end() ? "no" : "wrong");
  return false;
}

grpc::ServerUnaryReactor* ControlServiceImpl::RefuseUnlessAuthenticated(grpc::CallbackServerContext* ctx,
                                                                       const char* method, bool observer_ok) {
  if (Authenticated(ctx, method, observer_ok)) return nullptr;
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job secret"));
  return reactor;
}

template <typename Req, typename Resp, typename Fn>
grpc::ServerUnaryReactor* ControlServiceImpl::Dispatch(grpc::CallbackServerContext* ctx, const char* method,
                                                       const Req* req, Resp* resp, Fn fn, bool observer_ok) {
  if (auto* refused = RefuseUnlessAuthenticated(ctx, method, observer_ok)) return refused;
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

namespace {

// One executor's heartbeat stream: reads each heartbeat, answers it with the AM's verdict
// (stop or not). At most one write is in flight; an answer due while one is still being
// written is sent as soon as it completes (only the latest verdict matters).
class HeartbeatStream : public grpc::ServerBidiReactor<control::HeartbeatRequest, control::HeartbeatResponse> {
 public:
  explicit HeartbeatStream(ControlHandler* handler) : handler_(handler) { StartRead(&req_); }
  // Refuses the stream at once.
  explicit HeartbeatStream(const grpc::Status& refusal) : handler_(nullptr) { Finish(refusal); }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the executor closed its side (or went away)
      Finish(grpc::Status::OK);
      return;
    }
    control::HeartbeatResponse next;
    Status s = handler_->HandleHeartbeat(req_, &next);
    if (!s.ok()) {
      Finish(ToGrpcStatus(s));
      return;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      pending_ = next;
      if (!writing_) WriteLocked();
    }
    StartRead(&req_);
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> l(mu_);
    writing_ = false;
    if (ok && pending_) WriteLocked();
  }
  void OnDone() override { delete this; }

 private:
  void WriteLocked() {
    resp_ = *pending_;
    pending_.reset();
    writing_ = true;
    StartWrite(&resp_);
  }

  ControlHandler* handler_;
  control::HeartbeatRequest req_;
  std::mutex mu_;
  control::HeartbeatResponse resp_;  // owned by the write in flight
  std::optional<control::HeartbeatResponse> pending_;
  bool writing_ = false;
};

}  // namespace

grpc::ServerBidiReactor<control::HeartbeatRequest, control::HeartbeatResponse>* ControlServiceImpl::Heartbeats(
    grpc::CallbackServerContext* ctx) {
  if (!Authenticated(ctx, "Heartbeats")) {
    return new HeartbeatStream(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job secret"));
  }
  return new HeartbeatStream(handler_);
}

grpc::ServerUnaryReactor* ControlServiceImpl::ReportExit(grpc::CallbackServerContext* ctx,
                                                         const control::ExitReport* req, control::Ack* resp) {
  return Dispatch(ctx, "ReportExit", req, resp, [this](auto& r, auto reply) { handler_->HandleReportExit(r, reply); });
}

grpc::ServerUnaryReactor* ControlServiceImpl::RegisterTensorBoard(grpc::CallbackServerContext* ctx,
                                                                  const control::TensorBoardRequest* req,
                                                                  control::Ack* resp) {
  return Dispatch(ctx, "RegisterTensorBoard", req, resp,
                  [this](auto& r, auto reply) { handler_->HandleRegisterTensorBoard(r, reply); });
}

grpc::ServerUnaryReactor* ControlServiceImpl::JobState(grpc::CallbackServerContext* ctx,
                                                       const control::JobStateRequest* req,
                                                       control::JobStateResponse* resp) {
  return Dispatch(
      ctx, "JobState", req, resp, [this](auto& r, auto reply) { handler_->HandleJobState(r, reply); },
      /*observer_ok=*/true);
}

}  // namespace loom::am
