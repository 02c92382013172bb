#include "xbcloud_store.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include "common.h"
#include "xbak/cloud/catalog_format.h"  // UtcTime
#include "xbak/crypt/key.h"
#include "xbak/storage/s3_xml.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

// Azurite's well-known development account (its documentation publishes
// the key; it opens nothing but a local emulator).
constexpr const char* kDevAccount = "devstoreaccount1";
constexpr const char* kDevKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

std::string Env(const char* k) { return std::getenv(k) ? std::string(std::getenv(k)) : std::string(); }
// The option, else the first of the environment variables that is set.
std::string OptOrEnv(const po::variables_map& vm, const char* k, std::initializer_list<const char*> envs) {
  if (vm.count(k)) return Str(vm, k);
  for (const char* e : envs) {
    if (!Env(e).empty()) return Env(e);
  }
  return "";
}

}  // namespace

std::string Str(const po::variables_map& vm, const char* k) {
  return vm.count(k) ? vm[k].as<std::string>() : std::string();
}

int Usage(const std::string& msg) {
  std::cerr << "xbcloud: " << msg << "\n(see xbcloud --help)\n";
  return 2;
}

namespace {

// --insecure, --cacert, --max-retries, --max-backoff: every store's.
std::optional<int> CheckHttp(const po::variables_map& vm, storage::HttpOptions* h) {
  h->insecure = vm.count("insecure") != 0;
  h->cacert = Str(vm, "cacert");
  if (!h->cacert.empty() && !util::PathExists(h->cacert)) return Usage("--cacert: no file " + h->cacert);
  const int max_retries = vm["max-retries"].as<int>();
  if (max_retries < 0 || max_retries > 100) return Usage("--max-retries must be between 0 and 100");
  h->max_retries = max_retries;
  const unsigned max_backoff_ms = vm["max-backoff"].as<unsigned>();
  if (max_backoff_ms < 1 || max_backoff_ms > 3600 * 1000) {
    return Usage("--max-backoff must be between 1 and 3600000 milliseconds");
  }
  h->backoff_max_s = max_backoff_ms / 1000.0;
  h->backoff_initial_s = std::min(h->backoff_initial_s, h->backoff_max_s);
  return std::nullopt;
}

// The S3 endpoint, region, bucket and the credential chain's start.
std::optional<int> CheckS3(const po::variables_map& vm, StoreSettings* s) {
  auto str = [&vm](const char* k) { return Str(vm, k); };
  storage::S3Config& cfg = s->s3;
  static_cast<storage::HttpOptions&>(cfg) = s->http;
  std::string api = str("s3-api-version");
  if (api == "2") {
    return Fail(Error(ErrorCode::kUnsupported,
                      "--s3-api-version=2: signature version 2 is not supported; every S3 service we "
                      "know accepts version 4 (auto)"));
  }
  if (api != "auto" && api != "4") return Usage("--s3-api-version must be auto, 2 or 4, not '" + api + "'");
  cfg.endpoint = str("s3-endpoint");
  cfg.region = vm.count("s3-region") ? str("s3-region") : Env("AWS_DEFAULT_REGION");
  if (cfg.region.empty()) cfg.region = Env("AWS_REGION");
  if (cfg.region.empty()) cfg.region = "us-east-1";
  cfg.bucket = str("s3-bucket");
  std::string lookup = str("s3-bucket-lookup");
  if (lookup == "path")
    cfg.lookup = storage::S3Config::Lookup::kPath;
  else if (lookup == "dns")
    cfg.lookup = storage::S3Config::Lookup::kDns;
  else if (lookup != "auto")
    return Usage("--s3-bucket-lookup must be auto, path or dns, not '" + lookup + "'");
  s->aws.access_key = str("s3-access-key");
  s->aws.secret_key = str("s3-secret-key");
  s->aws.session_token = str("s3-session-token");
  s->aws.profile = str("s3-profile");
  s->aws.region = cfg.region;
  s->aws.cacert = cfg.cacert;
  s->aws.insecure = cfg.insecure;
  return std::nullopt;
}

// S3's storage class, server-side encryption.
std::optional<int> CheckS3ObjectOptions(const po::variables_map& vm, StoreSettings* s) {
  auto str = [&vm](const char* k) { return Str(vm, k); };
  storage::S3Config& cfg = s->s3;
  cfg.storage_class = str("s3-storage-class");
  cfg.sse = str("s3-sse");
  cfg.sse_kms_key_id = str("s3-sse-kms-key-id");
  auto key = vm.count("s3-sse-c-key-file") ? crypt::LoadKeyFile(str("s3-sse-c-key-file"))
                                           : crypt::KeyFromEnvironment("XBCLOUD_SSE_C_KEY");
  if (!key.ok()) return Fail(key.status().With("SSE-C key"));
  if (*key) cfg.sse_c_key.assign(reinterpret_cast<const char*>((*key)->data()), crypt::kKeyBytes);
  return std::nullopt;
}

// S3 Object Lock: only put sets it, only S3 has it.
std::optional<int> CheckLock(const po::variables_map& vm, const std::string& command, StoreSettings* s) {
  auto str = [&vm](const char* k) { return Str(vm, k); };
  s->lock_mode = str("s3-object-lock-mode");
  if (vm.count("s3-object-lock-retain-until") && vm.count("s3-object-lock-retain-days"))
    return Usage("give --s3-object-lock-retain-until or --s3-object-lock-retain-days, not both");
  if (vm.count("s3-object-lock-retain-days")) {
    const int days = vm["s3-object-lock-retain-days"].as<int>();
    if (days < 1 || days > 36500) return Usage("--s3-object-lock-retain-days must be between 1 and 36500");
    s->lock_until = static_cast<int64_t>(::time(nullptr)) + int64_t{days} * 86400;
  } else if (vm.count("s3-object-lock-retain-until")) {
    std::string v = str("s3-object-lock-retain-until");
    s->lock_until = storage::ParseIsoUtc(v.size() == 10 ? v + "T00:00:00Z" : v);
    if (s->lock_until == 0)
      return Usage("--s3-object-lock-retain-until: '" + v + "' is not YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ");
  }
  const bool locked = !s->lock_mode.empty() || s->lock_until != 0;
  if (locked && command != "put") return Usage("--s3-object-lock-* are for put");
  if (locked && s->kind != "s3") {
    return Fail(Error(ErrorCode::kUnsupported,
                      "--s3-object-lock-* are S3's Object Lock, not available with --storage=" + s->kind +
                          " (set an immutability or retention policy on the "
                          "container or bucket itself)"));
  }
  s->s3.lock_mode = s->lock_mode;
  s->s3.lock_until = s->lock_until;
  return std::nullopt;
}

std::optional<int> CheckAzure(const po::variables_map& vm, StoreSettings* s) {
  storage::AzureConfig& a = s->azure;
  static_cast<storage::HttpOptions&>(a) = s->http;
  a.account = OptOrEnv(vm, "azure-storage-account", {"AZURE_STORAGE_ACCOUNT"});
  a.container = OptOrEnv(vm, "azure-container-name", {"AZURE_CONTAINER_NAME"});
  a.endpoint = OptOrEnv(vm, "azure-endpoint", {"AZURE_ENDPOINT"});
  a.access_key = OptOrEnv(vm, "azure-access-key", {"AZURE_ACCESS_KEY", "AZURE_STORAGE_KEY"});
  a.sas_token = OptOrEnv(vm, "azure-sas-token", {"AZURE_STORAGE_SAS_TOKEN"});
  if (vm.count("azure-access-key") && vm.count("azure-sas-token"))
    return Usage("give --azure-access-key or --azure-sas-token, not both");
  a.tier = OptOrEnv(vm, "azure-tier-class", {"AZURE_STORAGE_CLASS"});
  if (vm.count("azure-development-storage")) {  // Azurite on its default port
    if (a.account.empty()) a.account = kDevAccount;
    if (a.endpoint.empty()) a.endpoint = std::string("http://127.0.0.1:10000/") + kDevAccount;
    if (a.access_key.empty() && a.sas_token.empty()) a.access_key = kDevKey;
  }
  if (a.account.empty())
    return Usage("--storage=azure needs --azure-storage-account (or AZURE_STORAGE_ACCOUNT)");
  if (a.container.empty())
    return Usage("--storage=azure needs --azure-container-name (or AZURE_CONTAINER_NAME)");
  // Both found: the one given on purpose (an option, or an options file)
  // wins over the environment's; both from the environment, the SAS, which
  // was made for such a job.
  if (!a.access_key.empty() && !a.sas_token.empty()) {
    if (vm.count("azure-access-key"))
      a.sas_token.clear();
    else
      a.access_key.clear();
  }
  return std::nullopt;
}

std::optional<int> CheckGoogle(const po::variables_map& vm, StoreSettings* s) {
  auto str = [&vm](const char* k) { return Str(vm, k); };
  std::string endpoint = str("google-endpoint");
  const std::string emulator = Env("STORAGE_EMULATOR_HOST");
  const bool to_emulator = endpoint.empty() && !emulator.empty();
  if (to_emulator) endpoint = emulator.find("://") == std::string::npos ? "http://" + emulator : emulator;
  const std::string bucket = str("google-bucket");
  if (bucket.empty()) return Usage("--storage=google needs --google-bucket");
  if (auto st = storage::CheckGcsBucketName(bucket); !st.ok()) return Usage(st.message());
  const std::string access = str("google-access-key"), secret = str("google-secret-key");
  if (!access.empty() || !secret.empty()) {
    // HMAC keys: Google's XML API, which is S3's protocol (SigV4 with
    // region "auto", path-style addresses).
    if (access.empty() || secret.empty())
      return Usage("give both --google-access-key and --google-secret-key");
    if (vm.count("google-credentials"))
      return Usage("--google-credentials (OAuth) and --google-access-key (HMAC) exclude each other");
    s->kind = "google-hmac";
    storage::S3Config& c = s->s3;
    static_cast<storage::HttpOptions&>(c) = s->http;
    c.endpoint = endpoint.empty() ? "https://storage.googleapis.com" : endpoint;
    c.region = "auto";
    c.bucket = bucket;
    c.lookup = storage::S3Config::Lookup::kPath;
    c.storage_class = str("google-storage-class");
    s->aws.access_key = access;  // given keys: the first step of the credential chain
    s->aws.secret_key = secret;
    s->aws.region = c.region;
    // Nothing from the AWS environment: an AWS_SESSION_TOKEN there must not
    // go to Google with its keys.
    s->aws.env = [](const char*) { return std::string(); };
    return std::nullopt;
  }
  storage::GcsConfig& g = s->gcs;
  static_cast<storage::HttpOptions&>(g) = s->http;
  g.endpoint = endpoint;
  g.bucket = bucket;
  g.storage_class = str("google-storage-class");
  s->google.file = str("google-credentials");
  s->google.cacert = g.cacert;
  s->google.insecure = g.insecure;
  // Google's client libraries talk to an emulator without credentials.
  // (Only to the emulator that variable names: an endpoint given on purpose gets credentials.)
  s->google_anonymous =
      to_emulator && s->google.file.empty() && Env("GOOGLE_APPLICATION_CREDENTIALS").empty();
  return std::nullopt;
}

}  // namespace

