// The Azure Blob Storage dialect of the HTTP store (http_store.h).
//
// Shared Key, as Azure's "Authorize with Shared Key" describes it for the
// Blob service: Authorization: SharedKey ACCOUNT:base64(HMAC-SHA256(key,
// StringToSign)), where StringToSign is the verb and twelve standard header
// slots, one per line (Content-Length empty when 0), then the x-ms-*
// headers lowercased and sorted as "name:value\n", then the canonical
// resource: "/ACCOUNT" + the URL's path exactly as sent (percent-encoded;
// an emulator's path starts with the account again) + one "\nname:value"
// line per query parameter, names lowercased and sorted, values decoded.
// Checked against Azurite; every header we send that has a slot is in it.
#include <algorithm>
#include <ctime>

#include "http_store.h"
#include "xbak/storage/azure_store.h"
#include "xbak/storage/azure_xml.h"
#include "xbak/storage/md5.h"
#include "xbak/storage/s3_xml.h"  // ParseErrorBody: Azure's <Error> has S3's shape
#include "xbak/storage/sigv4.h"   // HmacSha256
#include "xbak/storage/uri.h"

namespace xbak::storage {

namespace {

using namespace http;

// 2021-12-02 or later: the Cold tier needs it.
constexpr const char* kApiVersion = "2023-11-03";

class AzureDialect final : public HttpDialect {
 public:
  AzureDialect(AzureConfig config, std::string key, std::string url_path)
      : config_(std::move(config)), key_(std::move(key)), url_path_(std::move(url_path)) {}

  std::string Describe() const override { return "azure://" + config_.container + " at " + config_.endpoint; }
  std::string Endpoint() const override { return config_.endpoint; }
  std::string ObjectOptions() const override { return config_.tier.empty() ? "" : "tier=" + config_.tier; }

  void ShapePut(Request& r) const override {
    r.method = Method::kPut;
    r.content_md5 = Md5Base64(r.md5);
    r.content_type = "application/octet-stream";
  }

  void ShapeList(Request& r, const ListQuery& q) const override {
    r.name = "List Blobs";
    r.params = {{"restype", "container"}, {"comp", "list"}, {"prefix", q.prefix}, {"maxresults", "5000"}};
    if (q.delimit) r.params.emplace_back("delimiter", "/");
    if (!q.token.empty()) r.params.emplace_back("marker", q.token);
  }

  size_t DeleteBatch() const override { return 1; }
  void ShapeDelete(Request& r, const std::vector<std::string>& keys) const override {
    r.method = Method::kDelete;
    r.key = keys.front();
  }

  Status Prepare(const Request& r, Attempt* out) override {
    std::string path = url_path_ + "/" + config_.container;
    if (r.op != Op::kList) path += "/" + UriEncode(r.key, true);
    std::string query;
    for (const auto& [name, value] : r.params)
      query += (query.empty() ? "" : "&") + name + "=" + UriEncode(value, false);
    if (!config_.sas_token.empty()) query += (query.empty() ? "" : "&") + config_.sas_token;
    out->url = config_.endpoint + path.substr(url_path_.size()) + (query.empty() ? "" : "?" + query);

    std::vector<std::pair<std::string, std::string>> ms = {
        {"x-ms-date", FormatHttpDate(static_cast<int64_t>(::time(nullptr)))}, {"x-ms-version", kApiVersion}};
    std::string length;
    if (r.method == Method::kPut) {
      ms.emplace_back("x-ms-blob-type", "BlockBlob");
      if (!config_.tier.empty()) ms.emplace_back("x-ms-access-tier", config_.tier);
      if (r.BodySize() > 0) length = std::to_string(r.BodySize());
    }
    if (!r.content_type.empty()) out->headers.push_back("Content-Type: " + r.content_type);
    if (!r.content_md5.empty()) out->headers.push_back("Content-MD5: " + r.content_md5);
    // A resumed transfer must continue the same blob: the service answers
    // 412 if it was replaced since.
    const std::string if_match = r.resuming() ? r.first_etag : "";
    if (!if_match.empty()) out->headers.push_back("If-Match: " + if_match);
    for (const auto& [name, value] : ms) out->headers.push_back(name + ": " + value);
    if (!key_.empty()) {
      const std::string range = r.RangeSpec().empty() ? "" : "bytes=" + r.RangeSpec();
      std::string to_sign = std::string(MethodName(r.method)) + "\n\n\n" + length + "\n" + r.content_md5 +
                            "\n" + r.content_type + "\n\n\n" + if_match + "\n\n\n" + range + "\n";
      std::sort(ms.begin(), ms.end());
      for (const auto& [name, value] : ms) to_sign += name + ":" + value + "\n";
      to_sign += "/" + config_.account + path;
      auto params = r.params;
      std::sort(params.begin(), params.end());
      for (const auto& [name, value] : params) to_sign += "\n" + name + ":" + value;
      out->headers.push_back("Authorization: SharedKey " + config_.account + ":" +
                             Base64(HmacSha256(key_, to_sign)));
    }
    return Status::Ok();
  }

