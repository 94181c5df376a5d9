#include "hadoop/wire/sasl_layer.h"

#include "core/strings.h"

namespace loom::hadoop {

Result<std::vector<std::string>> QopsFromRpcProtection(std::string_view value) {
  std::vector<std::string> qops;
  for (const std::string& word : Split(value, ',')) {
    std::string w = ToLower(Trim(word));
    if (w.empty()) continue;
    std::string qop = w == "authentication" ? "auth" : w == "integrity" ? "auth-int" : w == "privacy" ? "auth-conf" : "";
    if (qop.empty()) {
      return Status::InvalidArgument("hadoop.rpc.protection: unknown value '" + Trim(word) +
                                     "' (expected authentication, integrity or privacy, or a comma list of them)");
    }
    qops.push_back(std::move(qop));
  }
  if (qops.empty()) qops.push_back("auth");  // core-default.xml: authentication
  return qops;
}

std::string RpcProtectionOfQop(std::string_view qop) {
  if (qop == "auth") return "authentication";
  if (qop == "auth-int") return "integrity";
  if (qop == "auth-conf") return "privacy";
  return std::string(qop);
}

}  // namespace loom::hadoop
