#include "s3_object_options.h"

#include <ctime>

#include "xbak/storage/md5.h"
#include "xbak/storage/s3_xml.h"

namespace xbak::storage::s3 {
namespace {

std::vector<std::string> SseCHeaders(const S3Config& c) {
  if (c.sse_c_key.empty()) return {};
  return {"x-amz-server-side-encryption-customer-algorithm: AES256",
          "x-amz-server-side-encryption-customer-key: " + Base64(c.sse_c_key),
          "x-amz-server-side-encryption-customer-key-MD5: " + Md5Base64(Md5(c.sse_c_key))};
}

}  // namespace

Status CheckObjectOptions(const S3Config& c) {
  auto bad = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, what); };
  for (char ch : c.storage_class) {
    if (!((ch >= 'A' && ch <= 'Z') || ch == '_')) {
      return bad("--s3-storage-class: '" + c.storage_class +
                 "' is not a storage class (STANDARD, STANDARD_IA, ...)");
    }
  }
  if (!c.sse.empty() && c.sse != "AES256" && c.sse != "aws:kms") {
    return bad("--s3-sse must be AES256 (SSE-S3) or aws:kms (SSE-KMS), not '" + c.sse + "'");
  }
  if (!c.sse_kms_key_id.empty() && c.sse != "aws:kms")
    return bad("--s3-sse-kms-key-id goes with --s3-sse=aws:kms");
  if (!c.sse_c_key.empty() && c.sse_c_key.size() != 32) {
    return bad("the SSE-C key must be 32 bytes (AES-256), not " + std::to_string(c.sse_c_key.size()));
  }
  if (!c.sse_c_key.empty() && !c.sse.empty()) return bad("SSE-C and --s3-sse exclude each other");
  // The key goes in every request's headers: never in the clear (the AWS SDKs refuse it too).
  if (!c.sse_c_key.empty() && !c.endpoint.starts_with("https://")) {
    return bad("SSE-C sends the customer key with every request: only over https, not to " + c.endpoint);
  }
  if (!c.lock_mode.empty() && c.lock_mode != "GOVERNANCE" && c.lock_mode != "COMPLIANCE") {
    return bad("--s3-object-lock-mode must be GOVERNANCE or COMPLIANCE, not '" + c.lock_mode + "'");
  }
  if (c.lock_mode.empty() != (c.lock_until == 0)) {
    return bad(
        "--s3-object-lock-mode and a retention date (--s3-object-lock-retain-until or -days) go together");
  }
  if (c.lock_until != 0 && c.lock_until <= static_cast<int64_t>(::time(nullptr))) {
    return bad("the Object Lock retention date " + FormatIsoUtc(c.lock_until) + " is not in the future");
  }
  return Status::Ok();
}

std::vector<std::string> PutHeaders(const S3Config& c) {
  std::vector<std::string> h;
  if (!c.storage_class.empty()) h.push_back("x-amz-storage-class: " + c.storage_class);
  if (!c.sse.empty()) h.push_back("x-amz-server-side-encryption: " + c.sse);
  if (!c.sse_kms_key_id.empty())
    h.push_back("x-amz-server-side-encryption-aws-kms-key-id: " + c.sse_kms_key_id);
  for (auto& s : SseCHeaders(c)) h.push_back(std::move(s));
  if (!c.lock_mode.empty()) {
    h.push_back("x-amz-object-lock-mode: " + c.lock_mode);
    h.push_back("x-amz-object-lock-retain-until-date: " + FormatIsoUtc(c.lock_until));
  }
  return h;
}

std::vector<std::string> GetHeaders(const S3Config& c) { return SseCHeaders(c); }

std::string ObjectOptionsText(const S3Config& c) {
  std::string out;
  auto add = [&](const std::string& k, const std::string& v) {
    if (v.empty()) return;
    if (!out.empty()) out += ',';
    out += k + "=" + v;
  };
  add("class", c.storage_class);
  add("sse", c.sse);
  add("kms", c.sse_kms_key_id);
  add("sse-c-md5", c.sse_c_key.empty() ? "" : Md5Base64(Md5(c.sse_c_key)));
  add("lock", c.lock_mode);
  return out;
}

bool EtagIsMd5(const S3Config& c) { return c.sse != "aws:kms" && c.sse_c_key.empty(); }

}  // namespace xbak::storage::s3