  // A 2xx answer: Put Blob returns the MD5 the service computed of what it
  // received (it also refuses a body that does not match Content-MD5).
  Outcome Answered(const Request& r) const override {
    if (r.op == Op::kPut && !r.answer_md5.empty() && r.answer_md5 != r.content_md5) {
      return {Error(ErrorCode::kCorrupt, r.What() + ": the store answered Content-MD5 " + r.answer_md5 +
                                             ", not the MD5 of what was sent (" + r.content_md5 + ")"),
              true};
    }
    return {Status::Ok()};
  }

  Outcome Failed(const Request& r, long http) const override {
    S3ErrorBody body = ParseErrorBody(r.response);
    // Azure's messages go on with "RequestId:...\nTime:..." lines.
    std::string message = body.message.substr(0, body.message.find('\n'));
    std::string what = r.What() + ": HTTP " + std::to_string(http);
    if (!body.code.empty()) what += " " + body.code;
    if (!message.empty()) what += ": " + message;
    const bool md5_refused = body.code == "Md5Mismatch" || message.find("MD5") != std::string::npos;
    if (http >= 500 || http == 408 || http == 429 || body.code == "ServerBusy" ||
        body.code == "OperationTimedOut" || (http == 400 && md5_refused)) {
      return {Error(ErrorCode::kIo, what), true};
    }
    if (http == 404 && body.code == "ContainerNotFound") {
      return {Error(ErrorCode::kInvalidArgument, "container '" + config_.container + "' does not exist at " +
                                                     config_.endpoint + " (" + what + ")")};
    }
    if (http == 404 && r.op == Op::kDelete) return {Status::Ok()};  // gone already
    if (http == 404) return {Error(ErrorCode::kNotFound, what)};
    if (http == 412 && r.ranged()) {
      return {Error(ErrorCode::kCorrupt, what + " (the blob was replaced while it was read)")};
    }
    if (http == 409 && body.code == "BlobArchived") {
      return {Error(ErrorCode::kUnreadable, what + " (an archived blob: rehydrate it to Hot or Cool first)")};
    }
    if (http == 403 || http == 401) {
      return {Error(ErrorCode::kInvalidArgument,
                    what + " (check the account name and key, or the SAS token and what it permits)")};
    }
    return {Error(ErrorCode::kServer, what)};
  }

  Status DeleteAnswered(const Request&) const override { return Status::Ok(); }

  Result<ListResult> ParseList(const std::string& body) const override { return ParseBlobList(body); }

 private:
  const AzureConfig config_;
  const std::string key_;       // the account key's bytes ("" with a SAS token)
  const std::string url_path_;  // the endpoint's own path ("" or "/devstoreaccount1")
};

bool NameOk(const std::string& s, size_t lo, size_t hi, bool hyphens) {
  if (s.size() < lo || s.size() > hi) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (hyphens && c == '-');
  });
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> MakeAzureStore(EventLoop& loop, AzureConfig c) {
  auto bad = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); };
  if (!NameOk(c.account, 3, 24, false))
    return bad("--azure-storage-account: '" + c.account + "' is not a storage account name (3-24 a-z, 0-9)");
  if (!NameOk(c.container, 3, 63, true) || c.container.front() == '-' || c.container.back() == '-' ||
      c.container.find("--") != std::string::npos)
    return bad("--azure-container-name: '" + c.container + "' is not a container name (3-63 a-z, 0-9, -)");
  if (c.endpoint.empty()) c.endpoint = "https://" + c.account + ".blob.core.windows.net";
  while (c.endpoint.ends_with("/")) c.endpoint.pop_back();
  const size_t scheme = c.endpoint.find("://");
  if (!c.endpoint.starts_with("http://") && !c.endpoint.starts_with("https://"))
    return bad("--azure-endpoint: '" + c.endpoint + "' is not http(s)://host[:port][/path]");
  const size_t slash = c.endpoint.find('/', scheme + 3);
  std::string url_path = slash == std::string::npos ? "" : c.endpoint.substr(slash);
  if (c.sas_token.starts_with("?")) c.sas_token.erase(0, 1);
  if (c.access_key.empty() == c.sas_token.empty())
    return bad(
        "Azure: give the account key (AZURE_STORAGE_KEY) or a SAS token (AZURE_STORAGE_SAS_TOKEN), one of "
        "them");
  std::string key;
  if (!c.access_key.empty()) {
    auto decoded = Base64Decode(c.access_key);
    if (!decoded || decoded->empty()) return bad("the Azure account key is not base64");
    key = std::move(*decoded);
  }
  if (!c.sas_token.empty() && c.sas_token.find("sig=") == std::string::npos)
    return bad("the Azure SAS token has no sig= (give the token's query string, e.g. sv=...&sig=...)");
  static constexpr const char* kTiers[] = {"Hot", "Cool", "Cold", "Archive"};
  if (!c.tier.empty() && std::find(std::begin(kTiers), std::end(kTiers), c.tier) == std::end(kTiers))
    return bad("--azure-tier-class must be Hot, Cool, Cold or Archive, not '" + c.tier + "'");
  HttpOptions options = c;
  return MakeHttpStore(loop, options,
                       std::make_unique<AzureDialect>(std::move(c), std::move(key), std::move(url_path)));
}

}  // namespace xbak::storage
