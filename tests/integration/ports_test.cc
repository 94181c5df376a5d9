// The ports of the cluster spec cannot be taken by anyone else between the moment the executor
// reserves them and the moment the framework listens on them. A squatter binds ports of the
// job's (small) port range as fast as it can, holding about half of them at any time and
// cycling; jobs whose frameworks really listen on the promised ports (PyTorch TCPStore via a
// gloo rendezvous) must still succeed every time.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <random>
#include <thread>

#include <gmock/gmock.h>

#include "core/inet_address.h"
#include "mini_loom.h"

namespace loom::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kLow = 25000, kHigh = 25079;

class Squatter {
 public:
  Squatter() : thread_([this] { Run(); }) {}
  ~Squatter() {
    stop_ = true;
    thread_.join();
  }
  long binds() const { return binds_; }
  long refused() const { return refused_; }

 private:
  void Run() {
    std::mt19937 rng(7);
    std::deque<int> held;
    while (!stop_) {
      int port = kLow + static_cast<int>(rng() % (kHigh - kLow + 1));
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a = Ipv4Address(INADDR_ANY, port);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::listen(fd, 1) == 0) {
        ++binds_;
        held.push_back(fd);
      } else {
        ++refused_;
        ::close(fd);
      }
      while (held.size() > (kHigh - kLow + 1) / 2) {
        ::close(held.front());
        held.pop_front();
      }
      std::this_thread::sleep_for(200us);
    }
    for (int fd : held) ::close(fd);
  }
  std::atomic<bool> stop_{false};
  std::atomic<long> binds_{0}, refused_{0};
  std::thread thread_;
};

TEST(Ports, PromisedPortsSurviveASquatter) {
  Squatter squatter;
  std::this_thread::sleep_for(100ms);  // the range is already half taken when jobs start
  for (int job = 0; job < 3; ++job) {
    MiniLoom loom;
    RunResult r = loom.Run({"submit", "--src_dir", MiniLoom::Source(kScripts), "--executes",
                            "check_torch_env.py", "--python_binary_path", "/usr/bin/python3", "--task_params",
                            "--rendezvous", "--conf", "loom.application.framework=pytorch", "--conf",
                            "loom.chief.instances=1", "--conf", "loom.worker.instances=3", "--conf",
                            "loom.task.port-range=" + std::to_string(kLow) + "-" + std::to_string(kHigh)});
    EXPECT_EQ(r.exit_code, 0) << "job " << job << "\n" << r.out << r.err;
  }
  // The contention was real: the squatter kept taking ports, and was refused many.
  EXPECT_GT(squatter.binds(), 100);
  EXPECT_GT(squatter.refused(), 100);
  std::printf("squatter: %ld binds, %ld refused\n", squatter.binds(), squatter.refused());
}

}  // namespace
}  // namespace loom::testing
