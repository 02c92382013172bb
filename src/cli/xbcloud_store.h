// xbcloud's object stores on the command line: the options of each
// (--storage=s3|azure|google and theirs, as Percona's xbcloud names them),
// their checks, and the store they open. The commands (xbcloud_main.cc) only
// ever see an ObjectStore.
#pragma once

#include <boost/program_options.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "xbak/storage/aws_credentials.h"
#include "xbak/storage/azure_store.h"
#include "xbak/storage/event_loop.h"
#include "xbak/storage/gcs_store.h"
#include "xbak/storage/google_credentials.h"
#include "xbak/storage/http_options.h"
#include "xbak/storage/s3_store.h"

namespace xbak::cli {

// Options that name or configure a store, in [xbcloud] of an options file too.
inline constexpr std::string_view kStoreFileOptions[] = {"storage",
                                                         "s3-endpoint",
                                                         "s3-region",
                                                         "s3-bucket",
                                                         "s3-access-key",
                                                         "s3-profile",
                                                         "s3-secret-key",
                                                         "s3-session-token",
                                                         "s3-bucket-lookup",
                                                         "s3-api-version",
                                                         "s3-storage-class",
                                                         "s3-sse",
                                                         "s3-sse-kms-key-id",
                                                         "s3-sse-c-key-file",
                                                         "azure-storage-account",
                                                         "azure-container-name",
                                                         "azure-access-key",
                                                         "azure-sas-token",
                                                         "azure-endpoint",
                                                         "azure-tier-class",
                                                         "google-endpoint",
                                                         "google-bucket",
                                                         "google-access-key",
                                                         "google-secret-key",
                                                         "google-credentials",
                                                         "google-storage-class",
                                                         "azure-development-storage"};

// The "Object storage" groups of --help.
void DescribeStoreOptions(boost::program_options::options_description* visible);

// What the options say, checked; nothing is read or sent yet.
struct StoreSettings {
  std::string kind;  // "s3", "azure", "google" (JSON API) or "google-hmac" (S3 protocol)
  storage::S3Config s3;
  storage::AwsCredentialOptions aws;  // what the AWS credential chain starts from
  storage::AzureConfig azure;
  storage::GcsConfig gcs;
  storage::GoogleCredentialOptions google;
  bool google_anonymous = false;  // STORAGE_EMULATOR_HOST without credentials
  storage::HttpOptions http;      // --insecure, --cacert, --max-retries, --max-backoff
  // S3 Object Lock (put): the manifest records it.
  std::string lock_mode;
  int64_t lock_until = 0;
};

// Checks the store options for `command` ("put", "get", ...); an exit status
// when they are wrong.
std::optional<int> CheckStoreOptions(const boost::program_options::variables_map& vm,
                                     const std::string& command, StoreSettings* out);

// xbcloud's usage error (exit status 2) and an option's string value ("" when absent).
int Usage(const std::string& msg);
std::string Str(const boost::program_options::variables_map& vm, const char* k);

// Resolves credentials and opens the store (messages on stderr name where
// temporary credentials came from, never the secrets).
Result<std::unique_ptr<storage::ObjectStore>> OpenStore(storage::EventLoop& loop, const StoreSettings& s);

}  // namespace xbak::cli
