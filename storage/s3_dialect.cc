// The S3 dialect of the HTTP store (http_store.h): path- or virtual-hosted
// addresses, SigV4 signatures (our own signer, sigv4.h), ListObjectsV2,
// DeleteObjects, S3's error documents, and the options users set on every
// object (s3_object_options.h).
#include <ctime>

#include "http_store.h"
#include "s3_address.h"
#include "s3_object_options.h"
#include "xbak/storage/s3_store.h"
#include "xbak/storage/s3_xml.h"
#include "xbak/storage/sigv4.h"

namespace xbak::storage {

namespace {

using namespace http;

// The SHA-256 of an empty body, which SigV4 wants in x-amz-content-sha256 for
// requests without one.
constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

class S3Dialect final : public HttpDialect {
 public:
  S3Dialect(S3Config config, s3::Address address)
      : config_(std::move(config)),
        base_url_(std::move(address.base_url)),
        path_prefix_(std::move(address.path_prefix)),
        host_(base_url_.substr(base_url_.find("://") + 3)) {}

  std::string Describe() const override { return "s3://" + config_.bucket + " at " + config_.endpoint; }
  std::string Endpoint() const override { return config_.endpoint; }
  std::string ObjectOptions() const override { return s3::ObjectOptionsText(config_); }

  void ShapePut(Request& r) const override {
    r.method = Method::kPut;
    r.content_md5 = Md5Base64(r.md5);
  }

  void ShapeList(Request& r, const ListQuery& q) const override {
    r.name = "ListObjectsV2";
    // Parameters in canonical order (sorted by name), values encoded once.
    if (!q.token.empty()) r.query = "continuation-token=" + UriEncode(q.token, false) + "&";
    if (q.delimit) r.query += "delimiter=%2F&";
    r.query += "list-type=2&prefix=" + UriEncode(q.prefix, false);
  }

  size_t DeleteBatch() const override { return 1000; }
  void ShapeDelete(Request& r, const std::vector<std::string>& keys) const override {
    r.name = "DeleteObjects";
    r.method = Method::kPost;
    r.query = "delete=";
    r.content_type = "application/xml";
    auto xml = std::make_shared<std::string>(BuildDeleteRequest(keys));
    r.content_md5 = Md5Base64(Md5(*xml));
    r.body = std::move(xml);
  }

  Status Prepare(const Request& r, Attempt* out) override {
    out->url = base_url_ + path_prefix_ + UriEncode(r.key, true);
    if (!r.query.empty()) out->url += "?" + r.query;
    // Renewed here when they are about to expire (a long put outlives
    // temporary credentials).
    const int64_t now = static_cast<int64_t>(::time(nullptr));
    XBAK_ASSIGN_OR_RETURN(AwsCredentials keys, config_.credentials->Get(now));
    // Headers that go into the signature (sigv4.h) as well.
    std::vector<std::pair<std::string, std::string>> signed_headers;
    auto sign = [&](const std::string& h) {
      const size_t colon = h.find(':');
      signed_headers.emplace_back(h.substr(0, colon), h.substr(colon + 2));
      out->headers.push_back(h);
    };
    sign("Host: " + host_);
    if (!keys.session_token.empty()) sign("x-amz-security-token: " + keys.session_token);
    if (!r.content_md5.empty()) sign("Content-MD5: " + r.content_md5);
    if (!r.content_type.empty()) sign("Content-Type: " + r.content_type);
    if (!r.key.empty()) {  // an object's PUT or GET: its storage class, encryption, lock
      for (const auto& h : r.method == Method::kPut ? s3::PutHeaders(config_) : s3::GetHeaders(config_))
        sign(h);
    }
    const char* payload = r.method == Method::kGet ? kEmptySha256 : "UNSIGNED-PAYLOAD";
    sign(std::string("x-amz-content-sha256: ") + payload);
    // The Range (set by the engine) is not signed: the signature then
    // covers the same headers as a whole-object GET. A resumed transfer
    // must continue the same object: a store whose object was replaced
    // since answers 412 instead.
    if (r.resuming() && !r.first_etag.empty()) {
      // An entity tag is quoted (RFC 9110); a server that sent one bare gets it quoted back.
      const bool quoted = r.first_etag.front() == '"' || r.first_etag.starts_with("W/");
      out->headers.push_back("If-Match: " + (quoted ? r.first_etag : "\"" + r.first_etag + "\""));
    }
    SigV4Input in{MethodName(r.method), path_prefix_ + UriEncode(r.key, true), r.query,
                  std::move(signed_headers), payload};
    for (auto& h : SignV4(in, {keys.access_key, keys.secret_key, config_.region, "s3"}, now))
      out->headers.push_back(std::move(h));
    return Status::Ok();
  }

