#pragma once
// The job secret: 32 random bytes (hex) created by the client, handed to the AM and executors
// through a 0600 file named by LOOM_SECRET_FILE, never on a command line. Local executors get
// their own (the AM's, AmSetup::executor_secret) through a pipe named by LOOM_SECRET_FD.

#include <string>

#include "core/status.h"

namespace loom::control {

inline constexpr char kSecretMetadataKey[] = "x-loom-secret";
inline constexpr char kSecretFileEnv[] = "LOOM_SECRET_FILE";

Result<std::string> GenerateSecret();
Result<std::string> ReadSecretFile(const std::string& path);
// Reads the secret from the pipe `fd` to its end, then closes it (also on error), so that no
// process started later inherits it.
Result<std::string> ReadSecretFd(int fd);
// Compares without leaking the position of the first difference through timing.
bool SecretsEqual(const std::string& a, const std::string& b);

}  // namespace loom::control
