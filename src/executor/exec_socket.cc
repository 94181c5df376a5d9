#include "executor/exec_socket.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <spdlog/spdlog.h>

#include "core/strings.h"
#include "core/subprocess.h"
#include "executor/unix_socket.h"

namespace loom::executor {

Result<std::unique_ptr<ExecSocket>> ExecSocket::Start(Options options) {
  std::unique_ptr<ExecSocket> s(new ExecSocket(std::move(options)));
  LOOM_ASSIGN_OR_RETURN(s->listen_fd_, ListenUnix(s->options_.path));
  s->accept_stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  s->cancel_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->accept_stop_fd_ < 0 || s->cancel_fd_ < 0) return Status::FromErrno("eventfd", errno);
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

void ExecSocket::Stop(std::chrono::milliseconds drain) {
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  if (accept_stop_fd_ >= 0) (void)!::write(accept_stop_fd_, &one, sizeof(one));
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> open;
  {
    std::unique_lock<std::mutex> l(mu_);
    idle_.wait_for(l, drain, [this] { return active_ == 0; });
    open.swap(connections_);
  }
  if (cancel_fd_ >= 0) (void)!::write(cancel_fd_, &one, sizeof(one));
  for (std::thread& t : open) t.join();
  for (int* fd : {&listen_fd_, &accept_stop_fd_, &cancel_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  ::unlink(options_.path.c_str());
}

void ExecSocket::AcceptLoop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {accept_stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents) break;
    if (!(fds[0].revents & POLLIN)) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> l(mu_);
    ++active_;
    connections_.emplace_back([this, fd] {
      Serve(fd);
      ::close(fd);
      std::lock_guard<std::mutex> done(mu_);
      --active_;
      idle_.notify_all();
    });
  }
}

void ExecSocket::Serve(int fd) {
  control::AgentReply reply;
  if (!PeerIsSameUser(fd)) {
    spdlog::warn("refused an mpi-rsh connection from another user");
    reply.set_error("refused: the agent runs as another user than the launcher");
  } else {
    // The agent writes its request at once; one that does not is not waited for long.
    timeval limit{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    Result<std::string> frame = ReadFrame(fd);
    control::AgentRequest req;
    if (!frame.ok()) {
      if (frame.status().code() != StatusCode::kNotFound) spdlog::warn("mpi-rsh request: {}", frame.status().ToString());
      return;
    }
    if (!req.ParseFromString(*frame)) {
      reply.set_error("malformed request");
    } else {
      reply = Handle(fd, req);
    }
  }
  Status written = WriteFrame(fd, reply.SerializeAsString());
  if (!written.ok()) spdlog::info("mpi-rsh reply not delivered (the agent went away): {}", written.ToString());
}

control::AgentReply ExecSocket::Handle(int fd, const control::AgentRequest& req) {
  control::AgentReply reply;
  bool known = false;
  std::vector<std::string> aliases;
  for (const runtime::MpiHost& h : options_.hosts) {
    aliases.push_back(h.alias);
    known |= h.alias == req.host();
  }
  // As Open MPI passes an alias when orte_keep_fqdn_hostnames is off: without its domain.
  for (const runtime::MpiHost& h : options_.hosts) {
    known |= req.host() + runtime::kMpiHostDomain == h.alias;
  }
  Result<TaskId> target = runtime::ParseMpiHostAlias(req.host());
  if (!known || !target.ok()) {
    reply.set_error("unknown host '" + req.host() + "': the hosts of this MPI job are " + Join(aliases, ", ") +
                    " (the hostfile Loom wrote for mpirun)");
    return reply;
  }
  control::ExecRequest exec;
  *exec.mutable_task() = options_.task;
  exec.mutable_target()->set_type(target->type);
  exec.mutable_target()->set_index(target->index);
  exec.set_command(req.command());
  exec.set_container_id(options_.container_id);
  spdlog::info("mpi-rsh: starting in {}: {}", target->ToString(), req.command().substr(0, 120));

  grpc::ClientContext ctx;
  options_.am->Prepare(ctx);
  control::ExecResult result;
  grpc::Status status;
  int done_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (done_fd < 0) {
    reply.set_error("eventfd: " + std::string(std::strerror(errno)));
    return reply;
  }
  options_.am->stub().async()->Exec(&ctx, &exec, &result, [&status, done_fd](grpc::Status s) {
    status = std::move(s);
    uint64_t one = 1;
    (void)!::write(done_fd, &one, sizeof(one));
  });
  // Until the command has ended: an agent that goes away (Open MPI gave up on it), or the
  // launcher's end, cancels the call, and the AM stops the command. Whatever happens, this
  // returns only after the callback ran: it writes to `status` and `done_fd`.
  bool cancelled = false;
  while (true) {
    if (cancelled) {
      // Only the callback is left to wait for, which a cancelled call gets soon. The agent's
      // hang-up and the cancel eventfd stay readable: polled again, they would spin.
      pollfd done{done_fd, POLLIN, 0};
      if (::poll(&done, 1, -1) > 0 && (done.revents & POLLIN)) break;
      continue;
    }
    pollfd fds[3] = {{done_fd, POLLIN, 0}, {fd, POLLRDHUP, 0}, {cancel_fd_, POLLIN, 0}};
    int ready = ::poll(fds, 3, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready > 0 && (fds[0].revents & POLLIN)) break;
    // The agent went away, the launcher ends, or the agent can no longer be watched (poll failed).
    if (ready < 0 || fds[1].revents || fds[2].revents) {
      cancelled = true;
      ctx.TryCancel();
    }
  }
  ::close(done_fd);
  std::string where = req.host() + " (" + target->ToString() + ")";
  if (!status.ok()) {
    std::string why = status.error_message();
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) why = "the AM cannot be reached: " + why;
    if (status.error_code() == grpc::StatusCode::CANCELLED && stopping_) why = "the launcher is ending";
    reply.set_error("cannot run the command on " + where + ": " + why);
    spdlog::warn("mpi-rsh: {}", reply.error());
    return reply;
  }
  spdlog::info("mpi-rsh: the command in {} ended: {}", target->ToString(),
               ExitInfo{result.exit_code(), result.signal()}.Describe());
  reply.set_exit_code(result.exit_code());
  reply.set_signal(result.signal());
  return reply;
}

}  // namespace loom::executor
