// The InnoDB page layer of MariaDB 10.11: FIL header/trailer, FSP space flags,
// the page-0 space header, and page validation for every checksum format the
// server reads (full_crc32, crc32, the legacy "innodb" fold, "none",
// ROW_FORMAT=COMPRESSED, page_compressed, encrypted frames).
//
// Pure functions over bytes, no I/O and no state, so the backup copier, the
// future redo applier and the fuzzer can all drive them directly. Multi-byte
// fields are big-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xbak/util/status.h"

namespace xbak::innodb {

// ---- FIL header (every page) -----------------------------------------------
inline constexpr size_t kFilPageSpaceOrChecksum = 0;  // checksum, or full_crc32 key version
inline constexpr size_t kFilPageOffset = 4;           // page number
inline constexpr size_t kFilPagePrev = 8;
inline constexpr size_t kFilPageNext = 12;
inline constexpr size_t kFilPageLsn = 16;   // u64
inline constexpr size_t kFilPageType = 24;  // u16
inline constexpr size_t kFilPageFileFlushLsn =
    26;                                         // u64; non-full_crc32 key version (4) + crypt checksum (4)
inline constexpr size_t kFilPageCompAlgo = 26;  // page_compressed: algorithm (non-fcrc32: u64)
inline constexpr size_t kFilPageSpaceId = 34;
inline constexpr size_t kFilPageData = 38;
// Trailer, counted back from the end of the page.
inline constexpr size_t kFilPageEndLsnOldChecksum = 8;  // non-fcrc32: old checksum (4) + low LSN (4)
inline constexpr size_t kFilPageFcrc32EndLsn = 8;       // full_crc32: low LSN (4)
inline constexpr size_t kFilPageFcrc32Checksum = 4;     // full_crc32: CRC-32C (4)
// non-full_crc32 page_compressed payload metadata, after the FIL header.
inline constexpr size_t kFilPageCompSize = kFilPageData;  // u16 compressed length
inline constexpr size_t kFilPageCompMetadataLen = 2;
inline constexpr size_t kFilPageEncryptCompAlgo = kFilPageData + 2;  // u16, type 37401 only

inline constexpr uint32_t kFilNull = 0xFFFFFFFF;
inline constexpr uint32_t kNoChecksumMagic = 0xDEADBEEF;    // BUF_NO_CHECKSUM_MAGIC
inline constexpr uint32_t kSpaceIdUpperBound = 0xFFFFFFF0;  // SRV_SPACE_ID_UPPER_BOUND

// ---- Page types (FIL_PAGE_TYPE) --------------------------------------------
inline constexpr uint16_t kPageTypeAllocated = 0;
inline constexpr uint16_t kPageTypeUndoLog = 2;
inline constexpr uint16_t kPageTypeInode = 3;
inline constexpr uint16_t kPageTypeIbufFreeList = 4;
inline constexpr uint16_t kPageTypeIbufBitmap = 5;
inline constexpr uint16_t kPageTypeSys = 6;
inline constexpr uint16_t kPageTypeTrxSys = 7;
inline constexpr uint16_t kPageTypeFspHdr = 8;
inline constexpr uint16_t kPageTypeXdes = 9;
inline constexpr uint16_t kPageTypeBlob = 10;
inline constexpr uint16_t kPageTypeZblob = 11;
inline constexpr uint16_t kPageTypeZblob2 = 12;
inline constexpr uint16_t kPageTypeUnknown = 13;
inline constexpr uint16_t kPageTypeInstant = 18;
inline constexpr uint16_t kPageTypeRtree = 17854;
inline constexpr uint16_t kPageTypeIndex = 17855;
inline constexpr uint16_t kPageTypePageCompressed = 34354;           // non-full_crc32 only
inline constexpr uint16_t kPageTypePageCompressedEncrypted = 37401;  // non-full_crc32 only
inline constexpr uint16_t kPageTypeFcrc32CompressedMarker =
    0x8000;  // full_crc32: bit 15, low 8 bits = size/256

// ---- FSP header (page 0, at kFilPageData) ----------------------------------
inline constexpr size_t kFspHeaderOffset = kFilPageData;
inline constexpr size_t kFspSpaceId = kFspHeaderOffset + 0;
inline constexpr size_t kFspNotUsed = kFspHeaderOffset + 4;
inline constexpr size_t kFspSize = kFspHeaderOffset + 8;
inline constexpr size_t kFspFreeLimit = kFspHeaderOffset + 12;
inline constexpr size_t kFspSpaceFlags = kFspHeaderOffset + 16;
inline constexpr size_t kFspFragNUsed = kFspHeaderOffset + 20;
inline constexpr size_t kFspHeaderEnd = kFspHeaderOffset + 112;  // XDES array starts here

// page_compressed algorithms (full_crc32 flags bits 5..7, non-fcrc32 FIL_PAGE_COMP_ALGO).
inline constexpr uint32_t kCompressionNone = 0;
inline constexpr uint32_t kCompressionZlib = 1;
inline constexpr uint32_t kCompressionLz4 = 2;
inline constexpr uint32_t kCompressionLzo = 3;
inline constexpr uint32_t kCompressionLzma = 4;
inline constexpr uint32_t kCompressionBzip2 = 5;
inline constexpr uint32_t kCompressionSnappy = 6;

// ---- Space flags -----------------------------------------------------------
// Whose tablespaces: MariaDB's and MySQL's page 0 flags agree on bits 0..9
// (POST_ANTELOPE, ZIP_SSIZE, ATOMIC_BLOBS, PAGE_SSIZE) and mean different
// things above (MariaDB: full_crc32, PAGE_COMPRESSION; MySQL: DATA_DIR,
// SHARED, TEMPORARY, ENCRYPTION, SDI).
enum class Dialect { kMariaDB, kMySQL };

struct SpaceFlags {
  uint32_t raw = 0;
  bool full_crc32 = false;
  uint32_t logical_size = 0;   // innodb_page_size of the file: 4k..64k
  uint32_t physical_size = 0;  // bytes per page on disk: the zip size, or logical_size
  uint32_t zip_size = 0;       // ROW_FORMAT=COMPRESSED: KEY_BLOCK_SIZE in bytes; 0 otherwise
  bool page_compressed = false;
  uint32_t compression_algo = 0;  // full_crc32 only (kCompression*); 0 otherwise
  // MySQL only: a general tablespace (CREATE TABLESPACE), encrypted with a
  // keyring's key (ENCRYPTION='Y'), holding dictionary copies (SDI pages).
  bool mysql_shared = false;
  bool mysql_encrypted = false;
  bool mysql_sdi = false;
  // ROW_FORMAT=COMPRESSED. Not "physical_size != logical_size": with
  // innodb_page_size=4k and KEY_BLOCK_SIZE=4 (or 8k and 8) the compressed
  // pages are as large as the logical ones, and still have no trailer.
  bool zip() const { return zip_size != 0; }
};

// Decodes FSP_SPACE_FLAGS in either encoding (bit 4 set: full_crc32; clear: the
// older ZIP_SSIZE/PAGE_SSIZE layout where PAGE_SSIZE 0 means 16k). Combinations
// the server refuses (bad sizes, reserved bits, the buggy MariaDB 10.1.0-10.1.20
// layout) are kCorrupt.
Result<SpaceFlags> DecodeSpaceFlags(uint32_t raw);
// MySQL's FSP_SPACE_FLAGS (8.0 and later): bits 0..9 as the older encoding
// above, 10 DATA_DIR, 11 SHARED, 12 TEMPORARY, 13 ENCRYPTION, 14 SDI, the rest
// zero. Never full_crc32 (MySQL has no such format) nor page_compressed (its
// page compression is marked on each page, not in the flags).
Result<SpaceFlags> DecodeMysqlSpaceFlags(uint32_t raw);
Result<SpaceFlags> DecodeSpaceFlags(uint32_t raw, Dialect d);

struct SpaceHeader {
  uint32_t space_id = 0;
  uint32_t size_in_pages = 0;
  uint32_t free_limit = 0;
  SpaceFlags flags;
};

// Parses the FSP header of page 0 (len >= kFspHeaderEnd). Checks that the page
// says it is page 0, that FIL_PAGE_SPACE_ID equals FSP_SPACE_ID, and the flags.
// It does not verify the checksum: run CheckPage on page 0 for that.
Result<SpaceHeader> ParseSpaceHeader(const uint8_t* page0, size_t len, Dialect d = Dialect::kMariaDB);

// ---- Field access ------------------------------------------------------------
bool IsAllZero(const uint8_t* p, size_t n);
// Whether the first n bytes of a data file hold its page 0: once written, its
// FIL and FSP headers are never all zero. (Not the whole first
// innodb_page_size bytes: a ROW_FORMAT=COMPRESSED table's page 1 may reach
// the disk before its page 0.)
bool HasPage0(const uint8_t* p, size_t n);
uint64_t PageLsn(const uint8_t* page);
uint16_t PageType(const uint8_t* page);
uint32_t PageNo(const uint8_t* page);
uint32_t PageSpaceId(const uint8_t* page);

// ---- Validation ----------------------------------------------------------------
enum class PageVerdict { kOk, kAllZero, kCorrupt };

struct PageCheck {
  PageVerdict verdict = PageVerdict::kCorrupt;
  uint32_t stored = 0;     // the checksum found on the page (when one was compared)
  uint32_t computed = 0;   // what it should have been
  std::string detail;      // in words, what failed (empty when kOk/kAllZero)
  bool encrypted = false;  // kOk as an encrypted page (key version set, its post-encryption checksum)
};

// Validates one page of flags.physical_size bytes the way the server (and
// mariabackup's copier) would on read: accepts everything MariaDB 10.11 accepts
// with a non-strict innodb_checksum_algorithm, rejects torn pages (trailer LSN
// disagreeing with the header) and pages whose number is not expected_page_no.
// An all-zero page is kAllZero. Encrypted pages are judged by the checksum of
// the encrypted frame only. Pages that the server would check only after
// decompression (non-full_crc32 page_compressed) are decompressed when the
// algorithm is zlib; for other algorithms only their framing is checked.
PageCheck CheckPage(const uint8_t* page, const SpaceFlags& flags, uint32_t expected_page_no);

// False for a page whose space id field holds something else: a full_crc32
// PAGE_COMPRESSED page keeps compressed bytes there (bit 15 of its type).
// (An encrypted full_crc32 page has ciphertext there: PageCheck::encrypted.)
bool PageHasSpaceIdField(const uint8_t* page);

// The formats a page of a tablespace may have when no page 0 says which,
// from its sizes alone. `zip_size` 0 (not ROW_FORMAT=COMPRESSED): full_crc32
// first, then the older crc32/innodb layout, both of `logical`
// (innodb_page_size) bytes. Otherwise ROW_FORMAT=COMPRESSED with
// KEY_BLOCK_SIZE = `zip_size` bytes (at most `logical`: 16k compressed pages
// of 16k tables exist; none with pages above 16k, which the server refuses).
// Empty for sizes InnoDB cannot have.
std::vector<SpaceFlags> PossibleSpaceFlags(uint32_t logical, uint32_t zip_size);

// CheckPage with each of `candidates` in turn: the first verdict that is not
// kCorrupt, else the first candidate's (or kCorrupt if there is none).
PageCheck CheckPageWithAny(const uint8_t* page, const std::vector<SpaceFlags>& candidates, uint32_t page_no);

// Validates `logical` bytes at the place of page `window_no` (in units of
// `logical`) of a file whose format is unknown because its page 0 is not on
// disk yet (a table created moments ago). Accepts what the server may have
// written there: one page in full_crc32 or in the older crc32 layout, or
// logical / KEY_BLOCK_SIZE whole ROW_FORMAT=COMPRESSED pages, each sound or
// all zero. kAllZero if every byte is zero; otherwise the first format's
// verdict when none fits.
PageCheck CheckPageOfUnknownFormat(const uint8_t* window, uint32_t logical, uint32_t window_no);

// Writes the trailer LSN copy and the checksum the way the server does when it
// flushes a page: full_crc32, crc32, or the ROW_FORMAT=COMPRESSED crc32
// checksum (zip flags, which have no trailer). For uncompressed, unencrypted
// pages only; the header LSN must already be set.
void StampPageChecksum(uint8_t* page, const SpaceFlags& flags);

// The checksum an encrypted page of the older (not full_crc32) format carries
// after its key version (bytes 30..33): the crc32 page checksum of the
// encrypted bytes, in the ROW_FORMAT=COMPRESSED variant for zip pages.
uint32_t PostEncryptionChecksum(const uint8_t* page, const SpaceFlags& flags);

// Number of pages in an extent (FSP_EXTENT_SIZE) for a logical page size.
uint32_t ExtentPages(uint32_t page_size);

// The doublewrite buffer of the system tablespace, pages [extent, 3 * extent):
// those pages may hold copies of any page (or garbage), so mariabackup does not
// check them.
bool InDoublewriteArea(uint32_t space_id, uint32_t page_no, uint32_t page_size);

}  // namespace xbak::innodb
