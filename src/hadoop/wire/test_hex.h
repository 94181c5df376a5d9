#pragma once
// For the wire tests only: hex text <-> bytes, to write recorded keys and expected bytes as the
// recordings' .txt and keys.json show them ("f58386ef...").

#include <cstdint>
#include <string>
#include <string_view>

namespace loom::hadoop {

// "0a1b" -> "\x0a\x1b" (an odd last digit is ignored).
inline std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// "\x0a\x1b" -> "0a1b".
inline std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char ch : bytes) {
    out.push_back(kDigits[static_cast<uint8_t>(ch) >> 4]);
    out.push_back(kDigits[static_cast<uint8_t>(ch) & 0xf]);
  }
  return out;
}

}  // namespace loom::hadoop
