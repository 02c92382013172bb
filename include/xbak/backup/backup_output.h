// Where `xbak --backup` writes: the destination (a directory, stdout, or N
// FIFOs), the sink of the metadata files (the destination itself, or
// encrypting into it) and the sink of the data files and the redo log
// (compressing into the metadata's, or the same). Each refers to the one
// below it, so they are released in the reverse order of their fields.
#pragma once

#include <memory>

#include "xbak/backup/backup.h"
#include "xbak/sink/sink.h"
#include "xbak/util/status.h"

namespace xbak::backup {

struct BackupOutput {
  std::unique_ptr<sink::Sink> dest;  // the destination itself
  std::unique_ptr<sink::Sink> meta;  // metadata files (never compressed): dest, or encrypting into it
  std::unique_ptr<sink::Sink> data;  // data files and the redo log: meta, or compressing into it
};

// Opens the three of them for `o` (on FIFOs: waits for their readers).
// Leaves *out->dest set as soon as the destination exists, even on failure.
Status OpenBackupOutput(const BackupOptions& o, BackupOutput* out);

}  // namespace xbak::backup
