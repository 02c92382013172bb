// Per-file compression of a backup (`--compress=zstd|lz4`,
// `--compress-threads`, `--compress-chunk-size`) and its reversal
// (`--decompress`), in the layout of Percona XtraBackup 8.0:
//
//  * every backup file X is stored as X.zst or X.lz4, whose content is a
//    plain concatenation of standard frames, so `zstd -d` / `lz4 -d` (which
//    both read concatenated frames) restore X byte for byte;
//  * zstd frames carry the content size and the XXH64 content checksum
//    (Percona: ZSTD_c_checksumFlag=1, one frame per write of its copy loop);
//  * lz4 frames are LZ4 frame format with independent blocks of at most the
//    chunk size (default 64 KiB), the content size and the XXH32 content
//    checksum, no block checksums (Percona writes exactly these flags);
//  * xbak cuts frames every kCompressFrameBytes of input (Percona cuts one
//    per write of its copy loop, whose size varies); an empty file is one
//    empty frame, because `zstd -d` rejects a zero-byte .zst.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "xbak/sink/sink.h"
#include "xbak/util/status.h"

namespace xbak::sink {

// Input bytes per frame: the unit one compression thread works on. Large
// enough for zstd to find its matches, small enough that a few per thread in
// flight stay cheap.
inline constexpr size_t kCompressFrameBytes = size_t{1} << 20;

struct CompressOptions {
  enum Algo { kZstd, kLz4 };
  Algo algo = kZstd;
  int zstd_level = 1;  // ZSTD_minCLevel() .. ZSTD_maxCLevel(); ignored by lz4
  // Threads that compress, shared by all files of the sink.
  int threads = 1;
  // lz4 block size; rounded up to one of the frame format's 64 KiB, 256 KiB,
  // 1 MiB, 4 MiB; above 4 MiB is refused. zstd does not use it (nor does
  // Percona's zstd sink). A value above kCompressFrameBytes also raises the
  // frame size to it.
  size_t chunk_size = size_t{64} << 10;
};

// ".zst" or ".lz4".
std::string_view CompressSuffix(CompressOptions::Algo algo);
// The algorithm a file name's suffix says it was compressed with (none: not
// compressed): the one reading of the suffixes, for --decompress and for
// `xbak --restore`'s deltas decompressed as they arrive.
std::optional<CompressOptions::Algo> CompressedWith(std::string_view name);

// A sink that writes every file X of `inner` as X<suffix>, compressed.
// Writes are cut into frames of kCompressFrameBytes that `threads` worker
// threads compress while the copy threads go on; each file writes its frames
// to `inner` in order, from the thread that calls Write/Close.
//
// Memory is bounded: each open file holds one frame of input being filled and
// at most threads + 1 frames queued, being compressed, or waiting to be
// written to `inner` (a copy thread blocks when it has that many), i.e. about
// (threads + 2) x 2 x frame size per open file, whatever the speeds.
Result<std::unique_ptr<Sink>> MakeCompressingSink(std::unique_ptr<Sink> inner, CompressOptions options);

}  // namespace xbak::sink