// Long on purpose: the option table, grouped as --help shows it.
void DescribeStoreOptions(po::options_description* visible) {
  po::options_description common("Object storage");
  common.add_options()("storage", po::value<std::string>()->default_value("s3"),
                       "s3 (AWS S3, MinIO, any S3-compatible store), azure (Azure Blob Storage) or google "
                       "(Google Cloud Storage)")("cacert", po::value<std::string>(),
                                                 "CA bundle to verify the endpoint's TLS certificate with")(
      "insecure", "do not verify the endpoint's TLS certificate (unsafe)");
  po::options_description s3("S3 (--storage=s3)");
  s3.add_options()("s3-endpoint", po::value<std::string>(),
                   "http(s)://host[:port] of the S3 service (default: https://s3.REGION.amazonaws.com)")(
      "s3-region", po::value<std::string>(), "region (default: AWS_DEFAULT_REGION, else us-east-1)")(
      "s3-bucket", po::value<std::string>(), "bucket (must exist)")(
      "s3-access-key", po::value<std::string>(), "access key (prefer AWS_ACCESS_KEY_ID or an options file)")(
      "s3-secret-key", po::value<std::string>(),
      "secret key (prefer AWS_SECRET_ACCESS_KEY or an options file)")(
      "s3-session-token", po::value<std::string>(),
      "session token of temporary credentials (AWS_SESSION_TOKEN)")(
      "s3-profile", po::value<std::string>(),
      "AWS profile of ~/.aws/credentials and ~/.aws/config (default: AWS_PROFILE, else default)")(
      "s3-bucket-lookup", po::value<std::string>()->default_value("auto"),
      "addressing: path (http://host/bucket/key), dns (http://bucket.host/key), auto (dns on AWS, path "
      "elsewhere)")("s3-api-version", po::value<std::string>()->default_value("auto"),
                    "signature version: auto or 4 (SigV4); 2 is not supported")(
      "s3-storage-class", po::value<std::string>(),
      "put: storage class of every object (STANDARD, STANDARD_IA, GLACIER_IR, ...; default: the bucket's)")(
      "s3-sse", po::value<std::string>(),
      "put: server-side encryption, AES256 (SSE-S3) or aws:kms (SSE-KMS)")(
      "s3-sse-kms-key-id", po::value<std::string>(),
      "put: the KMS key of --s3-sse=aws:kms (default: the account's)")(
      "s3-sse-c-key-file", po::value<std::string>(),
      "SSE-C: file of the 32-byte customer key (mode 600), needed by put and by every later get and verify "
      "(or XBCLOUD_SSE_C_KEY); the store keeps only its MD5")(
      "s3-object-lock-mode", po::value<std::string>(),
      "put: S3 Object Lock, GOVERNANCE or COMPLIANCE, on every object: no one, expire included, can delete "
      "the backup before its retention date (the bucket must have Object Lock enabled)")(
      "s3-object-lock-retain-until", po::value<std::string>(),
      "put: retention date of the lock, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC)")(
      "s3-object-lock-retain-days", po::value<int>(), "put: retention of the lock in days from now");
  po::options_description azure("Azure Blob Storage (--storage=azure)");
  azure.add_options()("azure-storage-account", po::value<std::string>(),
                      "storage account (or AZURE_STORAGE_ACCOUNT)")(
      "azure-container-name", po::value<std::string>(), "container, must exist (or AZURE_CONTAINER_NAME)")(
      "azure-access-key", po::value<std::string>(),
      "Shared Key: the account key (prefer AZURE_STORAGE_KEY, AZURE_ACCESS_KEY or an options file)")(
      "azure-sas-token", po::value<std::string>(),
      "or a SAS token, sv=...&sig=... (prefer AZURE_STORAGE_SAS_TOKEN or an options file)")(
      "azure-endpoint", po::value<std::string>(),
      "http(s)://host[:port][/path] (default: https://ACCOUNT.blob.core.windows.net; or AZURE_ENDPOINT)")(
      "azure-tier-class", po::value<std::string>(),
      "put: access tier, Hot, Cool, Cold or Archive (default: the "
      "account's; or AZURE_STORAGE_CLASS)")(
      "azure-development-storage",
      "Azurite on this machine: account devstoreaccount1, its published key, "
      "http://127.0.0.1:10000/devstoreaccount1 (each unless given)");
  po::options_description google("Google Cloud Storage (--storage=google)");
  google.add_options()("google-bucket", po::value<std::string>(), "bucket (must exist)")(
      "google-endpoint", po::value<std::string>(),
      "http(s)://host[:port] (default: https://storage.googleapis.com; STORAGE_EMULATOR_HOST for an "
      "emulator, "
      "which needs no credentials)")(
      "google-credentials", po::value<std::string>(),
      "JSON file of a service account or an authorized user (default: GOOGLE_APPLICATION_CREDENTIALS, else "
      "gcloud's application default credentials, else the VM's metadata server)")(
      "google-access-key", po::value<std::string>(),
      "HMAC access key: use the XML API (S3's protocol) instead of OAuth (prefer an options file)")(
      "google-secret-key", po::value<std::string>(), "HMAC secret (prefer an options file)")(
      "google-storage-class", po::value<std::string>(),
      "put: storage class of every object (STANDARD, NEARLINE, COLDLINE, ARCHIVE; default: the bucket's)");
  visible->add(common).add(s3).add(azure).add(google);
}

