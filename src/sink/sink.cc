#include "xbak/sink/sink.h"

#include <algorithm>

namespace xbak::sink {
namespace {

class SinkRef : public Sink {
 public:
  explicit SinkRef(Sink& s) : s_(s) {}
  Result<std::unique_ptr<SinkFile>> Create(const std::string& rel) override { return s_.Create(rel); }
  Status MakeDir(const std::string& rel) override { return s_.MakeDir(rel); }
  Status Flush() override { return s_.Flush(); }
  std::string Describe() const override { return s_.Describe(); }

 private:
  Sink& s_;
};

}  // namespace

Status SinkFile::WriteZeros(uint64_t n) {
  // Read-only zeros, shared: no memory written for them.
  static constexpr size_t kZeroBytes = 64 << 10;
  static const uint8_t kZeros[kZeroBytes] = {};
  while (n > 0) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, kZeroBytes));
    XBAK_RETURN_IF_ERROR(Write(kZeros, take));
    n -= take;
  }
  return Status::Ok();
}

std::unique_ptr<Sink> MakeSinkRef(Sink& sink) { return std::make_unique<SinkRef>(sink); }

Status WriteSmallFile(Sink& sink, const std::string& relpath, const std::string& content) {
  XBAK_ASSIGN_OR_RETURN(auto f, sink.Create(relpath));
  XBAK_RETURN_IF_ERROR(f->Write(content.data(), content.size()));
  return f->Close();
}

}  // namespace xbak::sink
