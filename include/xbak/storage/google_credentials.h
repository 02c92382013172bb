// Google Cloud credentials found as Google's client libraries find them
// ("Application Default Credentials"), as OAuth 2.0 access tokens renewed
// five minutes before they expire, in the middle of a long put:
//   1. the JSON file given (--google-credentials), else the one
//      GOOGLE_APPLICATION_CREDENTIALS names, else gcloud's
//      ~/.config/gcloud/application_default_credentials.json:
//      - "service_account": a JWT signed with its private key (RS256) is
//        exchanged at its token_uri (the OAuth 2.0 JWT bearer grant);
//      - "authorized_user" (gcloud auth application-default login): its
//        refresh token is exchanged at its token_uri;
//   2. the metadata server of a Compute Engine VM (GCE_METADATA_HOST moves
//      it; tests run it on loopback), unless NO_GCE_CHECK=true.
// Keys and tokens never appear in messages.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "xbak/util/status.h"

namespace xbak::storage {

struct GoogleCredentialOptions {
  std::string file;    // --google-credentials ("": the chain above)
  std::string cacert;  // CA bundle for the token endpoint ("": the system's)
  bool insecure = false;
  std::function<std::string(const char*)> env;  // default: getenv
};

class GoogleTokens {
 public:
  virtual ~GoogleTokens() = default;
  // An access token valid for at least five more minutes at `now` (Unix
  // time), fetched again when the last one is older.
  virtual Result<std::string> Get(int64_t now) = 0;
  // For messages: "service account backup@p.iam.gserviceaccount.com (FILE)".
  virtual std::string Describe() const = 0;
};

// Finds the credentials (reads the file, nothing is sent yet).
Result<std::unique_ptr<GoogleTokens>> ResolveGoogleCredentials(const GoogleCredentialOptions& options);

// The OAuth token endpoint's answer: {"access_token": ..., "expires_in": N}.
struct GoogleToken {
  std::string access_token;
  int64_t expires_in = 0;
};
Result<GoogleToken> ParseGoogleToken(const std::string& json, const std::string& origin);

// base64url without padding (JWT's encoding).
std::string Base64Url(std::string_view bytes);

}  // namespace xbak::storage
