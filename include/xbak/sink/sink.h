// Where a backup's files go. The copy threads see only this interface: a
// directory on disk, an xbstream on stdout, or N FIFOs all look the same.
// A file is written sequentially from offset 0 (or with explicit offsets for
// formats that need to patch a header later) and then closed; a file that was
// never closed is not part of the backup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "xbak/util/status.h"

namespace xbak::sink {

class SinkFile {
 public:
  virtual ~SinkFile() = default;
  // Appends n bytes. Thread-compatible: one thread per SinkFile at a time.
  virtual Status Write(const void* data, size_t n) = 0;
  // Appends n zero bytes: what a source file's hole or preallocated space
  // reads as. A directory leaves a hole; a stream carries the zeros.
  virtual Status WriteZeros(uint64_t n);
  // Marks the file complete. After Close the object must not be used.
  virtual Status Close() = 0;
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Creates `relpath` (a path relative to the backup root, '/'-separated, no
  // "..") for writing. Thread-safe: copy threads call it concurrently.
  virtual Result<std::unique_ptr<SinkFile>> Create(const std::string& relpath) = 0;
  // Creates the directory `relpath` (a database with no file in it). A
  // stream has no entry for a directory: it carries files only, as the
  // xbstream format of xtrabackup and mariabackup does, so this does nothing
  // there.
  virtual Status MakeDir(const std::string& relpath) {
    (void)relpath;
    return Status::Ok();
  }
  // Makes everything written so far durable (fsync / flush of the stream).
  virtual Status Flush() = 0;
  // Human-readable description for messages, e.g. "directory /backups/full".
  virtual std::string Describe() const = 0;
};

// A non-owning view of `sink` (which must outlive it), so that another sink
// (the compressing one) can wrap a destination that is also used directly
// (the never compressed metadata files).
std::unique_ptr<Sink> MakeSinkRef(Sink& sink);

// Creates `relpath` in `sink`, writes `content` and closes it.
Status WriteSmallFile(Sink& sink, const std::string& relpath, const std::string& content);

// Writes files under `root`, which must be empty or missing (it is created).
// Each file is written as "<name>.xbpartial" and renamed to its name when
// closed (a file of a killed backup keeps that suffix). Files are created with
// O_EXCL and renamed with RENAME_NOREPLACE, so nothing pre-existing is ever
// overwritten.
Result<std::unique_ptr<Sink>> MakeDirectorySink(const std::string& root);

}  // namespace xbak::sink
