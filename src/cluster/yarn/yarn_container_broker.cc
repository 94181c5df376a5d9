#include "cluster/yarn/yarn_container_broker.h"

#include <algorithm>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "control/auth.h"
#include "control/executor_env.h"
#include "core/clock_wait.h"
#include "core/files.h"
#include "core/forwarded_env.h"
#include "core/strings.h"
#include "hadoop/ipc/namenode_client.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::cluster::yarn {

namespace ypb = ::hadoop::yarn;

std::string WithoutRepeatedBlocks(const std::string& diagnostics) {
  // "[2026-11-22 18:46:25.123]Container exited ..." : the timestamp differs between repeats.
  auto key = [](std::string_view block) {
    while (!block.empty() && (block.front() == '\n' || block.front() == ' ')) block.remove_prefix(1);
    if (!block.empty() && block.front() == '[') {
      if (size_t close = block.find(']'); close != std::string_view::npos) block.remove_prefix(close + 1);
    }
    while (!block.empty() && (block.back() == '\n' || block.back() == ' ')) block.remove_suffix(1);
    return std::string(block);
  };
  std::vector<std::string> seen;
  std::string out;
  size_t start = 0;
  while (start < diagnostics.size()) {
    size_t end = diagnostics.find("\n\n", start);
    std::string_view block = std::string_view(diagnostics).substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::string k = key(block);
    if (!k.empty() && std::find(seen.begin(), seen.end(), k) == seen.end()) {
      seen.push_back(k);
      if (!out.empty()) out += "\n";
      out += Trim(std::string(block));
    }
    if (end == std::string::npos) break;
    start = end + 2;
  }
  return out;
}

