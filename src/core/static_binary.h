#pragma once
// Whether this process is the self-contained, statically linked `loom` (src/cli/CMakeLists.txt)
// or loom-kerberos, the same code linked to the system's libraries.

#include <sys/auxv.h>

namespace loom {

// True when this process runs without a dynamic loader: no interpreter mapped it.
inline bool SelfIsStatic() { return ::getauxval(AT_BASE) == 0; }

}  // namespace loom
