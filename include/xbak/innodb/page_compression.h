// PAGE_COMPRESSED pages of MariaDB 10.11: taking a page off the disk into its
// plain frame, and compressing a frame the way the server writes it back.
//
// full_crc32 files: the whole frame is compressed; bytes 0..25 stay plain,
// byte 24 gets 0x80 and byte 25 the written size / 256; the payload starts at
// 26; the written size W is the payload end + 4 (+1 marker byte for lz4, lzo
// and snappy, whose payload length W cannot give exactly), rounded up to 256;
// the CRC-32C of [0, W-4) is stored at W-4; the rest of the page is zero (the
// server punches it out). A frame that would not shrink is written plain.
// Pages of type 0, FSP_HDR and XDES, page 0, and page 5 of the system
// tablespace are never compressed.
//
// Older files: type 34354, 0xDEADBEEF at 0, the algorithm at 26..33, the
// payload length at 38, the payload at 40. (mariabackup --prepare writes such
// pages back uncompressed: the algorithm is a server variable it never sets.)
//
// Codecs: zlib and lz4 always; lzma, bzip2, lzo and snappy (MariaDB loads
// them from provider plugins) when the build found their libraries, else
// refused by name (CompressionSupported).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "xbak/innodb/page.h"
#include "xbak/util/status.h"

namespace xbak::innodb {

// "zlib", "lz4", ... for messages.
std::string CompressionName(uint32_t algo);
// Whether xbak can decompress and compress `algo`.
bool CompressionSupported(uint32_t algo);

// The algorithm of a page as stored (0 when the page is not compressed).
uint32_t StoredCompression(const uint8_t* page, const SpaceFlags& flags);

// If `page` (flags.logical_size bytes) is stored compressed, writes its plain
// frame to `out` (as many bytes) and returns true; false when it is plain.
// Fails, naming the algorithm, when it cannot be decompressed.
Result<bool> DecompressPage(const uint8_t* page, const SpaceFlags& flags, uint8_t* out);

// A full_crc32 PAGE_COMPRESSED space: compresses `frame` (its LSN set and its
// low 32 bits copied to the trailer, no checksum) as the server writes it:
// returns the written size W (a multiple of 256, < the page size) with `out`
// holding W bytes, or 0 when the page is written plain (then stamp it as
// usual). `space_id` and the page number only decide the pages never
// compressed; `level` is innodb_compression_level (zlib).
Result<size_t> CompressPageFullCrc32(const uint8_t* frame, const SpaceFlags& flags, uint32_t space_id,
                                     int level, uint8_t* out);

}  // namespace xbak::innodb
