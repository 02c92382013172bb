// Puts one file in its place: copied through DEST.xbtmp and a rename, so that
// it is absent or complete (or, to move it, renamed, and copied then removed
// where the rename crosses filesystems). Restores use it so that an
// interrupted restore can be run again over its own files. Zero blocks stay
// holes (sparse.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "xbak/util/file.h"
#include "xbak/util/progress.h"
#include "xbak/util/sparse.h"
#include "xbak/util/status.h"

namespace xbak::util {

struct PlaceFileOptions {
  bool move = false;
  // fsync the copy before its rename. Callers that place thousands of files
  // pass false and sync the filesystem once at the end (SyncFilesystem):
  // one fsync per small file would be a storm.
  bool sync = true;
  // Write DEST itself, without the temporary file and its rename (one
  // directory operation per file fewer: 100,000 tables). Only for callers
  // whose own protocol makes a partial file harmless (copy-back: a marker
  // file, and the redo log placed last). An existing DEST is an error
  // unless `replace` (a resumed restore rewrites its own partial files).
  bool in_place = false;
  bool replace = false;
};

// `progress` (may be null) is given the bytes copied and one file done.
Status PlaceFile(const std::string& src, const std::string& dest, const PlaceFileOptions& o,
                 Progress* progress);

// Copies in's first `size` bytes through `buf` into `out` (only reads them if
// out is null): what File::NextStretch says is worth reading read and written,
// the rest left a hole without being read. Stops early, without an error,
// if the file is shorter than `size`. `progress` (may be null) is given the
// bytes done, holes included.
Status CopyDataRuns(const File& in, uint64_t size, SparseWriter* out, std::span<uint8_t> buf,
                    Progress* progress);

struct FileToPlace {
  std::string src, dest;
  uint64_t size = 0;
};

// PlaceFile for each of `files` on `parallel` threads, largest first (one
// big file started last would finish alone). Unless moving, the start of
// each file is read ahead of the threads (a Prefetcher, 64 files and 1 MiB
// of each at most ahead of what was placed: from a cold disk one read per
// thread at a time leaves it idle between small files, and a bound keeps a
// backup larger than memory from being read into the page cache before its
// turn). Stops at the first error.
Status PlaceFiles(std::vector<FileToPlace> files, int parallel, const PlaceFileOptions& o,
                  Progress* progress);

}  // namespace xbak::util
