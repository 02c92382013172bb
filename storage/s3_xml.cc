// The S3 documents on the shared XML scanner (xml.h).
#include "xbak/storage/s3_xml.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xbak/storage/xml.h"
#include "xbak/util/utc_time.h"

namespace xbak::storage {

using xml::Clip;
using xml::CorruptAt;
using xml::Element;
using xml::ParseRoot;
using xml::Quote;
using xml::Trim;

std::string FormatIsoUtc(int64_t unix_time) { return util::FormatUtc(unix_time, "%Y-%m-%dT%H:%M:%SZ"); }

int64_t ParseIsoUtc(std::string_view v) {
  // Digits only (from_chars alone would take a sign), each field in range:
  // "2026-02-30" is no date, not March 2nd.
  auto num = [&](size_t at, size_t n, int lo, int hi, int* out) {
    if (at + n > v.size()) return false;
    for (size_t i = at; i < at + n; i++) {
      if (v[i] < '0' || v[i] > '9') return false;
    }
    std::from_chars(v.data() + at, v.data() + at + n, *out);
    return *out >= lo && *out <= hi;
  };
  struct tm t = {};
  if (v.size() < 20 || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':' ||
      v.back() != 'Z' || !num(0, 4, 1970, 9999, &t.tm_year) || !num(5, 2, 1, 12, &t.tm_mon) ||
      !num(8, 2, 1, 31, &t.tm_mday) || !num(11, 2, 0, 23, &t.tm_hour) || !num(14, 2, 0, 59, &t.tm_min) ||
      !num(17, 2, 0, 60, &t.tm_sec)) {
    return 0;
  }
  // Between the seconds and 'Z': nothing, or a fraction ".ddd".
  std::string_view frac = v.substr(19, v.size() - 20);
  if (!frac.empty() && (frac[0] != '.' || frac.size() < 2 ||
                        frac.substr(1).find_first_not_of("0123456789") != std::string_view::npos)) {
    return 0;
  }
  const int mday = t.tm_mday, mon = t.tm_mon;
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  time_t secs = timegm(&t);
  if (secs <= 0 || t.tm_mday != mday || t.tm_mon != mon - 1) return 0;  // normalised: no such day
  return static_cast<int64_t>(secs);
}

namespace {

Result<ListPage> ListPageFrom(std::string_view xml) {
  XBAK_ASSIGN_OR_RETURN(Element root, ParseRoot(xml, "ListBucketResult"));
  ListPage page;
  for (const Element& c : root.children) {
    if (c.name != "Contents") continue;
    const Element* key = c.Child("Key");
    if (key == nullptr) return CorruptAt("<Contents> without <Key>", c.offset);
    ListedObject o;
    o.key = key->text;
    const Element* size = c.Child("Size");
    if (size == nullptr) return CorruptAt("<Contents> of key " + Quote(o.key) + " without <Size>", c.offset);
    std::string_view digits = Trim(size->text);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), o.size);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
      return CorruptAt("<Size> " + Quote(size->text) + " of key " + Quote(o.key) + " is not a decimal uint64",
                       size->offset);
    }
    std::string_view etag = Trim(c.ChildText("ETag"));
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    for (char ch : etag) o.etag.push_back(ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch);
    // The time only informs: a store that writes it otherwise loses nothing but that.
    o.modified = ParseIsoUtc(Trim(c.ChildText("LastModified")));
    page.objects.push_back(std::move(o));
  }
  for (const Element& c : root.children) {
    if (c.name != "CommonPrefixes") continue;
    const Element* prefix = c.Child("Prefix");
    if (prefix == nullptr) return CorruptAt("<CommonPrefixes> without <Prefix>", c.offset);
    page.prefixes.push_back(prefix->text);
  }
  if (const Element* t = root.Child("IsTruncated")) {
    std::string_view v = Trim(t->text);
    if (v != "true" && v != "false") return CorruptAt("<IsTruncated> is " + Quote(t->text), t->offset);
    page.truncated = v == "true";
  }
  page.next_token = root.ChildText("NextContinuationToken");
  if (page.truncated && page.next_token.empty()) {
    return CorruptAt("a truncated listing without <NextContinuationToken>", root.offset);
  }
  return page;
}

