#include "control/auth.h"

#include <sys/random.h>
#include <unistd.h>

#include <cerrno>

#include "core/files.h"
#include "core/strings.h"

namespace loom::control {

Result<std::string> GenerateSecret() {
  unsigned char bytes[32];
  if (::getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return Status::Internal("getrandom failed");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Result<std::string> ReadSecretFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status().WithContext("reading the job secret");
  std::string secret = Trim(*text);
  if (secret.size() < 32) return Status::InvalidArgument("job secret file " + path + " is too short");
  return secret;
}

Result<std::string> ReadSecretFd(int fd) {
  std::string text;
  char buf[256];
  ssize_t n = 0;
  // A secret is 65 bytes; a writer that sends more than a few KiB is not Loom's.
  while (text.size() < 4096 && ((n = ::read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  int err = errno;
  ::close(fd);
  if (n < 0) return Status::FromErrno("reading the job secret from descriptor " + std::to_string(fd), err);
  std::string secret = Trim(text);
  if (secret.size() < 32) {
    return Status::InvalidArgument("the job secret from descriptor " + std::to_string(fd) + " is too short");
  }
  return secret;
}

bool SecretsEqual(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace loom::control
