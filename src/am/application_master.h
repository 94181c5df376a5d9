#pragma once
// ApplicationMaster: the job's brain, the same on every backend. It asks its ContainerBroker for
// one container per task, launches an executor in each, completes the gang and hands out the
// cluster spec the moment the last task registers, watches heartbeats, applies the failure
// policy (JobTracker), and records every transition in events.jsonl. A failed gang is started
// again up to loom.am.retry-count times, as in TonY; when the job ends it stops whatever still
// runs and writes the final status once.
//
// Two stages (loom.application.prepare-stage / training-stage, TonY's TaskScheduler): only the
// first stage's containers are asked for at first; the training stage's once every tracked
// prepare task has succeeded (a prepare task that does not succeed fails the job, naming it).
// Each stage is a gang of its own: its cluster spec is published when its tasks have
// registered, and the allocation timeout runs from its request. A gang restart begins again
// with the prepare stage, as TonY rebuilds its whole session.
//
// Threading: all job state lives on one EventLoop thread. gRPC handlers and broker callbacks
// only post closures onto it, except heartbeats, which touch per-task atomics only;
// RequestKill() is safe from any thread (a signal thread).

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "am/control_service.h"
#include "am/exec_relay.h"
#include "am/rendezvous_server.h"
#include "cluster/am_side.h"
#include "cluster/container_broker.h"
#include "core/clock.h"
#include "core/event_loop.h"
#include "core/job_spec.h"
#include "core/job_state.h"
#include "history/event_log.h"
#include "history/job_dir.h"
#include "history/metrics_log.h"
#include "runtime/framework_env.h"

namespace loom::am {

struct AmOptions {
  JobSpec spec;
  history::JobDir job_dir;
  std::string job_id;
  std::string secret;
  // Also accepted, for JobState alone (a client following the job), where it differs from
  // `secret` (setup.executor_secret); empty: none.
  std::string observer_secret;
  // How the backend placed the AM and what its executors get (cluster/am_side.h): the secret
  // file, handed to executors by path; the addresses; the executor binary and environment;
  // where the AM runs; how long it lingers for a client that mirrors its events.
  cluster::AmSetup setup;
  std::string status_url;  // the AM's status page (am/status_page.h), in AM_STARTED; "" if none
  // What its timers and heartbeat ages run on: a test drives every timeout with a FakeClock.
  Clock* clock = &Clock::Real();
};

// A reported exit in the shell's convention: the code, or 128 + the signal that ended it.
inline int ReportedExitCode(const control::ExitReport& r) { return r.signal() ? 128 + r.signal() : r.exit_code(); }

class ApplicationMaster : public cluster::ContainerEvents, public ControlHandler {
 public:
  // `broker` and `events` must outlive the AM.
  ApplicationMaster(AmOptions options, cluster::ContainerBroker& broker, history::EventLog& events);
  ~ApplicationMaster() override;

  // Runs the job to its end; returns the final state. Blocks.
  Result<JobState> Run();
  // Ends the job as KILLED with `reason` (first cause wins). Thread-safe.
  void RequestKill(const std::string& reason);
  // The port the control plane listens on, once Run() has started it (for tests).
  int port() const { return port_; }

  // cluster::ContainerEvents
  void OnAllocated(const cluster::Container& container) override;
  void OnCompleted(const cluster::ContainerExit& exit) override;
  void OnContainerError(const TaskId& task, const Status& error) override;

