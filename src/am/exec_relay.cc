#include "am/exec_relay.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace loom::am {

void ExecRelay::Exec(uint64_t call, const TaskId& target, const std::string& command, Done done) {
  int64_t guest = next_guest_++;
  Call& c = calls_[guest];
  c.call = call;
  c.target = target;
  c.command = command;
  c.done = std::move(done);
  by_call_[call] = guest;
  if (channels_.count(target)) {
    Send(guest, c);
  } else {
    spdlog::info("guest {} for {} waits for its executor's Guests stream", guest, target.ToString());
  }
}

void ExecRelay::Send(int64_t guest, Call& c) {
  control::GuestCommand cmd;
  cmd.set_id(guest);
  // A call cancelled while its target had no stream: its guest may run there (sent on the stream
  // before), so it is stopped, never started again.
  if (c.cancelled) {
    cmd.set_stop(true);
  } else {
    cmd.set_command(c.command);
  }
  channels_.at(c.target)->Send(cmd);
  c.sent = c.ever_sent = true;
}

void ExecRelay::Cancel(uint64_t call) {
  auto it = by_call_.find(call);
  if (it == by_call_.end()) return;
  int64_t guest = it->second;
  Call& c = calls_.at(guest);
  if (!c.ever_sent) {
    Done done = std::move(c.done);
    by_call_.erase(it);
    calls_.erase(guest);
    done(Status::Cancelled("the caller went away"), {});
    return;
  }
  spdlog::info("stopping guest {} in {}: its caller went away", guest, c.target.ToString());
  c.cancelled = true;
  // Without a stream now, the stop goes down the next one (Attach); its exit still answers.
  if (channels_.count(c.target)) Send(guest, c);
}

void ExecRelay::Attach(const TaskId& task, std::shared_ptr<GuestChannel> channel) {
  auto old = channels_.find(task);
  if (old != channels_.end() && old->second != channel) {
    // The executor opened a new stream before the AM saw its last one end: that one is ended
    // now, and what was sent down it may be lost with it.
    old->second->Close(Status::Aborted("replaced by a newer Guests stream of " + task.ToString()));
    Unsend(task);
  }
  channels_[task] = std::move(channel);
  for (auto& [guest, c] : calls_) {
    if (c.target == task && !c.sent) Send(guest, c);
  }
}

void ExecRelay::Detach(const std::shared_ptr<GuestChannel>& channel) {
  for (auto it = channels_.begin(); it != channels_.end(); ++it) {
    if (it->second == channel) {
      TaskId task = it->first;
      channels_.erase(it);
      Unsend(task);
      return;
    }
  }
}

void ExecRelay::Unsend(const TaskId& task) {
  // A stream that broke drops the commands it had not written yet (and a write is not a
  // delivery): every open call of its task goes down the next stream again. The executor starts
  // each guest id once, and ignores it when it comes again.
  for (auto& [guest, c] : calls_) {
    if (c.target == task) c.sent = false;
  }
}

Status ExecRelay::Exited(const TaskId& task, const control::GuestExit& exit) {
  auto it = calls_.find(exit.id());
  // Sent or not right now: a guest sent down a stream that broke since still runs, and ends.
  if (it == calls_.end() || !(it->second.target == task) || !it->second.ever_sent) {
    return Status::InvalidArgument(task.ToString() + " has no guest " + std::to_string(exit.id()));
  }
  Call c = std::move(it->second);
  calls_.erase(it);
  by_call_.erase(c.call);
  if (!exit.error().empty()) {
    c.done(Status::FailedPrecondition(task.ToString() + " could not start the command: " + exit.error()), {});
    return Status::Ok();
  }
  control::ExecResult result;
  result.set_exit_code(exit.exit_code());
  result.set_signal(exit.signal());
  c.done(Status::Ok(), result);
  return Status::Ok();
}

std::vector<TaskId> ExecRelay::Targets() const {
  std::vector<TaskId> out;
  for (const auto& [guest, c] : calls_) {
    if (std::find(out.begin(), out.end(), c.target) == out.end()) out.push_back(c.target);
  }
  return out;
}

void ExecRelay::FailCallsTo(const TaskId& task, const Status& why) {
  std::vector<Done> failed;
  for (auto it = calls_.begin(); it != calls_.end();) {
    if (it->second.target == task) {
      by_call_.erase(it->second.call);
      failed.push_back(std::move(it->second.done));
      it = calls_.erase(it);
    } else {
      ++it;
    }
  }
  // Answered after the bookkeeping: an answer may come back into the relay.
  for (Done& done : failed) done(why, {});
}

void ExecRelay::Shutdown(const Status& why) {
  std::map<int64_t, Call> calls = std::move(calls_);
  calls_.clear();
  by_call_.clear();
  std::map<TaskId, std::shared_ptr<GuestChannel>> channels = std::move(channels_);
  channels_.clear();
  for (auto& [guest, c] : calls) c.done(why, {});
  for (auto& [task, channel] : channels) channel->Close(Status::Ok());
}

}  // namespace loom::am
