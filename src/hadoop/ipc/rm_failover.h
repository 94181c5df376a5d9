#pragma once
// ResourceManager HA for the IPC clients: one IpcClient per ResourceManager, the calls sent to
// the one believed active, and on StandbyException or a connection failure a failover to the
// next one in order (round robin, as Hadoop's ConfiguredRMFailoverProxyProvider), then the
// same call again there. The retry policy is Hadoop's FailoverOnNetworkExceptionRetry, as
// RMProxy.createRetryPolicy builds it for HA (FailoverPolicy below).
// Thread-safety: FailoverIpcClient is thread-safe like IpcClient; concurrent calls may each
// fail over, which moves the shared index once per observed failure.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "hadoop/ipc/ipc_client.h"

namespace loom::hadoop {

inline constexpr char kStandbyException[] = "org.apache.hadoop.ipc.StandbyException";

// yarn.client.failover-* as RMProxy.createRetryPolicy derives them (HadoopConf fills these).
struct FailoverSettings {
  int max_failovers = 30;      // yarn.client.failover-max-attempts (-1: max-wait / sleep-base)
  int64_t sleep_base_ms = 30000;  // yarn.client.failover-sleep-base-ms (default: connect.retry-interval.ms)
  int64_t sleep_max_ms = 30000;   // yarn.client.failover-sleep-max-ms (default: connect.retry-interval.ms)
};

// Hadoop's RetryPolicies.FailoverOnNetworkExceptionRetry with TRY_ONCE_THEN_FAIL as fallback.
class FailoverPolicy {
 public:
  enum class Kind { kFail, kFailover };
  struct Action {
    Kind kind = Kind::kFail;
    std::chrono::milliseconds sleep{0};  // before the call is sent to the next server
    std::string reason;                  // why it fails, for the error
  };
  explicit FailoverPolicy(FailoverSettings settings) : settings_(settings) {}
  // `failed` is the Status of the call; `failovers` how many this call made so far;
  // `random01` a draw in [0, 1) (Hadoop's sleep is the base times 0.5 to 1.5).
  // StandbyException and a refused/timed-out connect: failover after 0 ms the first time,
  // then min(base * 2^failovers, max) * (0.5 + random01). A connection lost during the call:
  // failover at once (every YARN method Loom calls is @Idempotent or @AtMostOnce). Any other
  // error, or `max_failovers` reached: kFail.
  Action Decide(const Status& failed, int failovers, double random01) const;
  // Whether `s` is a StandbyException from the server.
  static bool IsStandby(const Status& s);

 private:
  FailoverSettings settings_;
};

class FailoverIpcClient {
 public:
  using Sleeper = std::function<void(std::chrono::milliseconds)>;
  using Random = std::function<double()>;
  // `servers`: one IpcOptions per ResourceManager, in rm-ids order (at least one). With one,
  // calls go straight to it (no failover, as without HA). The server first tried is the one
  // this process last found active for the same address list and protocol.
  // `sleep` and `random` are for tests (defaults: sleep_for and a uniform draw).
  FailoverIpcClient(std::vector<IpcOptions> servers, FailoverSettings settings, Sleeper sleep = {},
                    Random random = {});
  ~FailoverIpcClient();

  // IpcClient::Call on the active server, failing over as FailoverPolicy says. Each failover is
  // logged in one line. The error of the last try is returned, with the failover count.
  Status Call(const std::string& method, const google::protobuf::Message& request,
              google::protobuf::Message* response);
  void UpdateToken(const Token& token);  // every server's (the AMRMToken is valid on each RM)
  void Close();
  std::string Describe() const;  // the current server's
  // The index in `servers` of the one believed active.
  size_t active() const;

 private:
  std::vector<std::unique_ptr<IpcClient>> clients_;
  std::string memory_key_;
  FailoverPolicy policy_;
  Sleeper sleep_;
  Random random_;
  mutable std::mutex mu_;
  size_t active_ = 0;
};

}  // namespace loom::hadoop
