#include "xbak/sink/sink.h"

#include <algorithm>

#include "xbak/util/sparse.h"

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
  while (n > 0) {
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, util::kZeroBlockLen));
    XBAK_RETURN_IF_ERROR(Write(util::ZeroBlock(), take));
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
