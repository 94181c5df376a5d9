#pragma once
// Tests only: pins the random parts of what IpcClient sends, so that clients created inside the
// YARN protocol classes (AmRmClient, NmClient, ApplicationClient), whose options a test cannot
// reach, send bytes identical to a recording.

#include <string>

namespace loom::hadoop {

// IpcClients created after this call use `client_id` (16 bytes) unless their options set one;
// connections opened after it use `cnonce` for DIGEST-MD5 unless the options set one. Empty
// strings restore the random values.
void SetIpcIdentityForTest(std::string client_id, std::string cnonce);

}  // namespace loom::hadoop