  // ControlHandler
  void HandleRegister(const control::RegisterRequest& req, Reply<control::RegisterResponse> reply) override;
  void HandleGetClusterSpec(const control::ClusterSpecRequest& req, Reply<control::ClusterSpecResponse> reply) override;
  void HandleTaskStarted(const control::TaskStartedRequest& req, Reply<control::Ack> reply) override;
  Status HandleHeartbeat(const control::HeartbeatRequest& req, control::HeartbeatResponse* resp) override;
  void HandleReportExit(const control::ExitReport& req, Reply<control::Ack> reply) override;
  // Records the job's TensorBoard (a TENSORBOARD event: status page, `loom status`, submit).
  void HandleRegisterTensorBoard(const control::TensorBoardRequest& req, Reply<control::Ack> reply) override;
  void HandleJobState(const control::JobStateRequest& req, Reply<control::JobStateResponse> reply) override;
  // MPI without ssh (am/exec_relay.h; defined in application_master_mpi.cc): only the launcher
  // may Exec, and only in a task that holds ranks and has not ended.
  void HandleExec(const control::ExecRequest& req, uint64_t call, Reply<control::ExecResult> reply) override;
  void HandleExecCancelled(uint64_t call) override;
  void HandleGuestsOpened(const control::GuestsRequest& req, std::shared_ptr<GuestChannel> channel) override;
  void HandleGuestsClosed(std::shared_ptr<GuestChannel> channel) override;
  void HandleGuestExited(const control::GuestExit& req, Reply<control::Ack> reply) override;
  // Complete lines of events.jsonl from `offset` into resp (events, events_end). Any thread.
  void ReadEventsFrom(int64_t offset, control::JobStateResponse* resp) const;
  void WaitForEventsFetched();

 private:
  // One per task, created in the constructor; the map is never changed afterwards, so gRPC
  // threads may look slots up. Plain fields belong to the loop thread; the atomics are what
  // heartbeats touch, so that the most frequent call never has to wake the loop.
  struct TaskSlot {
    std::optional<cluster::Container> container;
    std::optional<control::ExitReport> report;
    // The container whose task's end its executor reported and the AM recorded; the container
    // itself ends a moment later (its executor exiting), which only the next gang waits for.
    std::string end_recorded;
    bool stop_requested = false;
    std::string stop_reason;  // why the AM stopped it, for its row ("tracked tasks finished")
    int restarts = 0;        // of this task alone, under its type's restart-policy
    int previous_port = 0;   // asked for again by a restarted task, so the cluster spec can stay
    int tb_port = 0;         // the TensorBoard port its executor registered (TB_PORT), 0: none
    std::vector<Reply<control::ClusterSpecResponse>> spec_waiters;
    std::atomic<int64_t> last_heartbeat_ns{0};  // ns on opts_.clock
    std::atomic<int64_t> rss_bytes{0};
    int64_t recorded_rss = 0;     // in the last TASK_METRICS event, and when (steady ns)
    int64_t recorded_rss_ns = 0;
    std::atomic<int32_t> gpu_utilization_percent{0};  // latest GPU sample (gpu-metrics), 0: none
    std::atomic<int64_t> gpu_memory_bytes{0};
    // The executor's last sample recorded in metrics.jsonl (HeartbeatRequest.sample_seq): a
    // heartbeat repeats it until the next. 0 again for a new run.
    std::atomic<uint32_t> sample_seq{0};
    std::atomic<bool> stop{false};  // answered to heartbeats: stop_requested, or the job is over
  };

