#include "cluster/yarn/job_stager.h"

#include <unistd.h>

#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "cluster/yarn/hdfs/webhdfs.h"
#include "core/files.h"
#include "core/strings.h"
#include "core/subprocess.h"

namespace loom::cluster::yarn {

namespace {

// One file of the job's staging dir: made here if needed, then uploaded by its own thread.
struct Upload {
  std::string resource;   // the name in a container's working dir
  std::string hdfs_name;  // the name in the staging dir
  bool archive = false;
  std::function<Result<HdfsFileStatus>(WebHdfs&, const std::string& hdfs_path)> run;
};

// tar.gz, not zip: the NodeManager's unzip would turn the src dir's symlinks into text files.
// The directory's contents, not the directory: the NodeManager unpacks it as loom-src/.
Result<HdfsFileStatus> UploadSrcDir(WebHdfs& fs, const std::string& src_dir, const std::string& tgz,
                                    const std::string& hdfs_path) {
  Status s = RunTool({"tar", "-czf", tgz, "-C", src_dir, "."});
  Result<HdfsFileStatus> st = s.ok() ? fs.Upload(tgz, hdfs_path, "600") : Result<HdfsFileStatus>(s);
  ::unlink(tgz.c_str());
  return st;
}

// Repacked as tar.gz: unzipped by the NodeManager, a venv's bin/python -> /usr/bin/python3 would
// become a 16-byte text file (README §13 fact 1). Info-ZIP's unzip keeps symlinks.
Result<HdfsFileStatus> UploadZipVenv(WebHdfs& fs, const std::string& zip, const std::string& job_root,
                                     const std::string& hdfs_path) {
  std::string unpacked = job_root + "/venv-repack";
  std::string tgz = job_root + "/venv.tar.gz";
  (void)RemoveTree(unpacked);
  Status s = MakeDirs(unpacked);
  if (s.ok()) s = RunTool({"unzip", "-q", "-o", zip, "-d", unpacked});
  if (s.ok()) s = RunTool({"tar", "-czf", tgz, "-C", unpacked, "."});
  (void)RemoveTree(unpacked);
  if (!s.ok()) {
    ::unlink(tgz.c_str());
    return s.WithContext("repacking --python_venv " + zip + " as tar.gz");
  }
  Result<HdfsFileStatus> st = fs.Upload(tgz, hdfs_path, "600");
  ::unlink(tgz.c_str());
  return st;
}

std::vector<Upload> JobUploads(const history::JobDir& dir, const JobSpec& spec, const StagingManifest& m) {
  auto local_file = [](std::string local) {
    return [local](WebHdfs& fs, const std::string& path) { return fs.Upload(local, path, "600"); };
  };
  // No secret here: it rides in the containers' credentials (Submit), never in HDFS. The
  // manifest is complete but for `files`, which the AM learns from its environment.
  std::vector<Upload> uploads = {
      {kConfigResource, kConfigResource, false, local_file(dir.config())},
      {kJobJsonResource, kJobJsonResource, false, local_file(dir.job_json())},
      {kManifestResource, kManifestResource, false,
       [text = m.ToJson().dump(2)](WebHdfs& fs, const std::string& path) { return fs.Create(path, text, "600"); }},
  };
  if (!spec.src_dir.empty()) {
    uploads.push_back({kSrcResource, kSrcArchiveFile, true,
                       [src = spec.src_dir, tgz = dir.root() + "/" + kSrcArchiveFile](WebHdfs& fs, const std::string& path) {
                         return UploadSrcDir(fs, src, tgz, path);
                       }});
  }
  switch (spec.python_venv_format) {
    case VenvFormat::kNone:
      break;
    case VenvFormat::kZip:
      uploads.push_back({kVenvResource, "venv.tar.gz", true,
                         [zip = spec.python_venv, root = dir.root()](WebHdfs& fs, const std::string& path) {
                           return UploadZipVenv(fs, zip, root, path);
                         }});
      break;
    case VenvFormat::kTarGz:
      // The NodeManager picks the unpacker by the HDFS file's extension.
      uploads.push_back({kVenvResource, EndsWith(ToLower(spec.python_venv), ".tgz") ? "venv.tgz" : "venv.tar.gz",
                         true, local_file(spec.python_venv)});
      break;
    case VenvFormat::kPex:
      // A FILE, run as the task's interpreter (`python venv script.py`).
      uploads.push_back({kVenvResource, "venv.pex", false, local_file(spec.python_venv)});
      break;
  }
  return uploads;
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
  WebHdfs fs(m->webhdfs, m->user);
  LOOM_ASSIGN_OR_RETURN(StagedFile binary, StageCachedBinary(fs, loom_binary, cache_dir, m->application_id));
  LOOM_RETURN_IF_ERROR(fs.Mkdirs(m->dir, "700").WithContext("creating the staging dir " + m->dir));

  std::vector<Upload> uploads = JobUploads(dir, spec, *m);
  std::vector<std::optional<Result<HdfsFileStatus>>> results(uploads.size());
  {
    std::vector<std::jthread> threads;
    for (size_t i = 0; i < uploads.size(); ++i) {
      threads.emplace_back([&, i] {
        WebHdfs own(m->webhdfs, m->user);  // a client per thread: each keeps its own connection
        results[i] = uploads[i].run(own, JoinHdfsPath(m->dir, uploads[i].hdfs_name));
      });
    }
  }  // every upload has ended here, failed or not
  m->files[kLoomBinaryResource] = binary;
  for (size_t i = 0; i < uploads.size(); ++i) {
    if (!results[i]->ok()) return results[i]->status();
    const HdfsFileStatus& st = **results[i];
    m->files[uploads[i].resource] =
        StagedFile{JoinHdfsPath(m->dir, uploads[i].hdfs_name), st.length, st.modification_time, uploads[i].archive};
  }
  return Status::Ok();
}

}  // namespace loom::cluster::yarn