std::optional<int> CheckStoreOptions(const po::variables_map& vm, const std::string& command,
                                     StoreSettings* s) {
  s->kind = Str(vm, "storage");
  if (s->kind == "gcs" || s->kind == "gs") s->kind = "google";
  if (s->kind != "s3" && s->kind != "azure" && s->kind != "google")
    return Usage("--storage must be s3, azure or google, not '" + s->kind + "'");
  if (auto rc = CheckHttp(vm, &s->http)) return rc;
  // Another store's options are a mistake worth naming (a half-edited cron line).
  const std::string mine = s->kind == "google" ? "google-" : s->kind + "-";
  for (const auto& [name, value] : vm) {
    for (const char* family : {"s3-", "azure-", "google-"}) {
      if (name.starts_with(family) && !name.starts_with(mine) && !value.defaulted() &&
          !(name.starts_with("s3-object-lock"))) {
        return Usage("--" + name + " is not an option of --storage=" + s->kind);
      }
    }
  }
  std::optional<int> rc;
  if (s->kind == "s3") {
    rc = CheckS3(vm, s);
    if (!rc) rc = CheckS3ObjectOptions(vm, s);
  } else if (s->kind == "azure") {
    rc = CheckAzure(vm, s);
  } else {
    rc = CheckGoogle(vm, s);
  }
  if (!rc) rc = CheckLock(vm, command, s);
  return rc;
}

