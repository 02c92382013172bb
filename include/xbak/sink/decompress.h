// Reading what the compressing sink (compress.h) wrote: a streaming decoder
// for one .zst/.lz4 file, and xbak --decompress over a whole backup.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "xbak/sink/compress.h"
#include "xbak/sink/file_decoder.h"
#include "xbak/util/status.h"

namespace xbak::sink {

// Streaming decoder for one compressed file (a concatenation of frames).
// Frame content checksums and content sizes are verified when the frame has
// them (ours always do). Errors (kCorrupt) read
//   "corrupt zstd data in NAME at byte N: <why>"
// where N is the offset in the compressed file of the frame that is bad, or
//   "truncated zstd data in NAME: ends at byte N inside the frame at byte F"
// and an empty input is "truncated" too (zero frames is not a valid file).
class Decompressor : public FileDecoder {
 public:
  static Result<std::unique_ptr<Decompressor>> Create(CompressOptions::Algo algo, std::string name);
};

struct DecompressOptions {
  std::string target_dir;
  int parallel = 1;              // files decompressed at once
  bool remove_original = false;  // delete X.zst once X is complete and durable
};

// Decompresses every *.zst and *.lz4 under target_dir (recursively; symbolic
// links are not followed) into the same name without the suffix.
//  * Refuses, before touching anything, when an output name already exists or
//    two inputs would produce the same name (X.zst and X.lz4).
//  * Each output is written as "<X>.xbpartial", fsynced and renamed to X
//    (never replacing a file), so a name without the suffix is complete.
//  * A corrupt or truncated input fails naming the file and byte offset; its
//    partial output is removed. The first failure stops the other workers.
//  * With remove_original, X.zst is deleted only after X is durable.
Status DecompressBackup(const DecompressOptions& options);

}  // namespace xbak::sink
