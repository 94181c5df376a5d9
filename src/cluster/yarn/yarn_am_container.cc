#include "cluster/yarn/yarn_container_broker.h"

// What the AM's container holds, as the YARN broker reads it (the staging manifest, the staged
// files, the credentials) and what of it each task container is given.

#include "core/files.h"
#include "core/forwarded_env.h"
#include "core/strings.h"
#include "hadoop/ipc/namenode_client.h"
#include "hadoop/wire/ipc_frame.h"

namespace loom::cluster::yarn {

std::vector<std::pair<std::string, hadoop::Token>> PassedOnTokens(const hadoop::Credentials& am_credentials) {
  std::vector<std::pair<std::string, hadoop::Token>> out;
  for (const auto& [alias, token] : am_credentials.tokens) {
    if (token.kind != "YARN_AM_RM_TOKEN") out.emplace_back(alias, token);
  }
  return out;
}

hadoop::Credentials TaskContainerCredentials(const std::string& job_secret,
                                     const std::vector<std::pair<std::string, std::string>>& forwarded_secrets,
                                     const std::vector<std::pair<std::string, hadoop::Token>>& tokens) {
  hadoop::Credentials creds;
  creds.tokens = tokens;
  creds.secrets.push_back({kSecretCredentialAlias, job_secret});
  for (const auto& secret : forwarded_secrets) creds.secrets.push_back(secret);
  return creds;
}

std::optional<hadoop::Token> DefaultFsToken(const StagingManifest& manifest,
                                    const std::vector<std::pair<std::string, hadoop::Token>>& tokens) {
  std::string service;
  if (manifest.fs_port < 0) {
    service = std::string(hadoop::kHaTokenServicePrefix) + "hdfs:" + manifest.fs_host;
  } else if (auto s = hadoop::BuildTokenService({manifest.fs_host, manifest.fs_port}); s.ok()) {
    service = *s;
  }
  std::optional<hadoop::Token> first;
  for (const auto& [alias, token] : tokens) {
    if (token.kind != hadoop::kHdfsDelegationKind) continue;
    if (token.service == service) return token;
    if (!first) first = token;
  }
  return first;
}

Result<YarnBrokerOptions> YarnBrokerOptionsFromContainer(const std::map<std::string, std::string>& env) {
  YarnBrokerOptions o;
  LOOM_ASSIGN_OR_RETURN(std::string manifest_text, ReadFile(kManifestResource));
  LOOM_ASSIGN_OR_RETURN(o.manifest, StagingManifest::FromJson(manifest_text));
  auto staged_files = env.find(kStagedFilesEnv);
  if (staged_files == env.end()) {
    return Status::FailedPrecondition(std::string(kStagedFilesEnv) + " is not set: the client that staged this job did not name its files");
  }
  auto files = DecodeStagedFiles(staged_files->second);
  if (!files.ok()) return files.status().WithContext(std::string("reading ") + kStagedFilesEnv);
  o.manifest.files = std::move(*files);
  auto token_file = env.find("HADOOP_TOKEN_FILE_LOCATION");
  if (token_file == env.end()) {
    return Status::FailedPrecondition("HADOOP_TOKEN_FILE_LOCATION is not set: `loom am --backend yarn` runs in a YARN container");
  }
  LOOM_ASSIGN_OR_RETURN(hadoop::Credentials creds, hadoop::ReadCredentialsFile(token_file->second));
  auto amrm = creds.FindKind("YARN_AM_RM_TOKEN");
  if (!amrm) return Status::FailedPrecondition(token_file->second + " holds no YARN_AM_RM_TOKEN");
  o.amrm_token = *amrm;
  std::optional<std::string> secret = creds.FindSecret(kSecretCredentialAlias);
  if (!secret) return Status::FailedPrecondition(token_file->second + " holds no " + kSecretCredentialAlias);
  o.job_secret = *secret;
  for (const auto& [alias, value] : creds.secrets) {
    if (StartsWith(alias, kSecretEnvAliasPrefix)) o.forwarded_secrets.emplace_back(alias, value);
  }
  o.delegation_tokens = PassedOnTokens(creds);
  auto nm_host = env.find("NM_HOST");
  o.nm_host = nm_host != env.end() ? nm_host->second : "localhost";
  return o;
}

}  // namespace loom::cluster::yarn