namespace {

// YARN's negative exit statuses (ContainerExitStatus), for diagnostics.
std::string ExitStatusName(int s) {
  switch (s) {
    case -100: return "ABORTED";
    case -101: return "DISKS_FAILED";
    case -102: return "PREEMPTED";
    case -103: return "KILLED_EXCEEDED_VMEM";
    case -104: return "KILLED_EXCEEDED_PMEM";
    case -105: return "KILLED_BY_APPMASTER";
    case -106: return "KILLED_BY_RESOURCEMANAGER";
    case -107: return "KILLED_AFTER_APP_COMPLETION";
    case -108: return "KILLED_BY_CONTAINER_SCHEDULER";
    default: return "INVALID";
  }
}

// The RM will never serve this attempt again: its token is refused, the application was
// killed or failed (the attempt is gone), or the RM told the AM to shut down.
bool IsFatal(const Status& s) {
  if (s.code() == StatusCode::kUnauthenticated || s.code() == StatusCode::kFailedPrecondition) return true;
  std::string cls = hadoop::RemoteExceptionClass(s);
  return EndsWith(cls, "ApplicationAttemptNotFoundException") || EndsWith(cls, "ApplicationNotFoundException") ||
         s.message().find("shut down") != std::string::npos;
}

// One ask per scheduler key and resource name, the last queued: asks are totals, and the RM
// would keep the last of several anyway.
std::vector<ypb::ResourceRequestProto> LastAskPerName(std::vector<ypb::ResourceRequestProto> asks) {
  std::vector<ypb::ResourceRequestProto> out;
  std::set<std::pair<int64_t, std::string>> seen;
  for (auto it = asks.rbegin(); it != asks.rend(); ++it) {
    if (seen.insert({it->allocation_request_id(), it->resource_name()}).second) out.push_back(std::move(*it));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// The executor's command line as the NodeManager runs it: `bash -c "<commands joined>"`.
std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> quoted;
  for (const std::string& a : argv) quoted.push_back(ShellQuote(a));
  return Join(quoted, " ") + " 1><LOG_DIR>/executor.log 2>&1";
}

}  // namespace

YarnContainerBroker::YarnContainerBroker(YarnBrokerOptions options) : opts_(std::move(options)) {
  for (const ManifestNode& n : opts_.manifest.nodes) nodes_[n.host] = NodeView{n, true};
}

YarnContainerBroker::~YarnContainerBroker() { Shutdown(std::chrono::milliseconds(0)); }

Status YarnContainerBroker::Start(ContainerEvents* events) {
  events_ = events;
  // RM HA: every RM's scheduler address; the AMRMToken is valid on each (FailoverIpcClient).
  LOOM_ASSIGN_OR_RETURN(std::vector<hadoop::HostPort> schedulers, hadoop::ParseHostPortList(opts_.manifest.scheduler));
  const hadoop::HostPort& scheduler = schedulers.front();
  hadoop::RmAddresses addresses;
  for (const hadoop::HostPort& s : schedulers) addresses.emplace_back(s.host, s.port);
  rm_ = std::make_unique<hadoop::AmRmClient>(addresses, opts_.amrm_token,
                                     hadoop::FailoverSettings{opts_.manifest.rm_failover_max_attempts,
                                                      opts_.manifest.rm_failover_sleep_base_ms,
                                                      opts_.manifest.rm_failover_sleep_max_ms});
  int port = opts_.am_port ? opts_.am_port() : -1;
  auto registered = rm_->Register(opts_.nm_host, port, opts_.tracking_url);
  if (!registered.ok()) return registered.status().WithContext("registering with the RM scheduler at " + scheduler.ToString());
  spdlog::info("registered with the RM scheduler at {} (queue {}, largest container {} MiB / {} vcores)",
               scheduler.ToString(), registered->queue(), registered->maximumcapability().memory(),
               registered->maximumcapability().virtual_cores());
  clock_watch_ = opts_.clock->Watch([this] {
    std::lock_guard<std::mutex> lock(mu_);  // a waiter between its check and its wait misses no jump
    wake_.notify_all();
  });
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return Status::Ok();
}

void YarnContainerBroker::HeartbeatLoop() {
  int failures = 0;
  std::unique_lock<std::mutex> lock(mu_);
  // The AM asks for its gang right after Start: the first allocate waits for those asks (a
  // heartbeat at most) instead of going out empty and making them wait for its answer.
  WaitOnClock(*opts_.clock, wake_, lock, opts_.clock->Now() + opts_.heartbeat,
              [this] { return stopping_ || !asks_.empty(); });
  while (!stopping_) {
    std::vector<ypb::ResourceRequestProto> asks = LastAskPerName(std::move(asks_));
    std::vector<ypb::ContainerIdProto> releases = std::move(releases_);
    asks_.clear();
    releases_.clear();
    lock.unlock();
    auto response = rm_->Allocate(asks, releases, 0.0f);
    lock.lock();
    if (response.ok()) {
      failures = 0;
      lock.unlock();
      Handle(*response);
      lock.lock();
    } else {
      // Put back what was not delivered; asks are totals, so re-sending them is safe.
      asks_.insert(asks_.begin(), asks.begin(), asks.end());
      releases_.insert(releases_.begin(), releases.begin(), releases.end());
      ++failures;
      bool fatal = IsFatal(response.status()) || failures >= 30;
      spdlog::warn("allocate failed ({}): {}", failures, response.status().ToString());
      if (fatal) {
        fatal_ = response.status().WithContext("the RM scheduler refused the AM");
        // Nothing will report on our containers any more (YARN killed or failed the
        // application): they are gone as far as the job is concerned.
        std::vector<TaskId> lost;
        for (auto& [id, p] : pending_) lost.push_back(p.task);
        pending_.clear();
        std::vector<ContainerExit> ended;
        for (auto& [id, h] : held_) {
          if (h.completed) continue;
          h.completed = true;
          ended.push_back({id, h.task, 137, fatal_.message()});
        }
        lock.unlock();
        for (const TaskId& t : lost) events_->OnContainerError(t, fatal_);
        for (const ContainerExit& e : ended) events_->OnCompleted(e);
        lock.lock();
        break;
      }
    }
    if (!response.ok()) {
      // Back off; the asks put back must not wake us at once.
      auto backoff = std::min<std::chrono::milliseconds>(opts_.heartbeat * failures, std::chrono::seconds(5));
      WaitOnClock(*opts_.clock, wake_, lock, opts_.clock->Now() + backoff, [this] { return stopping_; });
      continue;
    }
    if (!pending_.empty() && opts_.clock->Now() >= next_pending_report_) {
      // A gang that waits says what it waits for, and why.
      next_pending_report_ = opts_.clock->Now() + opts_.pending_report_interval;
      std::vector<PendingRequest> waiting = PendingLocked();
      lock.unlock();
      if (opts_.on_pending) {
        opts_.on_pending(waiting);
      } else {
        for (const PendingRequest& p : waiting) spdlog::info("container wanted: {}", p.ToString());
      }
      lock.lock();
    }
    // Fast while containers are wanted, and while Shutdown waits for the RM to report them
    // completed (the job's end waits on that).
    auto interval = pending_.empty() && !draining_ ? opts_.heartbeat : opts_.fast_heartbeat;
    WaitOnClock(*opts_.clock, wake_, lock, opts_.clock->Now() + interval,
                [this] { return stopping_ || heartbeat_now_ || !asks_.empty() || !releases_.empty(); });
    heartbeat_now_ = false;
  }
}

void YarnContainerBroker::Handle(const ypb::AllocateResponseProto& response) {
  std::vector<Container> allocated;
  std::vector<ContainerExit> completed;
  struct Released {
    std::string id, host, why;
  };
  std::vector<Released> released;
  {
    std::lock_guard<std::mutex> lock(mu_);
    UpdateNodesLocked(response);
    // Devices of containers that ended are free for those that come in the same answer.
    for (const ypb::ContainerStatusProto& st : response.completed_container_statuses()) {
      gpu_plan_.Free(hadoop::ContainerIdString(st.container_id()));
    }
    for (const ypb::ContainerProto& c : response.allocated_containers()) {
      std::string id = hadoop::ContainerIdString(c.id());
      // Its key: the request id, or (an RM before 2.9 sends none) the priority.
      int64_t key_id = c.allocation_request_id() >= 0 ? c.allocation_request_id() : c.priority().priority();
      // The task planned on the container's node, else the longest waiting one of its key
      // (placed on its rack or anywhere, after the scheduler's locality delay).
      auto it = pending_.end();
      for (auto p = pending_.begin(); p != pending_.end(); ++p) {
        if (p->second.key != key_id) continue;
        if (it == pending_.end()) it = p;
        if (p->second.node == c.nodeid().host()) {
          it = p;
          break;
        }
      }
      if (it == pending_.end() || stopping_) {
        releases_.push_back(c.id());  // more than was asked for (or too late): give it back
        Resources size{c.resource().memory(), c.resource().virtual_cores(), static_cast<int>(GpusOf(c.resource()))};
        std::string why = stopping_ ? "the job is ending"
                                    : "no task waits for a container of priority " +
                                          std::to_string(c.priority().priority()) + " and request id " +
                                          std::to_string(c.allocation_request_id()) + " (" + size.ToString() + ")";
        released.push_back({id, c.nodeid().host(), why});
        continue;
      }
      held_[id] = {it->second.task, c, false, false};
      allocated.push_back({id, it->second.task, c.nodeid().host(), GpuEnvLocked(id, c), hadoop::NodeIdString(c.nodeid()),
                           c.node_http_address()});
      int64_t key = it->second.key;
      pending_.erase(it);
      AskLocked(keys_[key]);  // the totals less this one, wherever YARN placed it
    }
    for (const ypb::ContainerStatusProto& st : response.completed_container_statuses()) {
      std::string id = hadoop::ContainerIdString(st.container_id());
      auto it = held_.find(id);
      if (it == held_.end() || it->second.completed) continue;
      it->second.completed = true;
      int status = st.exit_status();
      std::string diag = WithoutRepeatedBlocks(Trim(st.diagnostics()));
      ContainerExit exit{id, it->second.task, status >= 0 ? status : 1, diag};
      exit.by_cluster = status < 0;
      if (status < 0) {
        exit.diagnostics = "YARN exit status " + std::to_string(status) + " (" + ExitStatusName(status) + ")" +
                           (diag.empty() ? "" : ": " + diag);
      }
      completed.push_back(exit);
    }
  }
  for (const Released& r : released) {
    spdlog::warn("released container {} on {} unused: {}", r.id, r.host, r.why);
    if (opts_.on_released) opts_.on_released(r.id, r.host, r.why);
  }
  for (const Container& c : allocated) events_->OnAllocated(c);
  for (const ContainerExit& e : completed) events_->OnCompleted(e);
  wake_.notify_all();
}

std::map<std::string, std::string> YarnContainerBroker::GpuEnvLocked(const std::string& id, const ypb::ContainerProto& c) {
  std::map<std::string, std::string> env;
  const int gpus = static_cast<int>(GpusOf(c.resource()));
  if (gpus <= 0) return env;
  auto node = nodes_.find(c.nodeid().host());
  const int node_gpus = node != nodes_.end() ? static_cast<int>(node->second.node.gpus) : 0;
  bool overlap = false;
  control::ExecutorEnv wiring;
  wiring.planned_gpus = gpu_plan_.Assign(c.nodeid().host(), id, gpus, node_gpus, &overlap);
  if (overlap) {  // a node report behind the scheduler: YARN still counted them free
    spdlog::warn("{} on {}: the job's containers there hold the {} GPUs the node reported; some devices are planned twice",
                 id, c.nodeid().host(), node_gpus);
  }
  wiring.nm_web = opts_.manifest.nm_web_scheme + "://" + c.node_http_address();
  wiring.AddTo(env);
  return env;
}

Status YarnContainerBroker::Launch(const Container& container, const LaunchSpec& spec) {
  ypb::ContainerProto proto;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(container.id);
    if (it == held_.end()) return Status::NotFound("unknown container " + container.id);
    if (stopping_) return Status::Cancelled("container " + container.id + " is being stopped");
    proto = it->second.container;
  }
  std::string node = hadoop::NodeIdString(proto.nodeid());
  std::optional<hadoop::Token> nm_token = rm_->NmToken(node);
  if (!nm_token) return Status::FailedPrecondition("no NMToken for node " + node + " (the RM sends one with the first container there)");

