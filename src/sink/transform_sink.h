// A sink that stores every file X of an inner sink as X<suffix>, transformed
// chunk by chunk on a pool of threads shared by all files: compression
// (compress.cc) and encryption (encrypt.cc) are the two transforms. Each
// file's chunks are written to the inner sink in order, from the thread that
// calls Write/Close, while the copy threads go on.
//
// Memory is bounded: each open file holds one chunk of input being filled and
// at most threads + 1 chunks queued, being transformed, or waiting to be
// written (a copy thread blocks when it has that many), i.e. about
// (threads + 2) x 2 x chunk size per open file, whatever the speeds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "xbak/sink/sink.h"
#include "xbak/util/status.h"

namespace xbak::sink {

// A chunk's output, allocated without being zeroed: the transform writes
// every byte up to its size (zeroing a megabyte per chunk first costs as much
// as encrypting it).
class ChunkOutput {
 public:
  uint8_t* Reserve(size_t n) {
    if (capacity_ < n) {
      buf_.reset(new uint8_t[n]);
      capacity_ = n;
    }
    return buf_.get();
  }
  void set_size(size_t n) { size_ = n; }
  const uint8_t* data() const { return buf_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<uint8_t[]> buf_;
  size_t capacity_ = 0;
  size_t size_ = 0;
};

// One chunk's work. `in` is owned by the worker until done; `out` by the file afterwards.
struct ChunkJob {
  std::vector<uint8_t> in;
  ChunkOutput out;
  uint64_t index = 0;  // the chunk's number within its file
  bool last = false;   // the closing chunk (see FileTransform::Closing)
  Status status;
  bool done = false;  // guarded by the pool's mutex
};

// What a worker thread keeps from one job to the next (a zstd context).
class WorkerState {
 public:
  virtual ~WorkerState() = default;
};

// The transform of one file. Apply runs on pool threads, several at once for
// one file: it must only read the FileTransform.
class FileTransform {
 public:
  virtual ~FileTransform() = default;
  // Bytes written before the first chunk (an encrypted file's header).
  virtual std::string Prologue() const { return {}; }
  // Whether Close adds a closing chunk (empty input, `last` set) after the
  // `chunks` written: encryption always does (its end chunk), compression
  // only for an empty file (a zero-byte .zst is not a zstd file).
  virtual bool Closing(uint64_t chunks) const = 0;
  virtual Status Apply(ChunkJob& job, WorkerState* worker) const = 0;
  // A transform that needs no worker state may also run on the writing
  // thread, straight from its buffer: a whole chunk handed to Write is then
  // transformed there, without being copied into a job first (encryption:
  // the cipher reads the caller's bytes as a copy would). `out` as in Apply.
  virtual bool CanRunInline() const { return false; }
  virtual Status ApplyInline(const uint8_t* in, size_t n, uint64_t index, ChunkOutput* out) const {
    (void)in, (void)n, (void)index, (void)out;
    return Error(ErrorCode::kInternal, "this transform does not run inline");
  }
};

class TransformSpec {
 public:
  virtual ~TransformSpec() = default;
  virtual std::string Suffix() const = 0;    // ".zst", ".xbenc"
  virtual std::string Describe() const = 0;  // "zstd-compressed", for Sink::Describe
  virtual size_t ChunkBytes() const = 0;     // input bytes per chunk
  virtual int Threads() const = 0;           // pool size
  virtual Result<std::unique_ptr<WorkerState>> NewWorker() const = 0;
  // `name`: the file's name in the inner sink (X<suffix>); `relpath`: X.
  virtual Result<std::unique_ptr<FileTransform>> ForFile(const std::string& relpath) const = 0;
};

Result<std::unique_ptr<Sink>> MakeTransformingSink(std::unique_ptr<Sink> inner,
                                                   std::unique_ptr<TransformSpec> spec);

}  // namespace xbak::sink
