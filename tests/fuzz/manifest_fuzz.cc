// libFuzzer target: arbitrary bytes as what xbcloud reads back from a store,
// i.e. a backup manifest, an .md5 sidecar and object keys. Each parser must
// accept or reject cleanly; what ParseManifest accepts must survive
// EncodeManifest -> ParseManifest unchanged (its summary too), and its head
// alone must parse to the same summary.
#include <cstdint>
#include <string>
#include <string_view>

#include "xbak/cloud/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  xbak::cloud::ManifestSummary summary, summary_again;
  auto m = xbak::cloud::ParseManifest(in, &summary);
  auto head = xbak::cloud::ParseManifestHead(in);
  if (m.ok()) {
    // The head of a sound manifest is sound and complete, and agrees.
    if (!head.ok() || !head->complete || head->summary.files != summary.files ||
        head->summary.started != summary.started)
      __builtin_trap();
    const bool v3 = head->version == 3;
    auto again =
        xbak::cloud::ParseManifest(xbak::cloud::EncodeManifest(*m, v3 ? &summary : nullptr), &summary_again);
    if (!again.ok() || again->size() != m->size()) __builtin_trap();
    if (summary_again.files != summary.files || summary_again.finished != summary.finished ||
        summary_again.file_bytes != summary.file_bytes)
      __builtin_trap();
    for (size_t i = 0; i < m->size(); i++) {
      const auto& a = (*m)[i];
      const auto& b = (*again)[i];
      if (a.path != b.path || a.seq != b.seq || a.size != b.size || a.md5 != b.md5 ||
          a.piece_bytes != b.piece_bytes || a.pieces != b.pieces)
        __builtin_trap();
    }
  }
  (void)xbak::cloud::ParseMd5Sidecar(in, "fuzz");
  std::string path;
  uint64_t seq = 0;
  if (xbak::cloud::ParseDataObjectKey("n", in, &path, &seq)) {
    if (xbak::cloud::DataObjectKey("n", path, seq) != in) __builtin_trap();
  }
  (void)xbak::cloud::CheckBackupName(in);
  return 0;
}
