// The gRPC side of MPI without ssh (am/exec_relay.h): ControlServiceImpl's Exec, Guests and
// GuestExited, declared in am/control_service.h.

#include <deque>
#include <mutex>

#include "am/control_service.h"

namespace loom::am {
namespace {

// One Exec call. It may stay open for the whole job (the daemon it started runs as long as the
// MPI job does) and holds no thread meanwhile; a caller that goes away first (its agent was
// killed) is passed on, so that the command is stopped.
class ExecCall : public grpc::ServerUnaryReactor {
 public:
  ExecCall(ControlHandler* handler, uint64_t call, control::ExecResult* resp)
      : handler_(handler), call_(call), resp_(resp) {}

  void Start(const control::ExecRequest& req) {
    // `this` lives until OnDone, which only follows Finish: the handler answers exactly once.
    handler_->HandleExec(req, call_, [this](const Status& s, const control::ExecResult& r) {
      if (s.ok()) *resp_ = r;
      Finish(ToGrpcStatus(s));
    });
  }
  void OnCancel() override { handler_->HandleExecCancelled(call_); }
  void OnDone() override { delete this; }

 private:
  ControlHandler* handler_;
  const uint64_t call_;
  control::ExecResult* resp_;
};

class GuestStream;

// What the AM holds of a Guests stream; it may outlive the stream (then it does nothing).
class StreamChannel : public GuestChannel {
 public:
  explicit StreamChannel(GuestStream* stream) : stream_(stream) {}
  void Send(const control::GuestCommand& command) override;
  void Close(const Status& status) override;
  // The stream is done: nothing more may touch it.
  void Detach() {
    std::lock_guard<std::mutex> l(mu_);
    stream_ = nullptr;
  }

 private:
  friend class GuestStream;
  std::mutex mu_;
  GuestStream* stream_;  // guarded by mu_; null once the stream is done
};

// One rank-holding executor's Guests stream: the commands the AM sends are written one at a
// time, in order.
class GuestStream : public grpc::ServerWriteReactor<control::GuestCommand> {
 public:
  GuestStream(ControlHandler* handler, const control::GuestsRequest& req)
      : handler_(handler), channel_(std::make_shared<StreamChannel>(this)) {
    handler_->HandleGuestsOpened(req, channel_);
  }
  // Refuses the stream at once.
  explicit GuestStream(const grpc::Status& refusal) : handler_(nullptr) { Finish(refusal); }

  void OnWriteDone(bool ok) override {
    if (!channel_) return;
    std::lock_guard<std::mutex> l(channel_->mu_);
    writing_ = false;
    if (!ok) queue_.clear();  // the executor is gone; OnCancel or OnDone follows
    NextLocked();
  }
  void OnCancel() override {
    if (!channel_) return;
    std::lock_guard<std::mutex> l(channel_->mu_);
    EndLocked(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    if (channel_) {
      channel_->Detach();
      handler_->HandleGuestsClosed(channel_);
    }
    delete this;
  }

  // Both called with channel_->mu_ held.
  void EnqueueLocked(const control::GuestCommand& command) {
    if (ending_) return;
    queue_.push_back(command);
    NextLocked();
  }
  void EndLocked(const grpc::Status& status) {
    if (ending_) return;
    ending_ = true;
    end_status_ = status;
    queue_.clear();
    NextLocked();
  }

 private:
  void NextLocked() {
    if (writing_ || finished_) return;
    if (!queue_.empty()) {
      current_ = queue_.front();
      queue_.pop_front();
      writing_ = true;
      StartWrite(&current_);
    } else if (ending_) {
      finished_ = true;  // Finish only once no write is in flight
      Finish(end_status_);
    }
  }

  ControlHandler* handler_;
  std::shared_ptr<StreamChannel> channel_;
  // Guarded by channel_->mu_.
  std::deque<control::GuestCommand> queue_;
  control::GuestCommand current_;  // owned by the write in flight
  bool writing_ = false;
  bool ending_ = false;
  bool finished_ = false;
  grpc::Status end_status_;
};

void StreamChannel::Send(const control::GuestCommand& command) {
  std::lock_guard<std::mutex> l(mu_);
  if (stream_) stream_->EnqueueLocked(command);
}

void StreamChannel::Close(const Status& status) {
  std::lock_guard<std::mutex> l(mu_);
  if (stream_) stream_->EndLocked(ToGrpcStatus(status));
}

}  // namespace

grpc::ServerUnaryReactor* ControlServiceImpl::Exec(grpc::CallbackServerContext* ctx, const control::ExecRequest* req,
                                                   control::ExecResult* resp) {
  if (auto* refused = RefuseUnlessAuthenticated(ctx, "Exec")) return refused;
  auto* call = new ExecCall(handler_, next_exec_call_++, resp);
  call->Start(*req);
  return call;
}

grpc::ServerWriteReactor<control::GuestCommand>* ControlServiceImpl::Guests(grpc::CallbackServerContext* ctx,
                                                                            const control::GuestsRequest* req) {
  if (!Authenticated(ctx, "Guests")) {
    return new GuestStream(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong job secret"));
  }
  return new GuestStream(handler_, *req);
}

grpc::ServerUnaryReactor* ControlServiceImpl::GuestExited(grpc::CallbackServerContext* ctx,
                                                          const control::GuestExit* req, control::Ack* resp) {
  if (auto* refused = RefuseUnlessAuthenticated(ctx, "GuestExited")) return refused;
  auto* reactor = ctx->DefaultReactor();
  handler_->HandleGuestExited(*req, [reactor](const Status& s, const control::Ack&) { reactor->Finish(ToGrpcStatus(s)); });
  return reactor;
}

}  // namespace loom::am
