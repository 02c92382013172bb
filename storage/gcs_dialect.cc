// The Google Cloud Storage dialect of the HTTP store (http_store.h): the
// JSON API (storage/v1), with a bearer token on every request.
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>

#include "http_store.h"
#include "xbak/storage/gcs_store.h"
#include "xbak/storage/md5.h"
#include "xbak/storage/uri.h"
#include "xbak/util/hex.h"

namespace xbak::storage {

namespace {

using namespace http;

bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; k++) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n;
  }
  return true;
}

class GcsDialect final : public HttpDialect {
 public:
  explicit GcsDialect(GcsConfig config) : config_(std::move(config)), rng_(std::random_device{}()) {}

  std::string Describe() const override { return "gs://" + config_.bucket + " at " + config_.endpoint; }
  std::string Endpoint() const override { return config_.endpoint; }
  std::string ObjectOptions() const override {
    return config_.storage_class.empty() ? "" : "class=" + config_.storage_class;
  }

  // A multipart upload: the metadata part carries the MD5, which the
  // service checks before it stores anything (a media upload would store
  // a damaged body and leave us only its answer to compare). The body is
  // sent between its two framing strings, not copied into a third.
  void ShapePut(Request& r) const override {
    r.method = Method::kPost;
    // JSON holds UTF-8 only (and Google's names are UTF-8): Prepare refuses
    // another key, as nlohmann::json::dump would throw on it.
    if (!ValidUtf8(r.key)) return;
    nlohmann::json meta = {{"name", r.key}, {"md5Hash", Md5Base64(r.md5)}};
    if (!config_.storage_class.empty()) meta["storageClass"] = config_.storage_class;
    std::string boundary;
    do {  // must not occur in the body (RFC 2046); 128 random bits never do in practice
      uint64_t a = rng_(), b = rng_();
      boundary = "xbcloud-" + util::HexBytes(reinterpret_cast<const uint8_t*>(&a), sizeof a) +
                 util::HexBytes(reinterpret_cast<const uint8_t*>(&b), sizeof b);
    } while (r.body->find(boundary) != std::string::npos);
    r.body_head = "--" + boundary + "\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n" +
                  meta.dump() + "\r\n--" + boundary + "\r\nContent-Type: application/octet-stream\r\n\r\n";
    r.body_tail = "\r\n--" + boundary + "--\r\n";
    r.content_type = "multipart/related; boundary=" + boundary;
  }

  void ShapeList(Request& r, const ListQuery& q) const override {
    r.name = "objects.list";
    r.params = {{"prefix", q.prefix},
                {"maxResults", "1000"},
                {"fields", "items(name,size,md5Hash,updated),prefixes,nextPageToken"}};
    if (q.delimit) r.params.emplace_back("delimiter", "/");
    if (!q.token.empty()) r.params.emplace_back("pageToken", q.token);
  }

  size_t DeleteBatch() const override { return 1; }
  void ShapeDelete(Request& r, const std::vector<std::string>& keys) const override {
    r.method = Method::kDelete;
    r.key = keys.front();
  }

  Status Prepare(const Request& r, Attempt* out) override {
    const std::string bucket = "/b/" + UriEncode(config_.bucket, false) + "/o";
    std::vector<std::pair<std::string, std::string>> params = r.params;
    switch (r.op) {
      case Op::kPut:
        if (r.body_head.empty())
          return Error(ErrorCode::kInvalidArgument,
                       "PUT " + r.key + ": Google Cloud Storage names must be UTF-8");
        out->url = config_.endpoint + "/upload/storage/v1" + bucket;
        params.emplace_back("uploadType", "multipart");
        out->headers.push_back("Content-Type: " + r.content_type);
        break;
      case Op::kGet:
        out->url = config_.endpoint + "/storage/v1" + bucket + "/" + UriEncode(r.key, false);
        params.emplace_back("alt", "media");
        // A resumed transfer reads the generation it started on: a replaced
        // object answers 404 instead.
        if (r.resuming() && !r.first_generation.empty())
          params.emplace_back("generation", r.first_generation);
        break;
      case Op::kDelete:
        out->url = config_.endpoint + "/storage/v1" + bucket + "/" + UriEncode(r.key, false);
        break;
      case Op::kList:
        out->url = config_.endpoint + "/storage/v1" + bucket;
        break;
    }
    std::string query;
    for (const auto& [name, value] : params)
      query += (query.empty() ? "?" : "&") + name + "=" + UriEncode(value, false);
    out->url += query;
    if (config_.tokens) {
      XBAK_ASSIGN_OR_RETURN(std::string token, config_.tokens->Get(static_cast<int64_t>(::time(nullptr))));
      out->headers.push_back("Authorization: Bearer " + token);
    }
    return Status::Ok();
  }

