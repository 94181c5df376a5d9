#pragma once
// ControlServiceImpl: the gRPC face of the AM's control plane (callback API, so a long wait for
// the gang holds no thread). It checks the job secret on every call, then hands the request to
// a ControlHandler and finishes the call when the handler replies, whenever that is.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "control/control.grpc.pb.h"
#include "core/status.h"

namespace loom::am {

template <typename T>
using Reply = std::function<void(const Status&, const T&)>;

// The open Guests stream of one rank-holding task's executor (framework mpi, am/exec_relay.h):
// what the AM sends down it. Thread-safe; after the stream has ended, calls do nothing.
class GuestChannel {
 public:
  virtual ~GuestChannel() = default;
  virtual void Send(const control::GuestCommand& command) = 0;
  // Ends the stream with `status` (a refusal).
  virtual void Close(const Status& status) = 0;
};

// What the AM does with control-plane calls. Replies may come from any thread, once each.
class ControlHandler {
 public:
  virtual ~ControlHandler() = default;
  virtual void HandleRegister(const control::RegisterRequest& req, Reply<control::RegisterResponse> reply) = 0;
  virtual void HandleGetClusterSpec(const control::ClusterSpecRequest& req,
                                    Reply<control::ClusterSpecResponse> reply) = 0;
  virtual void HandleTaskStarted(const control::TaskStartedRequest& req, Reply<control::Ack> reply) = 0;
  // Called on a gRPC thread for every heartbeat message; must be quick and must not block.
  virtual Status HandleHeartbeat(const control::HeartbeatRequest& req, control::HeartbeatResponse* resp) = 0;
  virtual void HandleReportExit(const control::ExitReport& req, Reply<control::Ack> reply) = 0;
  virtual void HandleRegisterTensorBoard(const control::TensorBoardRequest& req, Reply<control::Ack> reply) = 0;
  virtual void HandleJobState(const control::JobStateRequest& req, Reply<control::JobStateResponse> reply) = 0;

  // MPI without ssh (control.proto's MpiRole; the AM's side is am/exec_relay.h). Each Exec call
  // has a number of its own; HandleExecCancelled(call) follows when its caller went away first.
  // A Guests stream is handed over as its channel once open, and named again when it ended.
  // The defaults refuse, for handlers without MPI.
  virtual void HandleExec(const control::ExecRequest& req, uint64_t call, Reply<control::ExecResult> reply) {
    reply(Status::Unimplemented("Exec: no MPI here"), {});
  }
  virtual void HandleExecCancelled(uint64_t call) {}
  virtual void HandleGuestsOpened(const control::GuestsRequest& req, std::shared_ptr<GuestChannel> channel) {
    channel->Close(Status::Unimplemented("Guests: no MPI here"));
  }
  virtual void HandleGuestsClosed(std::shared_ptr<GuestChannel> channel) {}
  virtual void HandleGuestExited(const control::GuestExit& req, Reply<control::Ack> reply) {
    reply(Status::Unimplemented("GuestExited: no MPI here"), {});
  }
};

grpc::Status ToGrpcStatus(const Status& s);

class ControlServiceImpl final : public control::Control::CallbackService {
 public:
  // `handler` must outlive the service. `observer_secret` (or empty) is accepted for JobState
  // alone: it lets a client follow the job and nothing more.
  ControlServiceImpl(std::string secret, ControlHandler* handler, std::string observer_secret = "")
      : secret_(std::move(secret)), observer_secret_(std::move(observer_secret)), handler_(handler) {}

  // The generated service's types, shortened so that each method is declared on one line.
  using Context = grpc::CallbackServerContext;
  using Unary = grpc::ServerUnaryReactor;

  Unary* Register(Context* ctx, const control::RegisterRequest* req, control::RegisterResponse* resp) override;
  Unary* GetClusterSpec(Context* ctx, const control::ClusterSpecRequest* req, control::ClusterSpecResponse* resp) override;
  Unary* TaskStarted(Context* ctx, const control::TaskStartedRequest* req, control::Ack* resp) override;
  grpc::ServerBidiReactor<control::HeartbeatRequest, control::HeartbeatResponse>* Heartbeats(Context* ctx) override;
  Unary* ReportExit(Context* ctx, const control::ExitReport* req, control::Ack* resp) override;
  Unary* JobState(Context* ctx, const control::JobStateRequest* req, control::JobStateResponse* resp) override;
  Unary* RegisterTensorBoard(Context* ctx, const control::TensorBoardRequest* req, control::Ack* resp) override;
  // MPI without ssh: defined in am/exec_service.cc.
  Unary* Exec(Context* ctx, const control::ExecRequest* req, control::ExecResult* resp) override;
  grpc::ServerWriteReactor<control::GuestCommand>* Guests(Context* ctx, const control::GuestsRequest* req) override;
  Unary* GuestExited(Context* ctx, const control::GuestExit* req, control::Ack* resp) override;

 private:
  // Whether the caller presented the secret (or, with `observer_ok`, the observer secret).
  bool Authenticated(grpc::CallbackServerContext* ctx, const char* method, bool observer_ok = false) const;
  // Null when the caller presented the secret; otherwise a reactor already finished with
  // UNAUTHENTICATED.
  grpc::ServerUnaryReactor* RefuseUnlessAuthenticated(grpc::CallbackServerContext* ctx, const char* method,
                                                      bool observer_ok = false);

  template <typename Req, typename Resp, typename Fn>
  grpc::ServerUnaryReactor* Dispatch(grpc::CallbackServerContext* ctx, const char* method, const Req* req,
                                     Resp* resp, Fn fn, bool observer_ok = false);

  const std::string secret_;
  const std::string observer_secret_;
  ControlHandler* handler_;
  std::atomic<uint64_t> next_exec_call_{1};
};

}  // namespace loom::am