  ypb::ContainerLaunchContextProto clc;
  for (const auto& [name, resource] : opts_.manifest.ExecutorResources()) {
    auto* entry = clc.add_localresources();
    entry->set_key(name);
    *entry->mutable_value() = resource;
  }
  for (const LocalResource& r : spec.resources) {
    // The AM's resources are the staged ones; anything else cannot reach another host.
    if (r.source == "." || r.name == "venv" || r.name == ".") continue;
    return Status::Unimplemented("resource " + r.source + " is not staged for YARN");
  }
  std::map<std::string, std::string> env = spec.env;
  for (const auto& [k, v] : container.env) env[k] = v;
  control::ExecutorEnv wiring;
  wiring.log_dir = "<LOG_DIR>";  // user stdout/stderr become the container's YARN logs
  wiring.host = "{{NM_HOST}}";   // the NodeManager expands it to its own host
  // The job secret rides in the container's credentials, never in HDFS; the executor takes
  // it from $HADOOP_TOKEN_FILE_LOCATION (cli/role_commands.cc).
  env.erase(control::kSecretFileEnv);  // the AM's file is not on that node
  wiring.secret_credential = kSecretCredentialAlias;
  // The HDFS delegation tokens beside them, for user code (the executor hands it a file of
  // the tokens alone: cli/role_commands.cc).
  clc.set_tokens(hadoop::SerializeCredentials(
      TaskContainerCredentials(opts_.job_secret, opts_.forwarded_secrets, opts_.delegation_tokens)));
  if (opts_.manifest.files.count(kSrcResource)) wiring.link_into_workdir = kSrcResource;
  wiring.AddTo(env);
  // loom.docker.*: the NodeManager runs this container in its type's image (docker_runtime.h).
  // The image's own PATH and locale stand there (the launch script keeps what the container
  // has): the AM's node's would hide the image's interpreters, or name a locale it lacks.
  if (auto docker = opts_.manifest.DockerEnvFor(container.task.type); !docker.empty()) {
    std::erase_if(env, [](const auto& kv) {
      return kv.first == "PATH" || kv.first == "LANG" || StartsWith(kv.first, "LC_");
    });
    for (const auto& [k, v] : docker) env[k] = v;
  }
  for (const auto& [k, v] : env) {
    auto* e = clc.add_environment();
    e->set_key(k);
    e->set_value(v);
  }
  clc.add_command(CommandLine(spec.argv));
  Status started = hadoop::NmClient::StartContainer(proto, *nm_token, clc);
  if (!started.ok()) return started.WithContext("starting " + container.id + " on " + node);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = held_.find(container.id); it != held_.end()) it->second.launched = true;
  return Status::Ok();
}

