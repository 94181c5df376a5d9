#pragma once
// ExecRelay: the AM's part of MPI without ssh (control.proto's MpiRole). The launcher's Exec
// calls each name a rank-holding task and a command (Open MPI's daemon); the relay hands the
// command to that task's executor over its Guests stream, queued until the stream is open, and
// answers the call when the executor reports the guest's end (GuestExited). A call whose target
// ends first, or that is still open when the job ends, fails with a reason; a call whose caller
// went away (Cancel) has its guest stopped.
//
// Not thread-safe: the AM calls it on its event loop only. The channels it holds are
// thread-safe themselves (am/control_service.h).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "am/control_service.h"
#include "core/job_spec.h"

namespace loom::am {

class ExecRelay {
 public:
  using Done = Reply<control::ExecResult>;

  // Runs `command` in `target` as the guest of Exec call `call`, now if the target's Guests
  // stream is open, else once it is. `done` is answered exactly once: the guest's exit, or an
  // error (FailedPrecondition: the command could not be started there, or the target ended;
  // Aborted: the job ended; Cancelled: the caller went away before it was sent).
  void Exec(uint64_t call, const TaskId& target, const std::string& command, Done done);
  // The caller of `call` went away: a guest never sent is dropped, one sent is stopped, now or
  // down the task's next stream (its exit still answers the call). Unknown calls are ignored.
  void Cancel(uint64_t call);

  // `task`'s executor opened its Guests stream: every command queued for it is sent now. A
  // second stream of the same task replaces the first, which is closed (Aborted), and every
  // open call of the task is sent again down the new one.
  void Attach(const TaskId& task, std::shared_ptr<GuestChannel> channel);
  // A stream ended. Its calls stay open: their guests still run, and report on their own call.
  // Sent or not (a broken stream drops what it has not written), each is sent again down the
  // task's next stream: the executor ignores a guest id it has already taken.
  void Detach(const std::shared_ptr<GuestChannel>& channel);

  // `task` reports the end of its guest `exit.id()`: answers its call. InvalidArgument when
  // `task` has no such guest (never sent to it, or already answered).
  Status Exited(const TaskId& task, const control::GuestExit& exit);

  // The tasks that have open calls, for the AM to fail those whose task has ended.
  std::vector<TaskId> Targets() const;
  // Fails every open call to `task` with `why` (its guests are gone with it).
  void FailCallsTo(const TaskId& task, const Status& why);
  // The job ended: fails every open call with `why` and ends every stream.
  void Shutdown(const Status& why);

  size_t open_calls() const { return calls_.size(); }

 private:
  struct Call {
    uint64_t call = 0;
    TaskId target;
    std::string command;
    Done done;
    bool sent = false;       // down the task's current stream
    bool ever_sent = false;  // down some stream: its guest may run
    bool cancelled = false;  // its caller went away: stop the guest, never start it
  };
  // Sends `c`'s command, or its stop if cancelled, down its target's stream, which is open.
  void Send(int64_t guest, Call& c);
  // `task`'s stream is gone: its calls are to be sent again down the next one.
  void Unsend(const TaskId& task);

  std::map<int64_t, Call> calls_;         // by guest id
  std::map<uint64_t, int64_t> by_call_;   // Exec call -> guest id
  std::map<TaskId, std::shared_ptr<GuestChannel>> channels_;
  int64_t next_guest_ = 1;
};

}  // namespace loom::am
