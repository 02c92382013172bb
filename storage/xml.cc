// Why a hand-written scanner and not libxml2 or expat: xbcloud reads three
// small, well-known response shapes and writes one request. A general XML
// library would be a new dependency (not in our Debian package list) and far
// more code facing bytes off the network than these documents need. The
// scanner accepts the subset S3, MinIO and Ceph send: a prolog, comments,
// attributes (skipped), self-closing elements, entity and character references
// (CDATA too, as it costs four lines). Anything else is kCorrupt with a byte
// offset. It never reads outside the input, every loop consumes input, and
// its recursion is bounded by kMaxDepth, so arbitrary bytes are safe.
#include "xbak/storage/xml.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace xbak::storage {
namespace xml {
namespace {

constexpr int kMaxDepth = 64;      // the documents we read are 3 deep
constexpr size_t kMaxEntity = 32;  // "&#x10FFFF;" with generous leading zeros
constexpr std::pair<std::string_view, char> kNamedEntities[] = {
    {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
    return;
  }
  int extra = cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3;  // continuation bytes
  out->push_back(static_cast<char>(((0xF0 << (3 - extra)) & 0xF0) | (cp >> (6 * extra))));
  for (int i = extra - 1; i >= 0; i--) out->push_back(static_cast<char>(0x80 | ((cp >> (6 * i)) & 0x3F)));
}

bool IsNameEnd(char c) { return IsSpace(c) || c == '/' || c == '>' || c == '<'; }

class Parser {
 public:
  explicit Parser(std::string_view in) : in_(in) {}

  Result<Element> Document() {
    if (StartsWith("\xEF\xBB\xBF")) pos_ = 3;  // a UTF-8 byte order mark
    Element root;
    bool have_root = false;
    while (true) {
      while (pos_ < in_.size() && IsSpace(in_[pos_])) pos_++;
      if (pos_ == in_.size()) break;
      if (in_[pos_] != '<')
        return CorruptAt(have_root ? "text after the root element" : "text before the root element", pos_);
      bool skipped = false;
      XBAK_RETURN_IF_ERROR(SkipMarkup(&skipped));
      if (skipped) continue;
      if (have_root) return CorruptAt("a second root element", pos_);
      if (StartsWith("</")) return CorruptAt("a closing tag before any opening tag", pos_);
      XBAK_RETURN_IF_ERROR(ParseElement(1, &root));
      have_root = true;
    }
    if (!have_root) return EndOfDocument();
    return root;
  }

 private:
  bool StartsWith(std::string_view p) const { return in_.substr(pos_).starts_with(p); }
  Status EndOfDocument() const { return CorruptAt("unexpected end of document", in_.size()); }

  // Skips a "<?...?>" (the prolog), a comment or a "<!DOCTYPE ...>" at pos_.
  Status SkipMarkup(bool* skipped) {
    static constexpr std::pair<std::string_view, std::string_view> kKinds[] = {
        {"<?", "?>"}, {"<!--", "-->"}, {"<!", ">"}};
    *skipped = false;
    for (const auto& [open, close] : kKinds) {
      if (!StartsWith(open)) continue;
      size_t end = in_.find(close, pos_ + open.size());
      if (end == std::string_view::npos) return EndOfDocument();
      pos_ = end + close.size();
      *skipped = true;
      break;
    }
    return Status::Ok();
  }

  std::string_view Name() {
    size_t start = pos_;
    while (pos_ < in_.size() && !IsNameEnd(in_[pos_])) pos_++;
    return in_.substr(start, pos_ - start);
  }

  // Parses the element whose start tag is at pos_, up to its end tag.
  Status ParseElement(int depth, Element* e) {
    if (depth > kMaxDepth) return CorruptAt("elements nested deeper than " + std::to_string(kMaxDepth), pos_);
    e->offset = pos_++;
    std::string_view qname = Name();
    if (qname.empty()) return CorruptAt("an element without a name", e->offset);
    size_t colon = qname.rfind(':');
    e->name = qname.substr(colon == std::string_view::npos ? 0 : colon + 1);
    // Attributes are skipped; a quoted value may hold '>' or '/'.
    char quote = 0;
    for (;; pos_++) {
      if (pos_ >= in_.size()) return EndOfDocument();
      char c = in_[pos_];
      if (quote != 0) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '<') {
        return CorruptAt("'<' inside the tag of <" + Clip(e->name) + ">", pos_);
      } else if (c == '>') {
        break;
      }
    }
    bool self_closing = in_[pos_ - 1] == '/';  // outside quotes: a closing quote would be there instead
    pos_++;
    if (self_closing) return Status::Ok();

