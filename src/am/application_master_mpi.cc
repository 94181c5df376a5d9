// The AM's side of MPI without ssh (loom.application.framework=mpi; runtime/mpi.h): the
// tasks' MpiRole in their cluster spec, and the relay of its Exec calls to the tasks that hold the ranks
// (am/exec_relay.h). Every handler posts onto the AM's event loop, as the others do.

#include <spdlog/spdlog.h>

#include "am/application_master.h"
#include "core/subprocess.h"
#include "runtime/mpi.h"

namespace loom::am {

namespace {

TaskId IdOf(const control::TaskRef& ref) { return {ref.type(), ref.index()}; }

// A command for the log: Open MPI's daemon line is long.
std::string Abbreviated(const std::string& command) {
  constexpr size_t kShown = 120;
  return command.size() <= kShown ? command : command.substr(0, kShown) + "...";
}

}  // namespace

void ApplicationMaster::AddMpiRole(const TaskId& id, control::ClusterSpecResponse* resp) const {
  const JobSpec& spec = opts_.spec;
  if (spec.framework != Framework::kMpi) return;
  if (runtime::IsMpiLauncher(spec, id)) {
    resp->mutable_mpi()->set_hostfile(runtime::MpiHostfile(spec));
  } else if (runtime::HoldsMpiRanks(spec, id.type)) {
    // Its loom.<type>.processes are the ranks Open MPI starts in it (its slots), not processes
    // of a command of its own: it has none.
    resp->clear_command();
    resp->clear_processes();
    resp->set_gpus_per_process(0);
    resp->mutable_mpi()->set_hosts_ranks(true);
  }
}

void ApplicationMaster::FailExecCallsToEndedTasks() {
  for (const TaskId& target : exec_relay_.Targets()) {
    const TaskRecord* r = tracker_->Find(target);
    if (!r || !IsTerminal(r->state)) continue;
    std::string why = target.ToString() + " ended (" + TaskStateName(r->state) + ")";
    if (!r->diagnostics.empty()) why += ": " + r->diagnostics;
    exec_relay_.FailCallsTo(target, Status::FailedPrecondition(why));
  }
}

void ApplicationMaster::HandleExec(const control::ExecRequest& req, uint64_t call, Reply<control::ExecResult> reply) {
  loop_.Post([this, req, call, reply] {
    // First: once the job ends its containers go, and a caller's would no longer match.
    if (IsTerminal(tracker_->state())) return reply(Status::Aborted("the job is ending"), {});
    Status error;
    auto caller = CheckTask(req.task(), &error, req.container_id());
    if (!caller) return reply(error, {});
    if (!runtime::IsMpiLauncher(opts_.spec, *caller)) {
      spdlog::warn("refused Exec from {}: only the launcher of an MPI job may start commands in other tasks",
                   caller->ToString());
      return reply(Status::PermissionDenied(caller->ToString() + " may not start commands in other tasks: only " +
                                            "the launcher of a job with " +
                                            opts_.spec.KeyName("loom.application.framework") + "=mpi may"),
                   {});
    }
    TaskId target = IdOf(req.target());
    const TaskRecord* r = tracker_->Find(target);
    if (!r || !runtime::HoldsMpiRanks(opts_.spec, target.type)) {
      return reply(Status::NotFound("no task " + target.ToString() + " holds ranks in this job"), {});
    }
    if (IsTerminal(r->state)) {
      return reply(Status::FailedPrecondition(target.ToString() + " is not running: it ended (" +
                                              TaskStateName(r->state) + ")"),
                   {});
    }
    spdlog::info("{} starts in {}: {}", caller->ToString(), target.ToString(), Abbreviated(req.command()));
    exec_relay_.Exec(call, target, req.command(), reply);
  });
}

void ApplicationMaster::HandleExecCancelled(uint64_t call) {
  loop_.Post([this, call] { exec_relay_.Cancel(call); });
}

void ApplicationMaster::HandleGuestsOpened(const control::GuestsRequest& req, std::shared_ptr<GuestChannel> channel) {
  loop_.Post([this, req, channel] {
    Status error;
    // A stale executor of the task (its container replaced) must not take the live one's stream.
    auto id = CheckTask(req.task(), &error, req.container_id());
    if (!id) return channel->Close(error);
    if (!runtime::HoldsMpiRanks(opts_.spec, id->type)) {
      return channel->Close(Status::FailedPrecondition(id->ToString() + " holds no MPI ranks"));
    }
    const TaskRecord* r = tracker_->Find(*id);
    if (IsTerminal(tracker_->state()) || IsTerminal(r->state)) return channel->Close(Status::Aborted("task is ending"));
    exec_relay_.Attach(*id, channel);
  });
}

void ApplicationMaster::HandleGuestsClosed(std::shared_ptr<GuestChannel> channel) {
  loop_.Post([this, channel] { exec_relay_.Detach(channel); });
}

void ApplicationMaster::HandleGuestExited(const control::GuestExit& req, Reply<control::Ack> reply) {
  loop_.Post([this, req, reply] {
    Status error;
    auto id = CheckTask(req.task(), &error, req.container_id());
    if (!id) return reply(error, {});
    if (!req.error().empty()) {
      spdlog::warn("guest {} of {} did not start: {}", req.id(), id->ToString(), req.error());
    } else {
      spdlog::info("guest {} of {} ended: {}", req.id(), id->ToString(),
                   ExitInfo{req.exit_code(), req.signal()}.Describe());
    }
    reply(exec_relay_.Exited(*id, req), {});
  });
}

}  // namespace loom::am
