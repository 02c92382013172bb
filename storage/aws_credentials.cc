#include "xbak/storage/aws_credentials.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "aws_sources.h"
#include "xbak/storage/s3_xml.h"
#include "xbak/util/file.h"

namespace xbak::storage {

Credentials::Credentials(std::unique_ptr<CredentialSource> source, AwsCredentials first, int64_t margin_s)
    : source_(std::move(source)), current_(std::move(first)), margin_s_(margin_s) {}

Result<AwsCredentials> Credentials::Get(int64_t now) {
  std::lock_guard<std::mutex> l(mu_);
  if (current_.expiration == 0 || now < current_.expiration - margin_s_) return current_;
  if (now < next_attempt_ && now < current_.expiration) return current_;
  auto fresh = source_->Fetch();
  if (fresh.ok()) {
    current_ = std::move(*fresh);
    renewals_++;
    return current_;
  }
  next_attempt_ = now + 30;
  if (now < current_.expiration) return current_;  // the old ones still serve
  return fresh.status().With("renewing the S3 credentials from " + source_->Describe() + ", which expired");
}

int64_t Credentials::expiration() const {
  std::lock_guard<std::mutex> l(mu_);
  return current_.expiration;
}

uint64_t Credentials::renewals() const {
  std::lock_guard<std::mutex> l(mu_);
  return renewals_;
}

Result<AwsIni> ParseAwsIni(const std::string& text, const std::string& origin) {
  AwsIni ini;
  std::string section;
  size_t line_no = 0, pos = 0;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
  };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view raw(text.data() + pos, nl - pos);
    pos = nl + 1;
    line_no++;
    std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (raw.front() == ' ' || raw.front() == '\t') continue;  // a nested setting ("s3 =" blocks)
    if (line.front() == '[') {
      if (line.back() != ']') {
        return Error(ErrorCode::kInvalidArgument,
                     origin + " line " + std::to_string(line_no) + ": unclosed [");
      }
      section = std::string(trim(line.substr(1, line.size() - 2)));
      ini[section];
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || section.empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   origin + " line " + std::to_string(line_no) +
                       (section.empty() ? ": a setting before any [section]" : ": expected 'key = value'"));
    }
    std::string key(trim(line.substr(0, eq)));
    std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
    ini[section][key] = std::string(trim(line.substr(eq + 1)));
  }
  return ini;
}

