#include "xbak/storage/google_credentials.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "http_call.h"
#include "xbak/storage/md5.h"
#include "xbak/storage/uri.h"
#include "xbak/util/file.h"

namespace xbak::storage {
namespace {

constexpr const char* kScope = "https://www.googleapis.com/auth/devstorage.read_write";
constexpr const char* kDefaultTokenUri = "https://oauth2.googleapis.com/token";
constexpr int64_t kEarly = 300;  // renew this long before expiry

// RS256: RSASSA-PKCS1-v1_5 with SHA-256, by OpenSSL.
Result<std::string> SignRs256(const std::string& pem, const std::string& data, const std::string& what) {
  std::unique_ptr<BIO, void (*)(BIO*)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                           BIO_free_all);
  std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr, EVP_PKEY_free);
  if (!key) return Error(ErrorCode::kInvalidArgument, what + ": private_key is not a PEM private key");
  if (EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA)
    return Error(ErrorCode::kInvalidArgument, what + ": private_key is not an RSA key (RS256 needs one)");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t n = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char*>(data.data()),
                     data.size()) != 1) {
    return Error(ErrorCode::kInvalidArgument, what + ": cannot sign with its private_key (not an RSA key?)");
  }
  std::string sig(n, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &n,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
    return Error(ErrorCode::kInternal, what + ": RS256 signature failed");
  }
  sig.resize(n);
  return sig;
}

// One way to an access token; Tokens caches what it gives.
class Source {
 public:
  virtual ~Source() = default;
  virtual Result<GoogleToken> Fetch(int64_t now) = 0;
  virtual std::string Describe() const = 0;
};

class Tokens final : public GoogleTokens {
 public:
  explicit Tokens(std::unique_ptr<Source> source) : source_(std::move(source)) {}
  // Runs on the store's loop (one thread): a fetch blocks it, so a failed
  // one is not tried again for 30 s (every request would otherwise wait on
  // it); meanwhile the old token serves while it lasts, else the last error.
  Result<std::string> Get(int64_t now) override {
    if (!token_.empty() && now < renew_at_) return token_;
    if (now < retry_after_) {
      if (!token_.empty() && now < expires_) return token_;
      return last_error_;
    }
    auto t = source_->Fetch(now);
    if (!t.ok()) {
      retry_after_ = now + 30;
      last_error_ = t.status();
      if (!token_.empty() && now < expires_) return token_;
      return t.status();
    }
    token_ = t->access_token;
    expires_ = now + t->expires_in;
    // Five minutes early, or halfway for a token that lives less than ten.
    renew_at_ = expires_ - std::min(kEarly, t->expires_in / 2);
    return token_;
  }
  std::string Describe() const override { return source_->Describe(); }

 private:
  std::unique_ptr<Source> source_;
  std::string token_;
  int64_t expires_ = 0, renew_at_ = 0, retry_after_ = 0;
  Status last_error_;
};

// POSTs a form to an OAuth token endpoint.
Result<GoogleToken> AskTokenEndpoint(const std::string& uri, const std::string& form,
                                     const GoogleCredentialOptions& o, const std::string& what) {
  http::Call c;
  c.method = "POST";
  c.url = uri;
  c.body = form;
  c.headers = {"Content-Type: application/x-www-form-urlencoded"};
  c.cacert = o.cacert;
  c.insecure = o.insecure;
  XBAK_ASSIGN_OR_RETURN(http::Answer a, http::Perform(c, what));
  if (a.status / 100 != 2) {
    // OAuth errors carry {"error": "invalid_grant", "error_description": ...}: no secret in them.
    nlohmann::json j = nlohmann::json::parse(a.body, nullptr, false);
    std::string why = j.is_object() && j.contains("error") ? j["error"].dump() : "";
    if (j.is_object() && j.contains("error_description") && j["error_description"].is_string())
      why += ": " + j["error_description"].get<std::string>();
    return Error(ErrorCode::kInvalidArgument, what + ": the token endpoint " + uri + " answered HTTP " +
                                                  std::to_string(a.status) + (why.empty() ? "" : " " + why));
  }
  return ParseGoogleToken(a.body, what + " (token endpoint " + uri + ")");
}

class ServiceAccount final : public Source {
 public:
  ServiceAccount(std::string email, std::string pem, std::string key_id, std::string token_uri,
                 GoogleCredentialOptions o, std::string file)
      : email_(std::move(email)),
        pem_(std::move(pem)),
        key_id_(std::move(key_id)),
        token_uri_(std::move(token_uri)),
        o_(std::move(o)),
        file_(std::move(file)) {}
  Result<GoogleToken> Fetch(int64_t now) override {
    nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
    if (!key_id_.empty()) header["kid"] = key_id_;
    nlohmann::json claims = {
        {"iss", email_}, {"scope", kScope}, {"aud", token_uri_}, {"iat", now}, {"exp", now + 3600}};
    const std::string signing = Base64Url(header.dump()) + "." + Base64Url(claims.dump());
    XBAK_ASSIGN_OR_RETURN(std::string sig, SignRs256(pem_, signing, Describe()));
    const std::string form = "grant_type=" + UriEncode("urn:ietf:params:oauth:grant-type:jwt-bearer", false) +
                             "&assertion=" + signing + "." + Base64Url(sig);
    return AskTokenEndpoint(token_uri_, form, o_, Describe());
  }
  std::string Describe() const override { return "service account " + email_ + " (" + file_ + ")"; }

