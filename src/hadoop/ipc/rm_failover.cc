#include "hadoop/ipc/rm_failover.h"

#include <algorithm>
#include <map>
#include <random>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/strings.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::hadoop {
namespace {

// The server last found active per address list and protocol, for the whole process: each
// `loom` client call builds a new client, and none should knock on the standby every time
// (Java keeps the proxy, and so its index, for the life of the YarnClient).
std::mutex g_memory_mu;
std::map<std::string, size_t>& ActiveMemory() {
  static auto* memory = new std::map<std::string, size_t>();
  return *memory;
}

bool IsConnectFailure(const Status& s) {
  // IpcClient's words for a connect that failed (ConnectException, NoRouteToHost,
  // UnknownHost, ConnectTimeout in Java) as opposed to a connection lost during a call.
  return s.code() == StatusCode::kUnavailable && StartsWith(s.message(), "cannot connect to ");
}

}  // namespace

bool FailoverPolicy::IsStandby(const Status& s) {
  return !s.ok() && RemoteExceptionClass(s) == kStandbyException;
}

FailoverPolicy::Action FailoverPolicy::Decide(const Status& failed, int failovers, double random01) const {
  Action a;
  if (failovers >= settings_.max_failovers) {
    a.reason = "failovers (" + std::to_string(failovers) + ") exceeded maximum allowed (" +
               std::to_string(settings_.max_failovers) + ", yarn.client.failover-max-attempts)";
    return a;
  }
  if (IsStandby(failed) || IsConnectFailure(failed)) {
    a.kind = Kind::kFailover;
    if (failovers > 0) {
      // calculateExponentialTime: min(base * 2^n, cap), then +/- 50% at random.
      int shift = std::min(failovers, 40);
      int64_t base = settings_.sleep_base_ms > (settings_.sleep_max_ms >> shift)
                         ? settings_.sleep_max_ms
                         : std::min(settings_.sleep_base_ms << shift, settings_.sleep_max_ms);
      a.sleep = std::chrono::milliseconds(static_cast<int64_t>(static_cast<double>(base) * (random01 + 0.5)));
    }
    return a;
  }
  if (!failed.ok() && failed.code() == StatusCode::kUnavailable) {
    a.kind = Kind::kFailover;  // lost mid-call: at once, the method being idempotent or at-most-once
    return a;
  }
  a.reason = "not a failover error";
  return a;
}

FailoverIpcClient::FailoverIpcClient(std::vector<IpcOptions> servers, FailoverSettings settings, Sleeper sleep,
                                     Random random)
    : policy_(settings), sleep_(std::move(sleep)), random_(std::move(random)) {
  for (const IpcOptions& o : servers) {
    memory_key_ += o.host + ":" + std::to_string(o.port) + ",";
    clients_.push_back(std::make_unique<IpcClient>(o));
  }
  memory_key_ += servers.empty() ? std::string() : servers.front().protocol;
  if (!sleep_) sleep_ = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  if (!random_) {
    random_ = [] {
      thread_local std::mt19937_64 gen{std::random_device{}()};
      return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
    };
  }
  std::lock_guard lock(g_memory_mu);
  if (auto it = ActiveMemory().find(memory_key_); it != ActiveMemory().end() && it->second < clients_.size()) {
    active_ = it->second;
  }
}

FailoverIpcClient::~FailoverIpcClient() = default;

size_t FailoverIpcClient::active() const {
  std::lock_guard lock(mu_);
  return active_;
}

Status FailoverIpcClient::Call(const std::string& method, const google::protobuf::Message& request,
                               google::protobuf::Message* response) {
  if (clients_.empty()) return Status::FailedPrecondition("no ResourceManager address");
  for (int failovers = 0;; ++failovers) {
    size_t index = active();
    IpcClient& client = *clients_[index];
    Status st = client.Call(method, request, response);
    if (st.ok() || clients_.size() == 1) return st;
    FailoverPolicy::Action action = policy_.Decide(st, failovers, random_());
    if (action.kind == FailoverPolicy::Kind::kFail) {
      // The remote class stays first in the message: callers tell exceptions apart by it
      // (ApplicationMasterNotRegisteredException after a failover must reach AmRmClient).
      if (failovers == 0 || !FailoverPolicy::IsStandby(st) && st.code() != StatusCode::kUnavailable) return st;
      return Status(st.code(), st.message() + " (" + method + " after " + std::to_string(failovers) +
                                   " failover(s): " + action.reason + ")");
    }
    size_t next = (index + 1) % clients_.size();
    {
      std::lock_guard lock(mu_);
      if (active_ == index) active_ = next;  // another call may have moved it already
      next = active_;
    }
    {
      std::lock_guard lock(g_memory_mu);
      ActiveMemory()[memory_key_] = next;
    }
    std::string why = FailoverPolicy::IsStandby(st) ? "standby" : st.message();
    spdlog::warn("ResourceManager {} failed {} ({}); failing over to {} in {} ms", client.Describe(), method, why,
                 clients_[next]->Describe(), action.sleep.count());
    if (action.sleep.count() > 0) sleep_(action.sleep);
  }
}

void FailoverIpcClient::UpdateToken(const Token& token) {
  for (auto& c : clients_) c->UpdateToken(token);
}

void FailoverIpcClient::Close() {
  for (auto& c : clients_) c->Close();
}

std::string FailoverIpcClient::Describe() const {
  if (clients_.empty()) return "no ResourceManager";
  return clients_[active()]->Describe();
}

}  // namespace loom::hadoop