Result<AwsCredentials> ParseJsonCredentials(const std::string& json, const std::string& origin) {
  // The parser never throws (allow_exceptions = false); a value of another
  // type than a string is refused below.
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error(ErrorCode::kCorrupt, origin + ": not a JSON object");
  auto str = [&](const char* k) -> std::string {
    auto it = j.find(k);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (auto v = j.find("Version"); v != j.end() && !(v->is_number_integer() && v->get<int64_t>() == 1)) {
    return Error(ErrorCode::kCorrupt, origin + ": Version is not 1");
  }
  if (auto code = str("Code"); !code.empty() && code != "Success") {
    return Error(ErrorCode::kInvalidArgument, origin + ": Code " + code.substr(0, 64));
  }
  AwsCredentials c;
  c.access_key = str("AccessKeyId");
  c.secret_key = str("SecretAccessKey");
  c.session_token = str("SessionToken");
  if (c.session_token.empty()) c.session_token = str("Token");  // IMDS's name for it
  const std::string expiration = str("Expiration");
  if (c.access_key.empty() || c.secret_key.empty()) {
    return Error(ErrorCode::kCorrupt, origin + ": no AccessKeyId or SecretAccessKey");
  }
  if (!expiration.empty()) {
    c.expiration = ParseIsoUtc(expiration);
    if (c.expiration == 0) return Error(ErrorCode::kCorrupt, origin + ": Expiration is not ISO 8601 in UTC");
  }
  return c;
}

namespace {

// A profile's setting; "" when it has none.
std::string Setting(const std::map<std::string, std::string>& settings, const char* key) {
  auto it = settings.find(key);
  return it == settings.end() ? std::string() : it->second;
}

// The chain's state: the environment, the shared files, the endpoints.
class Chain {
 public:
  explicit Chain(const AwsCredentialOptions& o) : o_(o) {
    env_ = o.env ? o.env : [](const char* k) {
      const char* v = std::getenv(k);
      return v != nullptr ? std::string(v) : std::string();
    };
    const std::string home = env_("HOME");
    config_file_ = Env("AWS_CONFIG_FILE", home + "/.aws/config");
    credentials_file_ = Env("AWS_SHARED_CREDENTIALS_FILE", home + "/.aws/credentials");
    ep_.region = o.region.empty() ? "us-east-1" : o.region;
    ep_.sts = Env("AWS_ENDPOINT_URL_STS", "https://sts." + ep_.region + ".amazonaws.com");
    ep_.imds = Env("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://169.254.169.254");
    while (ep_.sts.ends_with('/')) ep_.sts.pop_back();
    while (ep_.imds.ends_with('/')) ep_.imds.pop_back();
    ep_.cacert = o.cacert;
    ep_.insecure = o.insecure;
  }

  Result<std::unique_ptr<CredentialSource>> Resolve() {
    if (!o_.access_key.empty() || !o_.secret_key.empty()) {
      // Each key given wins over the environment's (as xbcloud always did).
      AwsCredentials c{o_.access_key.empty() ? env_("AWS_ACCESS_KEY_ID") : o_.access_key,
                       o_.secret_key.empty() ? env_("AWS_SECRET_ACCESS_KEY") : o_.secret_key,
                       o_.session_token.empty() ? env_("AWS_SESSION_TOKEN") : o_.session_token, 0};
      if (c.access_key.empty() || c.secret_key.empty()) {
        return Error(ErrorCode::kInvalidArgument,
                     "s3-access-key and s3-secret-key go together (or with AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY): one is missing");
      }
      return aws::StaticSource(std::move(c), "the keys given to xbcloud");
    }
    if (!env_("AWS_ACCESS_KEY_ID").empty() || !env_("AWS_SECRET_ACCESS_KEY").empty()) {
      if (env_("AWS_ACCESS_KEY_ID").empty() || env_("AWS_SECRET_ACCESS_KEY").empty())
        return Error(ErrorCode::kInvalidArgument,
                     "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: one is unset");
      return aws::StaticSource(
          {env_("AWS_ACCESS_KEY_ID"), env_("AWS_SECRET_ACCESS_KEY"), env_("AWS_SESSION_TOKEN"), 0},
          "the environment (AWS_ACCESS_KEY_ID)");
    }
    if (!env_("AWS_WEB_IDENTITY_TOKEN_FILE").empty() && !env_("AWS_ROLE_ARN").empty()) {
      return aws::WebIdentitySource(
          env_("AWS_WEB_IDENTITY_TOKEN_FILE"), env_("AWS_ROLE_ARN"),
          Env("AWS_ROLE_SESSION_NAME", SessionName()), ep_,
          "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN " + env_("AWS_ROLE_ARN") + ")");
    }
    const bool named = !o_.profile.empty() || !env_("AWS_PROFILE").empty();
    const std::string profile = !o_.profile.empty() ? o_.profile : Env("AWS_PROFILE", "default");
    XBAK_RETURN_IF_ERROR(ReadFiles());
    XBAK_ASSIGN_OR_RETURN(auto from_profile, Profile(profile, 0));
    if (from_profile) return from_profile;
    if (named) {
      return Error(ErrorCode::kInvalidArgument, "AWS profile '" + profile + "' is not in " +
                                                    credentials_file_ + " nor in " + config_file_ +
                                                    " (or gives no credentials)");
    }
    if (env_("AWS_EC2_METADATA_DISABLED") != "true") return aws::ImdsSource(ep_);
    return Error(ErrorCode::kInvalidArgument,
                 "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or an AWS profile "
                 "(AWS_PROFILE, --s3-profile) in " +
                     credentials_file_ + " or " + config_file_ +
                     ", or s3-access-key and s3-secret-key in the [xbcloud] group of an options file");
  }

 private:
  std::string Env(const char* k, const std::string& fallback) const {
    std::string v = env_(k);
    return v.empty() ? fallback : v;
  }
  static std::string SessionName() { return "xbcloud-" + std::to_string(::time(nullptr)); }

  Status ReadFiles() {
    for (auto [path, ini] :
         {std::pair{credentials_file_, &credentials_}, std::pair{config_file_, &config_}}) {
      if (!util::PathExists(path)) continue;
      XBAK_ASSIGN_OR_RETURN(std::string text, util::ReadSmallFile(path));
      XBAK_ASSIGN_OR_RETURN(*ini, ParseAwsIni(text, path));
    }
    return Status::Ok();
  }

  // The settings of a profile: the config file's, then the credentials
  // file's over them.
  std::map<std::string, std::string> Settings(const std::string& profile) const {
    std::map<std::string, std::string> s;
    auto add = [&](const AwsIni& ini, const std::string& section) {
      if (auto it = ini.find(section); it != ini.end()) {
        for (const auto& [k, v] : it->second) s[k] = v;
      }
    };
    add(config_, profile == "default" ? "default" : "profile " + profile);
    add(credentials_, profile);
    return s;
  }

  // Long on purpose: the profile settings in the order the SDKs weigh them.
  Result<std::unique_ptr<CredentialSource>> Profile(const std::string& name, int depth) {
    if (depth > 4)
      return Error(ErrorCode::kInvalidArgument, "AWS profile " + name + ": source_profile loops");
    const auto s = Settings(name);
    auto get = [&](const char* k) { return Setting(s, k); };
    const std::string what = "AWS profile " + name;
    if (!get("role_arn").empty()) {
      const std::string session = get("role_session_name").empty() ? SessionName() : get("role_session_name");
      if (!get("web_identity_token_file").empty()) {
        return aws::WebIdentitySource(get("web_identity_token_file"), get("role_arn"), session, ep_,
                                      what + " (web_identity_token_file)");
      }
      std::unique_ptr<CredentialSource> base;
      if (!get("source_profile").empty()) {
        const bool self = get("source_profile") == name;  // its own keys assume the role
        XBAK_ASSIGN_OR_RETURN(base, self ? Keys(name, s) : Profile(get("source_profile"), depth + 1));
        if (!base)
          return Error(ErrorCode::kInvalidArgument,
                       what + ": source_profile " + get("source_profile") + " gives no credentials");
      } else if (get("credential_source") == "Environment") {
        base = aws::StaticSource(
            {env_("AWS_ACCESS_KEY_ID"), env_("AWS_SECRET_ACCESS_KEY"), env_("AWS_SESSION_TOKEN"), 0},
            "the environment");
      } else if (get("credential_source") == "Ec2InstanceMetadata") {
        base = aws::ImdsSource(ep_);
      } else {
        return Error(
            ErrorCode::kInvalidArgument,
            what + ": role_arn without source_profile, credential_source or web_identity_token_file");
      }
      return aws::AssumeRoleSource(std::move(base), get("role_arn"), session, get("external_id"), ep_,
                                   what + " (STS AssumeRole " + get("role_arn") + ")");
    }
    if (!get("credential_process").empty()) {
      return aws::ProcessSource(get("credential_process"), what + " (credential_process)");
    }
    return Keys(name, s);
  }

  // aws_access_key_id and aws_secret_access_key of a profile; none: null.
  Result<std::unique_ptr<CredentialSource>> Keys(const std::string& name,
                                                 const std::map<std::string, std::string>& s) {
    auto get = [&](const char* k) { return Setting(s, k); };
    if (get("aws_access_key_id").empty() && get("aws_secret_access_key").empty())
      return std::unique_ptr<CredentialSource>();
    if (get("aws_access_key_id").empty() || get("aws_secret_access_key").empty()) {
      return Error(ErrorCode::kInvalidArgument,
                   "AWS profile " + name + ": aws_access_key_id and aws_secret_access_key go together");
    }
    return aws::StaticSource(
        {get("aws_access_key_id"), get("aws_secret_access_key"), get("aws_session_token"), 0},
        "AWS profile " + name);
  }

  const AwsCredentialOptions& o_;
  std::function<std::string(const char*)> env_;
  std::string config_file_, credentials_file_;
  AwsIni config_, credentials_;
  aws::Endpoints ep_;
};

}  // namespace

Result<std::shared_ptr<Credentials>> ResolveAwsCredentials(const AwsCredentialOptions& options) {
  Chain chain(options);
  XBAK_ASSIGN_OR_RETURN(std::unique_ptr<CredentialSource> source, chain.Resolve());
  auto first = source->Fetch();  // its errors name the source
  if (!first.ok()) return first.status();
  const int64_t now = static_cast<int64_t>(::time(nullptr));
  if (first->expiration != 0 && first->expiration <= now) {
    return Error(ErrorCode::kInvalidArgument, "the S3 credentials from " + source->Describe() +
                                                  " expired at " + FormatIsoUtc(first->expiration));
  }
  int64_t margin = 300;
  std::string env = options.env ? options.env("XBCLOUD_CREDENTIALS_MARGIN") : "";
  if (env.empty() && !options.env && std::getenv("XBCLOUD_CREDENTIALS_MARGIN"))
    env = std::getenv("XBCLOUD_CREDENTIALS_MARGIN");
  if (!env.empty()) margin = std::max<int64_t>(0, std::atoll(env.c_str()));
  return std::make_shared<Credentials>(std::move(source), std::move(*first), margin);
}

}  // namespace xbak::storage
