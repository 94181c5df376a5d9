#pragma once
// The one client of an AM's control plane (control.proto), for every caller: the executor
// and what it runs for MPI, the local backend's liveness probe, the YARN follower. It resolves
// the AM's address as the system would (core/host_resolver.h: /etc/hosts first, no wait on
// IPv6 answers, no NSS modules in the static binary) rather than through gRPC's resolvers,
// keeps one long-lived channel, and puts the job secret on every call.
//
// Thread-safe, as gRPC's stubs and channels are.

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "control/control.grpc.pb.h"
#include "core/status.h"

namespace loom::control {

class ControlClient {
 public:
  struct Options {
    // gRPC's transparent retries of calls that never reached the server (the executor's:
    // its calls may meet an AM that is still starting its server).
    bool retries = false;
  };

  // A client of the AM at `am_address` (host:port). Fails when the host does not resolve.
  static Result<std::unique_ptr<ControlClient>> Connect(const std::string& am_address, std::string secret,
                                                        Options options);
  static Result<std::unique_ptr<ControlClient>> Connect(const std::string& am_address, std::string secret) {
    return Connect(am_address, std::move(secret), Options{});
  }

  Control::Stub& stub() const { return *stub_; }
  // Readies `ctx` for one call: the job secret, and a deadline `timeout` from now (zero: none).
  void Prepare(grpc::ClientContext& ctx, std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) const;
  // Whether the channel is connected; asks it to connect when it is not. For a caller that
  // would rather skip a call than wait out its deadline on an AM that cannot be reached.
  bool Connected() const;
  const std::string& address() const { return address_; }

 private:
  ControlClient() = default;

  std::string address_;
  std::string secret_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Control::Stub> stub_;
};

}  // namespace loom::control