  // A 2xx answer: a PUT's ETag must be the MD5 of what was sent (when the
  // store's ETag is an MD5 at all: not under SSE-KMS or SSE-C).
  Outcome Answered(const Request& r) const override {
    if (r.op == Op::kPut && s3::EtagIsMd5(config_) && r.etag != Md5Hex(r.md5)) {
      // The server stored something else than we sent (or a proxy mangled it).
      return {Error(ErrorCode::kCorrupt, r.What() + ": the store answered ETag " + r.etag +
                                             ", not the MD5 of what was sent (" + Md5Hex(r.md5) + ")"),
              true};
    }
    // GET bodies are not checked against their ETag here: the caller
    // knows the MD5 it expects (xbcloud's manifest) and checks it once;
    // hashing every body twice was a third of get's CPU.
    return {Status::Ok()};
  }

  // Any other answer: the store's error body says more, and whether it is
  // worth another attempt.
  Outcome Failed(const Request& r, long http) const override {
    S3ErrorBody body = ParseErrorBody(r.response);
    std::string what = r.What() + ": HTTP " + std::to_string(http);
    if (!body.code.empty()) what += " " + body.code;
    if (!body.message.empty()) what += ": " + body.message;
    if (http >= 500 || http == 408 || http == 429 || body.code == "SlowDown" ||
        body.code == "RequestTimeout" || body.code == "BadDigest" || body.code == "InternalError" ||
        body.code == "RequestTimeTooSkewed") {
      return {Error(ErrorCode::kIo, what), true};
    }
    if (http == 404) {
      return {Error(body.code == "NoSuchBucket" ? ErrorCode::kInvalidArgument : ErrorCode::kNotFound,
                    body.code == "NoSuchBucket" ? "bucket '" + config_.bucket + "' does not exist at " +
                                                      config_.endpoint + " (" + what + ")"
                                                : what)};
    }
    if (http == 412 && r.ranged()) {
      return {Error(ErrorCode::kCorrupt, what + " (the object was replaced while it was read)")};
    }
    if (http == 400 && body.message.find("Server Side Encryption") != std::string::npos) {
      return {Error(ErrorCode::kUnreadable, what + " (an SSE-C backup: give its key, --s3-sse-c-key-file)")};
    }
    if (http == 403 && body.code == "InvalidObjectState") {
      return {Error(ErrorCode::kUnreadable,
                    what + " (an archived object: restore it from its storage class first)")};
    }
    if (http == 403 || http == 401) {
      return {Error(ErrorCode::kInvalidArgument, what + " (check the access key, secret key and region)")};
    }
    return {Error(ErrorCode::kServer, what)};
  }

  // DeleteObjects: per-key failures in a 200.
  Status DeleteAnswered(const Request& r) const override {
    auto failures = ParseDeleteResult(r.response);
    if (!failures.ok()) return failures.status().With("DeleteObjects response");
    if (failures->empty()) return Status::Ok();
    const auto& d = failures->front();
    return Error(ErrorCode::kServer, "delete " + d.key + ": " + d.code + ": " + d.message + " (and " +
                                         std::to_string(failures->size() - 1) + " more)");
  }

  Result<ListResult> ParseList(const std::string& body) const override {
    auto page = ParseListObjectsV2(body);
    if (!page.ok()) return page.status();
    return ListResultFrom(std::move(*page));
  }

 private:
  const S3Config config_;
  const std::string base_url_;     // scheme://host[:port]
  const std::string path_prefix_;  // "/bucket/" (path style) or "/" (virtual-hosted)
  const std::string host_;         // host[:port] of base_url_, as the Host header (signed)
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> MakeS3Store(EventLoop& loop, S3Config config) {
  XBAK_ASSIGN_OR_RETURN(s3::Address address, s3::ResolveAddress(&config));
  XBAK_RETURN_IF_ERROR(s3::CheckObjectOptions(config));
  HttpOptions options = config;  // the connection part
  return MakeHttpStore(loop, options, std::make_unique<S3Dialect>(std::move(config), std::move(address)));
}

}  // namespace xbak::storage