  // The upload's answer is the object resource: its md5Hash is what the
  // service computed of what it stored.
  Outcome Answered(const Request& r) const override {
    if (r.op != Op::kPut) return {Status::Ok()};
    auto md5 = GcsObjectMd5(r.response);
    if (!md5 || *md5 != r.md5) {
      return {Error(ErrorCode::kCorrupt,
                    r.What() + ": the store's answer does not carry the MD5 of what was sent (" +
                        Md5Base64(r.md5) + ")"),
              true};
    }
    return {Status::Ok()};
  }

  Outcome Failed(const Request& r, long http) const override {
    GcsError body = ParseGcsError(r.response);
    if (body.message.empty() && !r.response.empty() && r.response.front() != '<' && r.response.front() != '{')
      body.message = r.response.substr(0, std::min<size_t>(r.response.find('\n'), 200));  // plain text
    std::string what = r.What() + ": HTTP " + std::to_string(http);
    if (!body.reason.empty()) what += " " + body.reason;
    if (!body.message.empty()) what += ": " + body.message;
    if (http >= 500 || http == 408 || http == 429 ||
        (http == 400 && body.message.find("MD5") != std::string::npos)) {
      return {Error(ErrorCode::kIo, what), true};
    }
    if (http == 404 && r.resuming() && !r.first_generation.empty()) {
      return {Error(ErrorCode::kCorrupt, what + " (the object was replaced while it was read)")};
    }
    // Google says which: "No such object: ..." or "The specified bucket does
    // not exist." (an emulator may say only "Not Found").
    const bool no_bucket = body.message.find("bucket does not exist") != std::string::npos;
    if (http == 404 && r.op == Op::kDelete && !no_bucket) return {Status::Ok()};  // gone already
    if (http == 404 && (r.op == Op::kList || r.op == Op::kPut || no_bucket)) {
      return {Error(ErrorCode::kInvalidArgument, "bucket '" + config_.bucket + "' does not exist at " +
                                                     config_.endpoint + " (" + what + ")")};
    }
    if (http == 404) return {Error(ErrorCode::kNotFound, what)};
    if (http == 412 && r.ranged()) {
      return {Error(ErrorCode::kCorrupt, what + " (the object was replaced while it was read)")};
    }
    if (http == 401 || http == 403) {
      return {Error(ErrorCode::kInvalidArgument,
                    what + " (check the credentials" +
                        (config_.tokens ? ", " + config_.tokens->Describe() + "," : std::string()) +
                        " and their access to the bucket)")};
    }
    return {Error(ErrorCode::kServer, what)};
  }

  Status DeleteAnswered(const Request&) const override { return Status::Ok(); }

  Result<ListResult> ParseList(const std::string& body) const override { return ParseGcsList(body); }

 private:
  const GcsConfig config_;
  mutable std::mt19937_64 rng_;  // multipart boundaries (the loop's thread only)
};

}  // namespace

Status CheckGcsBucketName(const std::string& b) {
  bool ok = b.size() >= 3 && b.size() <= 222;
  for (char ch : b) {
    ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.');
  }
  if (ok) return Status::Ok();
  return Error(ErrorCode::kInvalidArgument,
               "--google-bucket: '" + b + "' is not a bucket name (3-222 a-z, 0-9, - _ .)");
}

Result<std::unique_ptr<ObjectStore>> MakeGcsStore(EventLoop& loop, GcsConfig c) {
  auto bad = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); };
  XBAK_RETURN_IF_ERROR(CheckGcsBucketName(c.bucket));
  if (c.endpoint.empty()) c.endpoint = "https://storage.googleapis.com";
  while (c.endpoint.ends_with("/")) c.endpoint.pop_back();
  if (!c.endpoint.starts_with("http://") && !c.endpoint.starts_with("https://"))
    return bad("--google-endpoint: '" + c.endpoint + "' is not http(s)://host[:port]");
  for (char ch : c.storage_class) {
    if (!((ch >= 'A' && ch <= 'Z') || ch == '_'))
      return bad("--google-storage-class: '" + c.storage_class + "' is not a storage class (NEARLINE, ...)");
  }
  HttpOptions options = c;
  return MakeHttpStore(loop, options, std::make_unique<GcsDialect>(std::move(c)));
}

}  // namespace xbak::storage