Result<std::vector<DeleteFailure>> DeleteFailuresFrom(std::string_view xml) {
  XBAK_ASSIGN_OR_RETURN(Element root, ParseRoot(xml, "DeleteResult"));
  std::vector<DeleteFailure> failures;
  for (const Element& c : root.children) {
    if (c.name != "Error") continue;
    failures.push_back({std::string(c.ChildText("Key")), std::string(c.ChildText("Code")),
                        std::string(c.ChildText("Message"))});
  }
  return failures;
}

}  // namespace

Result<AwsCredentials> ParseStsCredentials(std::string_view xml, const std::string& origin) {
  auto root = xml::Parse(xml);
  if (!root.ok()) return root.status().With(origin);
  if (root->name == "ErrorResponse" || root->name == "Error") {
    const Element* e = root->name == "Error" ? &*root : root->Child("Error");
    std::string code = e ? Clip(e->ChildText("Code")) : "", msg = e ? Clip(e->ChildText("Message"), 256) : "";
    return Error(ErrorCode::kInvalidArgument, origin + " refused: " + code + (msg.empty() ? "" : ": " + msg));
  }
  // <XResponse><XResult><Credentials>...</Credentials></XResult></XResponse>
  const Element* creds = nullptr;
  for (const Element& result : root->children) {
    if (result.name.ends_with("Result")) creds = result.Child("Credentials");
    if (creds != nullptr) break;
  }
  if (creds == nullptr)
    return Error(ErrorCode::kCorrupt, origin + ": no Credentials in <" + Clip(root->name) + ">");
  AwsCredentials c;
  c.access_key = std::string(Trim(creds->ChildText("AccessKeyId")));
  c.secret_key = std::string(Trim(creds->ChildText("SecretAccessKey")));
  c.session_token = std::string(Trim(creds->ChildText("SessionToken")));
  c.expiration = ParseIsoUtc(Trim(creds->ChildText("Expiration")));
  if (c.access_key.empty() || c.secret_key.empty() || c.session_token.empty() || c.expiration == 0) {
    return Error(
        ErrorCode::kCorrupt,
        origin + ": Credentials lack AccessKeyId, SecretAccessKey, SessionToken or an Expiration in UTC");
  }
  return c;
}

ListResult ListResultFrom(ListPage page) {
  ListResult out;
  out.objects.reserve(page.objects.size());
  for (auto& o : page.objects) {
    out.objects.push_back({std::move(o.key), o.size, Md5FromHex(o.etag), o.modified});
  }
  out.prefixes = std::move(page.prefixes);
  if (page.truncated) out.next_token = std::move(page.next_token);
  return out;
}

Result<ListPage> ParseListObjectsV2(std::string_view xml) {
  auto r = ListPageFrom(xml);
  if (!r.ok()) return r.status().With("S3 ListObjectsV2 response");
  return r;
}

S3ErrorBody ParseErrorBody(std::string_view xml) {
  auto root = xml::Parse(xml);
  if (!root.ok() || root->name != "Error") return {};
  return {std::string(root->ChildText("Code")), std::string(root->ChildText("Message"))};
}

Result<std::vector<DeleteFailure>> ParseDeleteResult(std::string_view xml) {
  auto r = DeleteFailuresFrom(xml);
  if (!r.ok()) return r.status().With("S3 DeleteObjects response");
  return r;
}

std::string BuildDeleteRequest(const std::vector<std::string>& keys) {
  std::string out = R"(<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>true</Quiet>)";
  for (const std::string& k : keys) out += "<Object><Key>" + XmlEscape(k) + "</Key></Object>";
  return out + "</Delete>";
}

}  // namespace xbak::storage
