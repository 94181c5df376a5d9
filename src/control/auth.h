#pragma once
// The job secret: 32 random bytes (hex) created by the client, handed to the AM and executors
// through a 0600 file named by LOOM_SECRET_FILE, never on a command line.

#include <string>

#include "core/status.h"

namespace loom::control {

inline constexpr char kSecretMetadataKey[] = "x-loom-secret";
inline constexpr char kSecretFileEnv[] = "LOOM_SECRET_FILE";

Result<std::string> GenerateSecret();
Result<std::string> ReadSecretFile(const std::string& path);
// Compares without leaking the position of the first difference through timing.
bool SecretsEqual(const std::string& a, const std::string& b);

}  // namespace loom::control
