// libFuzzer target for the decrypting reader (crypt::Decryptor): arbitrary
// bytes as an X.xbenc file, fed whole and in pieces whose sizes come from the
// input, under a fixed key. Whatever the bytes, it must fail cleanly or
// succeed (no crash, no sanitizer report, no allocation beyond one chunk),
// hand on nothing that did not authenticate, and give the same outcome and
// output however the input is cut. The seeds (corpus/decrypt_fuzz) are valid
// files under that key, so mutations reach the chunk parser and the AEAD.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "xbak/crypt/stream.h"

namespace {

const xbak::crypt::KeyRing& Ring() {
  static xbak::crypt::KeyRing* ring = [] {
    auto* r = new xbak::crypt::KeyRing();
    auto k = xbak::crypt::Key::FromBytes(std::string(xbak::crypt::kKeyBytes, 'f'), "fuzz key");
    if (!k.ok()) std::abort();
    r->Add(std::move(k).value());
    return r;
  }();
  return *ring;
}

struct Outcome {
  bool ok = false;
  std::string message;
  std::string plain;
};

Outcome Run(const uint8_t* data, size_t size, size_t piece) {
  Outcome o;
  xbak::crypt::Decryptor d(Ring(), "fuzz.xbenc", "", [&](const uint8_t* p, size_t n) {
    o.plain.append(reinterpret_cast<const char*>(p), n);
    return xbak::Status::Ok();
  });
  xbak::Status st;
  for (size_t at = 0; st.ok() && at < size; at += piece) st = d.Write(data + at, std::min(piece, size - at));
  if (st.ok()) st = d.Finish();
  o.ok = st.ok();
  o.message = st.message();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t piece = size == 0 ? 1 : 1 + data[0] % 97;
  Outcome whole = Run(data, size, size == 0 ? 1 : size);
  Outcome cut = Run(data, size, piece);
  if (whole.ok != cut.ok || whole.plain != cut.plain || whole.message != cut.message) std::abort();
  return 0;
}