  Status StartServer();
  // Asks for the containers of the stage that runs first; a training stage's tasks wait,
  // PENDING, for the prepare stage (their rows say so).
  void RequestContainers();
  // Asks for the tasks' containers in one request and records each task with `extra`; false
  // (and the job failed) when the broker refuses.
  bool RequestGang(const std::vector<TaskId>& ids, const nlohmann::json& extra = nlohmann::json::object());
  // Starts the training stage once the prepare stage has succeeded (JobTracker decides): its
  // containers are asked for now, as a gang of their own with its own allocation timeout.
  void MaybeStartTrainingStage();
  // Loop-thread helpers.
  TaskSlot* Slot(const TaskId& id);
  // The task `ref` names; with a `container_id`, also checks that it is the task's current
  // container (FailedPrecondition otherwise: a stale executor), as Register does.
  std::optional<TaskId> CheckTask(const control::TaskRef& ref, Status* error, const std::string& container_id = "");
  // Stops `ids`; each ends KILLED, exit 143, "stopped by the AM: <reason>" (empty: the reason
  // follows from the job's state, e.g. "tracked tasks finished").
  void StopTasks(const std::vector<TaskId>& ids, const std::string& reason = "");
  void RequestStop(TaskSlot& slot);
  // "stopped by the AM: <its stop_reason>".
  static std::string StopDiagnostics(const TaskSlot& slot);
  // Timeouts of the gang (allocation: per stage, from its request), of one container
  // (registration) and between groups.
  void ArmAllocationTimeout();
  void ArmRegistrationTimeout(const TaskId& id, const std::string& container_id);
  void ArmDependencyTimeouts();
  int64_t NowNs() const;  // on opts_.clock
  // Ends the job as FAILED; `retryable` lets loom.am.retry-count restart the gang.
  void Fail(const std::string& reason, bool retryable = true);
  // Starts the whole gang again (loom.am.retry-count): new containers, LOOM_RESTART_COUNT+1.
  void StartNextAttempt();
  // Restarts one failed task if its type's restart-policy allows; returns whether it did.
  // Whether the task, having exited with `exit_code`, is restarted alone (its restart-policy
  // and max-restarts).
  bool CanRestartTask(const TaskId& id, int exit_code);
  bool MaybeRestartTask(const TaskId& id, int exit_code, const std::string& diagnostics);
  void AfterTransition();
  void CheckHeartbeats();
  // Appends a TASK_METRICS event with the RSS of running tasks, so that `loom status` shows it
  // while they run: a task's first sample at once, then a change of 10% at most every 10 s
  // (25% and 16 MiB at most every second, while it grows fast).
  void RecordMetrics();
  // Appends the heartbeat's sample to metrics.jsonl (history/metrics_log.h); any thread. When
  // the file is full, says so once (JOB_WARNING).
  void RecordSample(const TaskId& id, const control::HeartbeatRequest& req);
  void AnswerSpecWaiters();
  // Builds the cluster spec from the registrations so far and answers whoever may have it.
  void PublishClusterSpec();
  control::ClusterSpecResponse SpecFor(const TaskId& id) const;
  void RecordTask(const TaskId& id, nlohmann::json extra = nlohmann::json::object());
  // A task's container ended (`container_gone`), or its executor reported the task's end
  // first (loop thread): the first decides the task's state; the container's own end then only
  // frees its slot.
  void TaskEnded(const cluster::ContainerExit& exit, bool container_gone);
  std::set<std::string> warned_;  // JOB_WARNING messages already recorded (loop thread)
  std::string DescribeExit(const TaskId& id, const cluster::ContainerExit& exit) const;
  void Finalize();
  // Framework mpi (application_master_mpi.cc): the task's MpiRole in its cluster spec (the
  // launcher's mpirun line and hostfile), and the Exec calls whose target has ended, failed.
  void AddMpiRole(const TaskId& id, control::ClusterSpecResponse* resp) const;
  void FailExecCallsToEndedTasks();

  AmOptions opts_;
  cluster::ContainerBroker& broker_;
  history::EventLog& events_;
  std::optional<history::MetricsLog> metrics_log_;  // none without a job dir (some tests)
  std::atomic<bool> metrics_log_failed_{false};      // warned once
  EventLoop loop_;
  std::optional<JobTracker> tracker_;  // one per attempt
  int attempt_ = 0;                     // 0 for the first run, then one more per gang restart
  bool retryable_ = true;               // false once the job failed for a reason a restart cannot fix
  bool kill_requested_ = false;
  std::set<size_t> armed_dependencies_;  // indices into spec.dependency_timeouts, this attempt
  std::map<TaskId, TaskSlot> slots_;
  runtime::ClusterSpec cluster_spec_;
  ExecRelay exec_relay_;  // framework mpi; loop thread only
  bool spec_ready_ = false;
  std::atomic<bool> job_over_{false};
  bool finalized_ = false;
  std::unique_ptr<ControlServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  // framework=horovod: the gloo rendezvous store horovodrun would serve, started in Run().
  std::unique_ptr<RendezvousServer> rendezvous_;
  mutable std::atomic<int64_t> events_fetched_to_{-1};
  std::atomic<bool> loop_done_{false};  // by a mirroring client; -1: none ever
};

}  // namespace loom::am
