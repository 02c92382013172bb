// A Sink that writes the backup as xbstream (readable by `mbstream -x` and by
// xbak's own extractor) onto one or more fds: stdout, or N FIFOs whose union is
// the backup.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "xbak/sink/sink.h"
#include "xbak/util/status.h"

namespace xbak::sink {

// Small writes to one file are gathered up to this size before they become a
// chunk; a write at least this big goes out as a chunk of its own.
inline constexpr size_t kXbstreamSinkCoalesceBytes = size_t{1} << 20;

// The fds are not owned and must stay open while the sink or any of its files
// lives. Each file is pinned to one fd for its whole life (chosen as the fd
// with the fewest bytes written so far, ties round-robin), so each fd carries a
// complete xbstream of its own files. Writes block when a reader is slow; a
// reader that goes away makes every later write fail ("broken pipe"). The
// program should ignore SIGPIPE (see XbstreamWriter).
//
// A SinkFile destroyed without Close() never gets its EOF chunk, so an
// extractor reports it as incomplete: exactly "not part of the backup".
Result<std::unique_ptr<Sink>> MakeXbstreamSink(std::vector<int> fds);
inline Result<std::unique_ptr<Sink>> MakeXbstreamSink(int fd) {
  return MakeXbstreamSink(std::vector<int>{fd});
}

}  // namespace xbak::sink
