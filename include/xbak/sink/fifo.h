// Parallel streaming through named pipes (`--fifo-streams=N --fifo-dir=DIR`),
// laid out the way Percona XtraBackup 8.0.33+ and its xbcloud/xbstream do it:
// the writer creates DIR (if missing) and the FIFOs DIR/thread_0 ..
// DIR/thread_<N-1> (mode 0600), waits up to --fifo-timeout (default 60 s) for
// a reader on each, and every FIFO then carries a complete xbstream of its own
// files; the union of the N streams is the backup.
//
// Not reproduced: Percona's writer sends one handshake byte down each FIFO
// right after opening it (its readers check and drop it). We send pure
// xbstream, so our FIFOs are read by `mbstream -x` on each FIFO and by our own
// OpenFifosForReading + ExtractStreams, not by Percona's `xbstream --fifo-dir`.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xbak/sink/sink.h"
#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak::sink {

inline constexpr std::chrono::seconds kDefaultFifoTimeout{60};
// Chunks (of at most kXbstreamSinkCoalesceBytes each) queued per output fd.
inline constexpr size_t kDefaultStreamQueueChunks = 8;

// DIR/thread_<index>: the names Percona's ds_fifo creates and xbcloud opens.
std::string FifoPath(const std::string& dir, int index);

// Writer side. Creates `dir` if missing and the n FIFOs in it (an existing
// FIFO is reused; an existing path of any other type is refused), then waits
// until `timeout` has passed overall for a reader to open each one. The fds
// are blocking and write-only. On failure (kTimeout names the first FIFO
// that got no reader) the FIFOs this call created are removed again.
Result<std::vector<util::UniqueFd>> OpenFifosForWriting(const std::string& dir, int n,
                                                        std::chrono::seconds timeout);

// Reader side. Waits (until `timeout` overall) for each FIFO to exist and for
// a writer to open it, then returns blocking read-only fds in FIFO order.
// Waiting for the writer matters: a read from a FIFO that never had a writer
// returns end-of-file at once, which would look like an empty stream.
Result<std::vector<util::UniqueFd>> OpenFifosForReading(const std::string& dir, int n,
                                                        std::chrono::seconds timeout);

// An xbstream sink that decouples the copy threads from the output fds: each
// fd gets a writer thread fed by a bounded queue of chunks, so a slow reader
// on one fd stalls only the files pinned to that fd, and only once its queue
// is full. Memory per fd is bounded by StreamBufferStats::bound_bytes,
// whatever the speed mismatch (plus, as in MakeXbstreamSink, one coalescing
// buffer of kXbstreamSinkCoalesceBytes per open file).
//
// Errors: a reader that goes away fails every later write, Close and Flush of
// the files on its fd with "reader of <name> went away (broken pipe)"; the
// writer thread never raises SIGPIPE (it keeps the signal blocked) and never
// leaves a copy thread waiting on a queue that will not drain.
struct StreamBufferOptions {
  size_t queue_chunks = kDefaultStreamQueueChunks;  // per fd, at least 1
  // One per fd, for messages, e.g. "fifo /tmp/stream/thread_2"; empty means
  // "fd N".
  std::vector<std::string> names;
  // fds the sink takes over and closes once the sink and all its files are
  // gone (their readers then see end of stream). May be empty.
  std::vector<util::UniqueFd> owned;
};

struct StreamBufferStats {
  uint64_t buffered_bytes = 0;       // queued now, headers included
  uint64_t peak_buffered_bytes = 0;  // highest buffered_bytes so far
  uint64_t bound_bytes = 0;          // what buffered_bytes can never exceed
  uint64_t written_bytes = 0;        // reached the fd
};

class BufferedStreamSink : public Sink {
 public:
  // One entry per fd, in the order the fds were given.
  virtual std::vector<StreamBufferStats> BufferStats() const = 0;
};

// (Implemented with the plain xbstream sink, in xbstream_sink.cc.)
Result<std::unique_ptr<BufferedStreamSink>> MakeBufferedXbstreamSink(std::vector<int> fds,
                                                                     StreamBufferOptions options);

// OpenFifosForWriting + MakeBufferedXbstreamSink; the sink owns the FIFO fds
// and names them "fifo DIR/thread_i" in its messages.
Result<std::unique_ptr<BufferedStreamSink>> MakeFifoSink(const std::string& dir, int n,
                                                         std::chrono::seconds timeout,
                                                         size_t queue_chunks = kDefaultStreamQueueChunks);

}  // namespace xbak::sink