Status YarnContainerBroker::Stop(const std::string& container_id, std::chrono::milliseconds grace) {
  ypb::ContainerProto proto;
  bool launched = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = held_.find(container_id);
    if (it == held_.end() || it->second.completed) return Status::Ok();
    proto = it->second.container;
    launched = it->second.launched;
    releases_.push_back(proto.id());  // the RM completes a released container in any case
    wake_.notify_all();
  }
  // The NodeManager sends SIGTERM, then SIGKILL after its own delay; the executor uses the
  // SIGTERM to stop its user process within the job's grace.
  if (launched) {
    if (auto token = rm_->NmToken(hadoop::NodeIdString(proto.nodeid()))) {
      Status s = hadoop::NmClient::StopContainer(proto, *token);
      if (!s.ok()) spdlog::warn("stopping {}: {}", container_id, s.ToString());
    }
  }
  return Status::Ok();
}

void YarnContainerBroker::Shutdown(std::chrono::milliseconds grace) {
  std::vector<std::string> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!heartbeat_.joinable() && !rm_) return;
    for (auto& [id, h] : held_) {
      if (!h.completed) live.push_back(id);
    }
    // Cancel what is still wanted.
    pending_.clear();
    draining_ = true;
    heartbeat_now_ = true;
    for (auto& [id, key] : keys_) AskLocked(key);
  }
  wake_.notify_all();  // the next allocate now, at the fast pace
  spdlog::info("shutting down: {} containers still running", live.size());
  for (const std::string& id : live) (void)Stop(id, grace);
  // Wait for the RM to report them completed (the heartbeat keeps running meanwhile).
  auto deadline = opts_.clock->Now() + std::max(grace, std::chrono::milliseconds(3000));
  {
    std::unique_lock<std::mutex> lock(mu_);
    WaitOnClock(*opts_.clock, wake_, lock, deadline, [this] {
      if (!fatal_.ok()) return true;  // no allocate will report them any more
      for (auto& [id, h] : held_) {
        if (!h.completed) return false;
      }
      return true;
    });
    stopping_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (clock_watch_ != 0) opts_.clock->Unwatch(std::exchange(clock_watch_, 0));
  spdlog::info("every container is gone");
}

Status YarnContainerBroker::Finish(const std::string& state, const std::string& diagnostics) {
  if (!rm_) return Status::FailedPrecondition("never registered");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!fatal_.ok()) return fatal_;  // killed or failed by YARN: nothing to unregister from
  }
  ypb::FinalApplicationStatusProto status = state == "SUCCEEDED" ? ypb::APP_SUCCEEDED
                                            : state == "KILLED"  ? ypb::APP_KILLED
                                                                 : ypb::APP_FAILED;
  spdlog::info("unregistering from the RM: {}", state);
  // No final tracking URL: the AM's page dies with it, and with none the RM's proxy sends
  // users to the application's own page (rm-rest/05) instead of a dead port.
  return rm_->Finish(status, diagnostics, "", std::chrono::seconds(30));
}

std::string YarnContainerBroker::Describe() const {
  return "yarn (scheduler " + opts_.manifest.scheduler + ", application " + opts_.manifest.application_id + ")";
}

}  // namespace loom::cluster::yarn
