// The JSON API's documents (gcs_store.h), on nlohmann::json, which parses
// untrusted bytes without exceptions when asked (parse(..., false)).
#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "xbak/storage/gcs_store.h"
#include "xbak/storage/md5.h"
#include "xbak/storage/s3_xml.h"  // ParseIsoUtc: RFC 3339 in UTC
#include "xbak/storage/xml.h"     // Clip

namespace xbak::storage {
namespace {

Status Bad(const std::string& what) {
  return Error(ErrorCode::kCorrupt, "Google objects.list response: " + what);
}

}  // namespace

Result<ListResult> ParseGcsList(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) return Bad("not a JSON object");
  ListResult out;
  if (j.contains("items")) {
    if (!j["items"].is_array()) return Bad("\"items\" is not an array");
    for (const auto& item : j["items"]) {
      if (!item.is_object() || !item.contains("name") || !item["name"].is_string())
        return Bad("an item without a \"name\"");
      ObjectInfo o;
      o.key = item["name"].get<std::string>();
      // The JSON API writes 64-bit numbers as decimal strings.
      const auto* size = item.contains("size") ? &item["size"] : nullptr;
      std::string digits = size != nullptr && size->is_string() ? size->get<std::string>() : "";
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), o.size);
      if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
        return Bad("the \"size\" of \"" + xml::Clip(o.key) + "\" is not a decimal string");
      if (item.contains("md5Hash") && item["md5Hash"].is_string())
        o.md5 = Md5FromBase64(item["md5Hash"].get<std::string>());
      if (item.contains("updated") && item["updated"].is_string())
        o.modified = ParseIsoUtc(item["updated"].get<std::string>());
      out.objects.push_back(std::move(o));
    }
  }
  if (j.contains("prefixes")) {
    if (!j["prefixes"].is_array()) return Bad("\"prefixes\" is not an array");
    for (const auto& p : j["prefixes"]) {
      if (!p.is_string()) return Bad("a prefix that is not a string");
      out.prefixes.push_back(p.get<std::string>());
    }
  }
  if (j.contains("nextPageToken")) {
    if (!j["nextPageToken"].is_string()) return Bad("\"nextPageToken\" is not a string");
    out.next_token = j["nextPageToken"].get<std::string>();
  }
  std::sort(out.objects.begin(), out.objects.end(), [](auto& a, auto& b) { return a.key < b.key; });
  std::sort(out.prefixes.begin(), out.prefixes.end());
  return out;
}

std::optional<Md5Digest> GcsObjectMd5(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object() || !j.contains("md5Hash") || !j["md5Hash"].is_string()) return std::nullopt;
  return Md5FromBase64(j["md5Hash"].get<std::string>());
}

GcsError ParseGcsError(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  GcsError e;
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return e;
  const auto& err = j["error"];
  if (err.contains("message") && err["message"].is_string())
    e.message = xml::Clip(err["message"].get<std::string>(), 256);
  if (err.contains("errors") && err["errors"].is_array() && !err["errors"].empty()) {
    const auto& first = err["errors"][0];
    if (first.is_object() && first.contains("reason") && first["reason"].is_string())
      e.reason = first["reason"].get<std::string>();
  }
  return e;
}

}  // namespace xbak::storage
