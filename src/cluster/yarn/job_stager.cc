#include "cluster/yarn/job_stager.h"

#include <unistd.h>

#include <exception>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"
#include "hadoop/hdfs/webhdfs.h"

namespace loom::cluster::yarn {

namespace {

// One file of the job's staging dir. Built archives are made one after another before any
// upload (the src dir's tar must not read the job dir while a venv is repacked there: a
// $LOOM_HOME inside --src_dir), then every file is uploaded by a thread of its own.
struct Upload {
  std::string resource;   // the name in a container's working dir
  std::string hdfs_name;  // the name in the staging dir
  bool archive = false;
  std::string local;      // the file to upload, or
  std::string bytes;      // its content (the manifest)
  bool built = false;     // made here in the job dir: removed once uploaded or not
};

// tar.gz, not zip: the NodeManager's unzip would turn the src dir's symlinks into text files.
// The directory's contents, not the directory: the NodeManager unpacks it as loom-src/.
Status BuildSrcArchive(const std::string& src_dir, const std::string& tgz) {
  Status s = RunTool({"tar", "-czf", tgz, "-C", src_dir, "."});
  if (!s.ok()) ::unlink(tgz.c_str());
  return s;
}

// Repacked as tar.gz: unzipped by the NodeManager, a venv's bin/python -> /usr/bin/python3 would
// become a 16-byte text file (README §13 fact 1). Info-ZIP's unzip keeps symlinks.
Status RepackZipVenv(const std::string& zip, const std::string& job_root, const std::string& tgz) {
  std::string unpacked = job_root + "/venv-repack";
  (void)RemoveTree(unpacked);
  Status s = MakeDirs(unpacked);
  if (s.ok()) s = RunTool({"unzip", "-q", "-o", zip, "-d", unpacked});
  if (s.ok()) s = RunTool({"tar", "-czf", tgz, "-C", unpacked, "."});
  (void)RemoveTree(unpacked);
  if (!s.ok()) {
    ::unlink(tgz.c_str());
    return s.WithContext("repacking --python_venv " + zip + " as tar.gz");
  }
  return s;
}

// What the job's staging dir receives. No secret here: it rides in the containers' credentials
// (Submit), never in HDFS. The manifest is complete but for `files`, which the AM learns from
// its environment.
std::vector<Upload> JobUploads(const history::JobDir& dir, const JobSpec& spec, const StagingManifest& m) {
  std::vector<Upload> uploads = {
      {kConfigResource, kConfigResource, false, dir.config(), "", false},
      {kJobJsonResource, kJobJsonResource, false, dir.job_json(), "", false},
      {kManifestResource, kManifestResource, false, "", m.ToJson().dump(2), false},
  };
  if (!spec.src_dir.empty()) {
    uploads.push_back({kSrcResource, kSrcArchiveFile, true, dir.root() + "/" + kSrcArchiveFile, "", true});
  }
  switch (spec.python_venv_format) {
    case VenvFormat::kNone:
      break;
    case VenvFormat::kZip:
      uploads.push_back({kVenvResource, "venv.tar.gz", true, dir.root() + "/venv.tar.gz", "", true});
      break;
    case VenvFormat::kTarGz:
      // The NodeManager picks the unpacker by the HDFS file's extension.
      uploads.push_back({kVenvResource, EndsWith(ToLower(spec.python_venv), ".tgz") ? "venv.tgz" : "venv.tar.gz",
                         true, spec.python_venv, "", false});
      break;
    case VenvFormat::kPex:
      // A FILE, run as the task's interpreter (`python venv script.py`).
      uploads.push_back({kVenvResource, "venv.pex", false, spec.python_venv, "", false});
      break;
  }
  return uploads;
}

Result<hadoop::HdfsFileStatus> RunUpload(const std::string& webhdfs, const std::string& user, const Upload& u,
                                 const std::string& hdfs_path) {
  try {
    hadoop::WebHdfs fs(webhdfs, user);  // a client per upload: each keeps its own connection
    return u.local.empty() ? fs.Create(hdfs_path, u.bytes, "600") : fs.Upload(u.local, hdfs_path, "600");
  } catch (const std::exception& e) {
    return Status::Internal("uploading " + hdfs_path + ": " + e.what());
  }
}

}  // namespace

Status StageJob(const history::JobDir& dir, const JobSpec& spec, const std::string& loom_binary,
                const std::string& cache_dir, StagingManifest* m) {
  for (const TaskTypeSpec& t : spec.types) {
    if (!t.extra_files.empty()) {
      return Status::Unimplemented("loom." + t.name + ".resources is not supported on the yarn backend yet");
    }
  }
  m->files.clear();
  std::vector<Upload> uploads = JobUploads(dir, spec, *m);
  auto remove_built = [&uploads] {
    for (const Upload& u : uploads) {
      if (u.built) ::unlink(u.local.c_str());
    }
  };
  Status built = spec.src_dir.empty() ? Status::Ok() : BuildSrcArchive(spec.src_dir, dir.root() + "/" + kSrcArchiveFile);
  if (built.ok() && spec.python_venv_format == VenvFormat::kZip) {
    built = RepackZipVenv(spec.python_venv, dir.root(), dir.root() + "/venv.tar.gz");
  }
  hadoop::WebHdfs fs(m->webhdfs, m->user);
  Result<StagedFile> binary = built.ok() ? StageCachedBinary(fs, loom_binary, cache_dir, m->application_id)
                                         : Result<StagedFile>(built);
  Status dir_made = binary.ok() ? fs.Mkdirs(m->dir, "700").WithContext("creating the staging dir " + m->dir)
                                : binary.status();
  if (!dir_made.ok()) {
    remove_built();
    return dir_made;
  }

  std::vector<std::optional<Result<hadoop::HdfsFileStatus>>> results(uploads.size());
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < uploads.size(); ++i) {
      auto run = [&, i] {
        results[i] = RunUpload(m->webhdfs, m->user, uploads[i], hadoop::JoinHdfsPath(m->dir, uploads[i].hdfs_name));
      };
      try {
        threads.emplace_back(run);
      } catch (const std::system_error&) {
        run();  // no thread to be had: this one uploads it
      }
    }
  }  // every upload has ended here, failed or not
  remove_built();
  m->files[kLoomBinaryResource] = *binary;
  for (size_t i = 0; i < uploads.size(); ++i) {
    if (!results[i]->ok()) return results[i]->status();
    const hadoop::HdfsFileStatus& st = **results[i];
    m->files[uploads[i].resource] =
        StagedFile{hadoop::JoinHdfsPath(m->dir, uploads[i].hdfs_name), st.length, st.modification_time, uploads[i].archive};
  }
  return Status::Ok();
}

}  // namespace loom::cluster::yarn
