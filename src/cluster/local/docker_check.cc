#include "cluster/local/docker_check.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/config/key_registry.h"
#include "core/strings.h"

namespace loom::cluster::local {

std::optional<std::string> DockerSocketPath() {
  const char* host = std::getenv("DOCKER_HOST");
  if (host == nullptr || *host == '\0') return std::string("/var/run/docker.sock");
  std::string h = host;
  if (StartsWith(h, "unix://")) return h.substr(7);
  return std::nullopt;
}

bool DockerDaemonAnswers(const std::string& path, int timeout_ms) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = false;
  // A unix socket connects at once or fails (no daemon: ENOENT or ECONNREFUSED).
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      std::string response;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
      while (response.size() < 4096) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{fd, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        char buf[1024];
        ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        response.append(buf, static_cast<size_t>(n));
      }
      // HTTP/1.x 200 with the body "OK" (the Engine API's /_ping).
      size_t body = response.find("\r\n\r\n");
      ok = StartsWith(response, "HTTP/1.") && response.find(" 200 ") != std::string::npos &&
           body != std::string::npos && Trim(response.substr(body + 4)) == "OK";
    }
  }
  ::close(fd);
  return ok;
}

Status RefuseDockerOnLocal(const config::Config& conf) {
  const config::ConfigEntry* entry = conf.Entry("loom.docker.enabled");
  if (entry == nullptr || !config::GetBool(conf, "loom.docker.enabled")) return Status::Ok();
  std::string key = entry->original_key.empty() ? "loom.docker.enabled" : entry->original_key;
  std::string daemon;
  if (std::optional<std::string> socket = DockerSocketPath(); socket && DockerDaemonAnswers(*socket)) {
    daemon = "a Docker daemon answers at " + *socket + ", but ";
  } else {
    daemon = "no Docker daemon answers here (" + (socket ? *socket : std::string("DOCKER_HOST is not a unix socket")) +
             "), and in any case ";
  }
  return Status::InvalidArgument(key + "=" + entry->value + " (from " + entry->source + "): " + daemon +
                                 "the local backend runs tasks as plain processes on this machine, never in a "
                                 "Docker image; submit with --cluster yarn to a cluster set up for YARN's Docker "
                                 "runtime, or set " + key + "=false");
}

}  // namespace loom::cluster::local
