// libFuzzer target: arbitrary bytes as an xbstream, read by ChunkReader and
// applied by an Extractor into a scratch directory. Whatever the input, the
// extractor must fail or succeed cleanly (no crash, no sanitizer report), and
// nothing may appear outside the scratch target (checked via a sibling dir).
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "xbak/stream/xbstream.h"
#include "xbak/util/file.h"

namespace {

// One scratch area per input: {root}/target is extracted into, {root}/canary
// must stay empty.
struct Scratch {
  std::string root;
  Scratch() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "xbstream_fuzz_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) root = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    if (!root.empty()) std::filesystem::remove_all(root, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Scratch s;
  if (s.root.empty()) return 0;
  std::filesystem::create_directory(s.root + "/canary");
  int fd = ::memfd_create("xbstream_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  xbak::util::UniqueFd guard(fd);
  for (size_t done = 0; done < size;) {
    ssize_t w = ::write(fd, data + done, size - done);
    if (w <= 0) return 0;
    done += static_cast<size_t>(w);
  }
  ::lseek(fd, 0, SEEK_SET);

  // The reader alone first: it must terminate and account for every byte it
  // accepted.
  {
    xbak::stream::ChunkReader reader(fd);
    xbak::stream::Chunk chunk;
    while (true) {
      auto more = reader.Next(&chunk);
      if (!more.ok() || !*more) break;
      if (reader.offset() > size) abort();
    }
  }
  ::lseek(fd, 0, SEEK_SET);

  xbak::stream::ExtractOptions options;
  options.target_dir = s.root + "/target";
  options.fsync = false;  // durability is not what is being fuzzed
  (void)xbak::stream::ExtractStream(fd, options);

  std::error_code ec;
  if (!std::filesystem::is_empty(s.root + "/canary", ec) && !ec) abort();
  for (const auto& e : std::filesystem::directory_iterator(s.root, ec)) {
    std::string name = e.path().filename().string();
    if (name != "target" && name != "canary") abort();  // something escaped the target
  }
  return 0;
}
