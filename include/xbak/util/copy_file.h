// Puts one file in its place whole or not at all: copied through DEST.xbtmp
// and a rename (or, to move it, renamed, and copied then removed where the
// rename crosses filesystems). Restores use it, so that a file is either
// absent or complete and an interrupted restore can be run again over its own
// files. Zero blocks stay holes (sparse.h).
#pragma once

#include <string>

#include "xbak/util/progress.h"
#include "xbak/util/status.h"

namespace xbak {

struct PlaceFileOptions {
  bool move = false;
  // fsync the copy before its rename. Callers that place thousands of files
  // pass false and sync the filesystem once at the end (SyncFilesystem):
  // one fsync per small file would be a storm.
  bool sync = true;
};

// `progress` (may be null) is given the bytes copied and one file done.
Status PlaceFile(const std::string& src, const std::string& dest, const PlaceFileOptions& o,
                 Progress* progress);

}  // namespace xbak
