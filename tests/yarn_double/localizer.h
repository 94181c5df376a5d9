#pragma once
// How the YARN test double's NodeManager turns a downloaded LocalResource into what a
// container sees, as Hadoop 3.3.6's FSDownload did in tests/data/yarn-captures/localization
// (README §13, facts 1-5):
//   * an ARCHIVE's unpacker is chosen by the HDFS file name's extension: .zip and .jar by a
//     stream unzip that ignores the symlink bit (a link becomes a regular file holding its
//     target text) and skips directory entries (so empty directories are dropped); .tar.gz,
//     .tgz and .tar by the system tar (links kept, mtimes kept); an archive of any other name,
//     and every FILE, is copied as it is;
//   * modes are rewritten whatever the archive or HDFS said: regular files 0500 and
//     directories 0700, or 0555 and 0755 for PUBLIC resources; symlinks are left alone.
// Part of the test double: the unzip is not general-purpose (no zip64, no encryption).

#include <string>

#include "core/status.h"

namespace loom::yarn_double {

// Unpacks or copies `src` (the resource's bytes) to `dest`, which must not exist yet, as
// FSDownload does for a resource whose HDFS file is named `hdfs_name`, then rewrites modes.
Status LocalizeLikeFsDownload(const std::string& src, const std::string& dest, const std::string& hdfs_name,
                              bool archive, bool public_visibility);

// Hadoop's FileUtil.unZip: every file entry becomes a regular file (a symlink entry's bytes
// are its target), with the entry's modification time; directory entries are skipped; parent
// directories are made as needed. InvalidArgument for a malformed zip, an unsupported entry or
// one that would land outside `dest`.
Status UnzipIgnoringSymlinks(const std::string& zip, const std::string& dest);

}  // namespace loom::yarn_double
