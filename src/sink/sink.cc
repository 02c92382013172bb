#include "xbak/sink/sink.h"

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

std::unique_ptr<Sink> MakeSinkRef(Sink& sink) { return std::make_unique<SinkRef>(sink); }

Status WriteSmallFile(Sink& sink, const std::string& relpath, const std::string& content) {
  XBAK_ASSIGN_OR_RETURN(auto f, sink.Create(relpath));
  XBAK_RETURN_IF_ERROR(f->Write(content.data(), content.size()));
  return f->Close();
}

}  // namespace xbak::sink