Result<std::unique_ptr<storage::ObjectStore>> OpenStore(storage::EventLoop& loop, const StoreSettings& s) {
  if (s.http.insecure) util::LogWarning("--insecure: the TLS certificate of the endpoint is not verified");
  if (s.kind == "azure") return storage::MakeAzureStore(loop, s.azure);
  if (s.kind == "google") {
    storage::GcsConfig g = s.gcs;
    if (!s.google_anonymous) {
      XBAK_ASSIGN_OR_RETURN(auto tokens, storage::ResolveGoogleCredentials(s.google));
      util::LogInfo("Google Cloud Storage as " + tokens->Describe());
      g.tokens = std::move(tokens);
    }
    return storage::MakeGcsStore(loop, std::move(g));
  }
  storage::S3Config cfg = s.s3;
  {
    XBAK_ASSIGN_OR_RETURN(cfg.credentials, storage::ResolveAwsCredentials(s.aws));
    if (int64_t until = cfg.credentials->expiration(); until != 0) {
      util::LogInfo("temporary S3 credentials from " + cfg.credentials->Describe() + ", valid until " +
                    cloud::UtcTime(until) + " UTC, renewed before they expire");
    }
  }
  return storage::MakeS3Store(loop, std::move(cfg));
}

}  // namespace xbak::cli
