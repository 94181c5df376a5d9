#pragma once
// The client's half of staging.h: puts a job's files into HDFS for YARN to localize.
//
// The archives are built first (the src dir's tar.gz, a zip venv repacked), then the shared
// `loom` binary goes to its cache (a staging root that call creates is then 755, which lets the
// binary be PUBLIC), then the job's staging dir is made, then every one of the job's own files
// is uploaded at once. On a real cluster each file costs a NameNode round trip, a DataNode write
// and a close that can wait for the DataNode's block report; one after another, four or five
// files added up to over a second of `loom submit`.
//
// The manifest is one of those files, so it cannot name the others' lengths and modification
// times: those reach the AM in its launch environment (kStagedFilesEnv) instead.

#include <string>

#include "cluster/yarn/staging.h"
#include "core/job_spec.h"
#include "core/status.h"
#include "history/job_dir.h"

namespace loom::cluster::yarn {

// Fills `m->files` (the binary, the job's files and the manifest itself) and writes
// `m->dir`/loom-staging.json from `*m` as the caller filled it. Archives it builds in the job
// dir (the src dir's tar.gz, a zip venv repacked) are removed whether or not they reach HDFS.
// On an error every upload has ended; the caller removes the staging dir (CleanStaging).
Status StageJob(const history::JobDir& dir, const JobSpec& spec, const std::string& loom_binary,
                const std::string& cache_dir, StagingManifest* m);

}  // namespace loom::cluster::yarn
