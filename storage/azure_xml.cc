#include "xbak/storage/azure_xml.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <ctime>

#include "xbak/storage/md5.h"
#include "xbak/storage/xml.h"
#include "xbak/util/utc_time.h"

namespace xbak::storage {

using xml::CorruptAt;
using xml::Element;
using xml::Quote;
using xml::Trim;

namespace {

Result<ObjectInfo> BlobFrom(const Element& blob) {
  const Element* name = blob.Child("Name");
  if (name == nullptr) return CorruptAt("<Blob> without <Name>", blob.offset);
  ObjectInfo o;
  o.key = name->text;
  const Element* props = blob.Child("Properties");
  const Element* length = props != nullptr ? props->Child("Content-Length") : nullptr;
  if (length == nullptr)
    return CorruptAt("<Blob> " + Quote(o.key) + " without <Content-Length>", blob.offset);
  std::string_view digits = Trim(length->text);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), o.size);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    return CorruptAt(
        "<Content-Length> " + Quote(length->text) + " of blob " + Quote(o.key) + " is not a decimal uint64",
        length->offset);
  }
  // The service's MD5 of the blob (a Put Blob's, checked on arrival); a
  // blob assembled from blocks has none.
  o.md5 = Md5FromBase64(Trim(props->ChildText("Content-MD5")));
  o.modified = ParseHttpDate(Trim(props->ChildText("Last-Modified")));
  return o;
}

}  // namespace

Result<ListResult> ParseBlobList(std::string_view text) {
  auto parsed = [&]() -> Result<ListResult> {
    XBAK_ASSIGN_OR_RETURN(Element root, xml::ParseRoot(text, "EnumerationResults"));
    ListResult out;
    if (const Element* blobs = root.Child("Blobs")) {
      for (const Element& c : blobs->children) {
        if (c.name == "Blob") {
          XBAK_ASSIGN_OR_RETURN(ObjectInfo o, BlobFrom(c));
          out.objects.push_back(std::move(o));
        } else if (c.name == "BlobPrefix") {
          const Element* name = c.Child("Name");
          if (name == nullptr) return CorruptAt("<BlobPrefix> without <Name>", c.offset);
          out.prefixes.push_back(name->text);
        }
      }
    }
    // The service lists names in order, but prefixes and blobs of a
    // delimited listing may come interleaved or prefixes first.
    std::sort(out.objects.begin(), out.objects.end(), [](auto& a, auto& b) { return a.key < b.key; });
    std::sort(out.prefixes.begin(), out.prefixes.end());
    out.next_token = std::string(Trim(root.ChildText("NextMarker")));
    return out;
  }();
  if (!parsed.ok()) return parsed.status().With("Azure List Blobs response");
  return parsed;
}

int64_t ParseHttpDate(std::string_view v) {
  // "Fri, 27 Nov 2026 03:35:11 GMT": fixed widths, English names.
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (v.size() != 29 || v[3] != ',' || v[4] != ' ' || v[7] != ' ' || v[11] != ' ' || v[16] != ' ' ||
      v[19] != ':' || v[22] != ':' || v.substr(25) != " GMT") {
    return 0;
  }
  auto num = [&](size_t at, size_t n, int lo, int hi, int* out) {
    for (size_t i = at; i < at + n; i++) {
      if (v[i] < '0' || v[i] > '9') return false;
    }
    std::from_chars(v.data() + at, v.data() + at + n, *out);
    return *out >= lo && *out <= hi;
  };
  struct tm t = {};
  int mon = -1;
  for (int m = 0; m < 12; m++) {
    if (v.substr(8, 3) == kMonths[m]) mon = m;
  }
  if (mon < 0 || !num(5, 2, 1, 31, &t.tm_mday) || !num(12, 4, 1970, 9999, &t.tm_year) ||
      !num(17, 2, 0, 23, &t.tm_hour) || !num(20, 2, 0, 59, &t.tm_min) || !num(23, 2, 0, 60, &t.tm_sec)) {
    return 0;
  }
  const int mday = t.tm_mday;
  t.tm_year -= 1900;
  t.tm_mon = mon;
  time_t secs = timegm(&t);
  if (secs <= 0 || t.tm_mday != mday || t.tm_mon != mon) return 0;  // no such day
  return static_cast<int64_t>(secs);
}

std::string FormatHttpDate(int64_t unix_time) {
  // Not strftime's %a and %b: those follow the locale, HTTP's names do not.
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const time_t t = static_cast<time_t>(unix_time);
  struct tm u = {};
  gmtime_r(&t, &u);
  return std::string(kDays[u.tm_wday]) + ", " + util::FormatUtc(unix_time, "%d ") + kMonths[u.tm_mon] +
         util::FormatUtc(unix_time, " %Y %H:%M:%S GMT");
}

}  // namespace xbak::storage