 private:
  std::string email_, pem_, key_id_, token_uri_;
  GoogleCredentialOptions o_;
  std::string file_;
};

class AuthorizedUser final : public Source {
 public:
  AuthorizedUser(std::string form, std::string token_uri, GoogleCredentialOptions o, std::string file)
      : form_(std::move(form)), token_uri_(std::move(token_uri)), o_(std::move(o)), file_(std::move(file)) {}
  Result<GoogleToken> Fetch(int64_t) override { return AskTokenEndpoint(token_uri_, form_, o_, Describe()); }
  std::string Describe() const override { return "the authorized user of " + file_; }

 private:
  std::string form_, token_uri_;
  GoogleCredentialOptions o_;
  std::string file_;
};

class MetadataServer final : public Source {
 public:
  explicit MetadataServer(std::string host) : host_(std::move(host)) {}
  Result<GoogleToken> Fetch(int64_t) override {
    http::Call c;
    c.timeout_s = 2;  // off Compute Engine nothing answers: fail fast
    c.url = "http://" + host_ + "/computeMetadata/v1/instance/service-accounts/default/token";
    c.headers = {"Metadata-Flavor: Google"};
    XBAK_ASSIGN_OR_RETURN(http::Answer a, http::Perform(c, Describe()));
    if (a.status != 200) {
      return Error(ErrorCode::kInvalidArgument,
                   Describe() + " answered HTTP " + std::to_string(a.status) + " for the VM's token");
    }
    return ParseGoogleToken(a.body, Describe());
  }
  std::string Describe() const override { return "the metadata server at " + host_; }

 private:
  std::string host_;
};

std::string Text(const nlohmann::json& j, const char* name) {
  return j.contains(name) && j[name].is_string() ? j[name].get<std::string>() : "";
}

Result<std::unique_ptr<Source>> FromFile(const std::string& file, const GoogleCredentialOptions& o) {
  XBAK_ASSIGN_OR_RETURN(std::string text, util::ReadSmallFile(file));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object())
    return Error(ErrorCode::kInvalidArgument, "Google credentials " + file + ": not a JSON object");
  const std::string type = Text(j, "type");
  std::string token_uri = Text(j, "token_uri");
  if (token_uri.empty()) token_uri = kDefaultTokenUri;
  if (type == "service_account") {
    std::string email = Text(j, "client_email"), pem = Text(j, "private_key");
    if (email.empty() || pem.empty())
      return Error(ErrorCode::kInvalidArgument,
                   "Google credentials " + file + ": no client_email or private_key");
    return std::unique_ptr<Source>(
        std::make_unique<ServiceAccount>(email, pem, Text(j, "private_key_id"), token_uri, o, file));
  }
  if (type == "authorized_user") {
    std::string id = Text(j, "client_id"), secret = Text(j, "client_secret"),
                refresh = Text(j, "refresh_token");
    if (id.empty() || secret.empty() || refresh.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "Google credentials " + file + ": no client_id, client_secret or refresh_token");
    }
    std::string form = "grant_type=refresh_token&client_id=" + UriEncode(id, false) +
                       "&client_secret=" + UriEncode(secret, false) +
                       "&refresh_token=" + UriEncode(refresh, false);
    return std::unique_ptr<Source>(std::make_unique<AuthorizedUser>(form, token_uri, o, file));
  }
  return Error(ErrorCode::kInvalidArgument, "Google credentials " + file + ": type '" + type +
                                                "' is not supported (service_account or authorized_user)");
}

}  // namespace

std::string Base64Url(std::string_view bytes) {
  std::string s = Base64(bytes);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return s;
}

Result<GoogleToken> ParseGoogleToken(const std::string& json, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  GoogleToken t;
  if (j.is_object()) {
    t.access_token = Text(j, "access_token");
    if (j.contains("expires_in") && j["expires_in"].is_number_integer())
      t.expires_in = j["expires_in"].get<int64_t>();
  }
  if (t.access_token.empty() || t.expires_in <= 0 || t.expires_in > 7 * 86400)
    return Error(ErrorCode::kCorrupt, origin + ": the answer has no access_token and expires_in");
  return t;
}

Result<std::unique_ptr<GoogleTokens>> ResolveGoogleCredentials(const GoogleCredentialOptions& o) {
  auto env = [&](const char* name) -> std::string {
    if (o.env) return o.env(name);
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  std::string file = o.file;
  if (file.empty()) file = env("GOOGLE_APPLICATION_CREDENTIALS");
  if (file.empty() && !env("HOME").empty()) {
    std::string adc = env("HOME") + "/.config/gcloud/application_default_credentials.json";
    if (util::PathExists(adc)) file = adc;
  }
  std::unique_ptr<Source> source;
  if (!file.empty()) {
    XBAK_ASSIGN_OR_RETURN(source, FromFile(file, o));
  } else if (env("NO_GCE_CHECK") == "true") {
    return Error(ErrorCode::kInvalidArgument,
                 "no Google credentials: give --google-credentials=FILE or GOOGLE_APPLICATION_CREDENTIALS "
                 "(and NO_GCE_CHECK=true rules out the metadata server)");
  } else {
    std::string host = env("GCE_METADATA_HOST");
    source = std::make_unique<MetadataServer>(host.empty() ? "metadata.google.internal" : host);
  }
  return std::unique_ptr<GoogleTokens>(std::make_unique<Tokens>(std::move(source)));
}

}  // namespace xbak::storage