    while (true) {
      size_t lt = in_.find('<', pos_);
      if (lt == std::string_view::npos) return EndOfDocument();
      XBAK_RETURN_IF_ERROR(UnescapeInto(in_.substr(pos_, lt - pos_), pos_, &e->text));
      pos_ = lt;
      if (StartsWith("<![CDATA[")) {
        size_t end = in_.find("]]>", pos_ + 9);
        if (end == std::string_view::npos) return EndOfDocument();
        e->text.append(in_.substr(pos_ + 9, end - pos_ - 9));
        pos_ = end + 3;
        continue;
      }
      bool skipped = false;
      XBAK_RETURN_IF_ERROR(SkipMarkup(&skipped));
      if (skipped) continue;
      if (StartsWith("</")) {
        size_t at = pos_;
        pos_ += 2;
        std::string_view closing = Name();
        while (pos_ < in_.size() && IsSpace(in_[pos_])) pos_++;
        if (pos_ == in_.size()) return EndOfDocument();
        if (in_[pos_] != '>') return CorruptAt("a malformed closing tag", at);
        if (closing != qname) {
          return CorruptAt("closing tag </" + Clip(closing) + "> does not match <" + Clip(qname) +
                               "> opened at byte " + std::to_string(e->offset),
                           at);
        }
        pos_++;
        return Status::Ok();
      }
      e->children.emplace_back();
      XBAK_RETURN_IF_ERROR(ParseElement(depth + 1, &e->children.back()));
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace

Status CorruptAt(const std::string& what, size_t offset) {
  return Error(ErrorCode::kCorrupt, what + " at byte " + std::to_string(offset));
}

// Names and values end up in messages; keep hostile input from flooding them.
std::string Clip(std::string_view s, size_t limit) {
  return std::string(s.substr(0, limit)) + (s.size() > limit ? "..." : "");
}
// (Built by appending: GCC 12 at -O3 reports a false -Wrestrict for "\"" + std::string.)
std::string Quote(std::string_view s) {
  std::string q(1, '"');
  q.append(Clip(s)).push_back('"');
  return q;
}

// Decodes the references in `s`, which starts at byte `base` of the document,
// so that a bad one is reported where it is.
Status UnescapeInto(std::string_view s, size_t base, std::string* out) {
  size_t i = 0;
  while (i < s.size()) {
    size_t amp = s.find('&', i);
    if (amp == std::string_view::npos) amp = s.size();
    out->append(s.substr(i, amp - i));
    if (amp == s.size()) break;
    size_t semi = s.substr(0, amp + kMaxEntity).find(';', amp);
    if (semi == std::string_view::npos) return CorruptAt("unterminated entity", base + amp);
    std::string_view ent = s.substr(amp + 1, semi - amp - 1);
    bool named = false;
    for (const auto& [name, c] : kNamedEntities) {
      if (ent == name) {
        out->push_back(c);
        named = true;
      }
    }
    if (!named) {
      bool hex = ent.size() >= 2 && ent[0] == '#' && ent[1] == 'x';
      std::string_view digits = ent.substr(std::min<size_t>(ent.size(), hex ? 2 : 1));
      uint32_t cp = 0;
      // Stopping at U+10FFFF also keeps cp * 16 + 15 within 32 bits.
      bool ok = !ent.empty() && ent[0] == '#' && !digits.empty();
      for (size_t d = 0; ok && d < digits.size(); d++) {
        char c = digits[d];
        int v = c >= '0' && c <= '9' ? c - '0' : -1;
        if (hex && c >= 'a' && c <= 'f') v = c - 'a' + 10;
        if (hex && c >= 'A' && c <= 'F') v = c - 'A' + 10;
        ok = v >= 0;
        cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(ok ? v : 0);
        ok = ok && cp <= 0x10FFFF;
      }
      // NUL is not representable in XML; surrogates are not characters.
      if (!ok || cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return CorruptAt("bad entity " + Quote(s.substr(amp, semi - amp + 1)), base + amp);
      }
      AppendUtf8(cp, out);
    }
    i = semi + 1;
  }
  return Status::Ok();
}

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

Result<Element> Parse(std::string_view xml) { return Parser(xml).Document(); }

Result<Element> ParseRoot(std::string_view xml, std::string_view root_name) {
  XBAK_ASSIGN_OR_RETURN(Element root, Parser(xml).Document());
  if (root.name == root_name) return root;
  // S3 may answer 200 OK and still send an error document (e.g. InternalError).
  if (root.name == "Error") {
    return CorruptAt("an error document (" + Clip(root.ChildText("Code")) + ": " +
                         Clip(root.ChildText("Message"), 256) + ")",
                     root.offset);
  }
  return CorruptAt("root element <" + Clip(root.name) + "> instead of <" + std::string(root_name) + ">",
                   root.offset);
}

}  // namespace xml

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    bool named = false;
    for (const auto& [name, ch] : xml::kNamedEntities) {
      if (c == ch) {
        out.append("&").append(name).append(";");
        named = true;
      }
    }
    if (named) continue;
    if (c > 0 && c < 0x20) {
      out += "&#" + std::to_string(static_cast<int>(c)) + ";";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Result<std::string> XmlUnescape(std::string_view s) {
  std::string out;
  XBAK_RETURN_IF_ERROR(xml::UnescapeInto(s, 0, &out));
  return out;
}

}  // namespace xbak::storage
