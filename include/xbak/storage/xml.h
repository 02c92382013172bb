// The small XML scanner behind the object stores' documents (S3's
// listings, errors and STS answers; Azure's List Blobs and errors): parse a
// document into elements and their decoded text, with kCorrupt naming the
// byte offset of anything outside the subset it accepts (see xml.cc for why
// it is hand-written). Response bodies are untrusted bytes: it never reads
// outside its input, and its recursion is bounded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::storage {
namespace xml {

// An element and its decoded direct text. Attributes are dropped: none of the
// documents we read carries data in them.
struct Element {
  std::string name;  // local name: "s3:Key" and "Key" are the same to us
  std::string text;
  size_t offset = 0;  // of its '<', for error messages
  std::vector<Element> children;

  const Element* Child(std::string_view n) const {
    for (const Element& c : children) {
      if (c.name == n) return &c;
    }
    return nullptr;
  }
  std::string_view ChildText(std::string_view n) const {
    const Element* c = Child(n);
    return c != nullptr ? std::string_view(c->text) : std::string_view();
  }
};

// The whole document's root element.
Result<Element> Parse(std::string_view xml);
// The root element, which must be named root_name; an <Error> document in
// its place (S3 may send one with 200 OK) is kCorrupt with its code and
// message.
Result<Element> ParseRoot(std::string_view xml, std::string_view root_name);

Status CorruptAt(const std::string& what, size_t offset);
// Names and values end up in messages; keep hostile input from flooding them.
std::string Clip(std::string_view s, size_t limit = 64);
// Clip()ed and in double quotes.
std::string Quote(std::string_view s);
bool IsSpace(char c);
std::string_view Trim(std::string_view s);
// Decodes the references in `s`, which starts at byte `base` of the document,
// so that a bad one is reported where it is.
Status UnescapeInto(std::string_view s, size_t base, std::string* out);

}  // namespace xml

// Escapes & < > " ' as entities and bytes 0x01-0x1f as character references
// (&#13;): an XML parser turns a raw CR into LF and XML 1.0 forbids most raw
// control characters, so a key holding them would otherwise reach S3 changed.
// NUL has no XML representation at all and is passed through.
std::string XmlEscape(std::string_view s);

// Decodes &amp; &lt; &gt; &quot; &apos; &#NNN; &#xHH; (to UTF-8). A malformed
// entity, or a reference to NUL, a surrogate or beyond U+10FFFF, is kCorrupt.
Result<std::string> XmlUnescape(std::string_view s);

}  // namespace xbak::storage
