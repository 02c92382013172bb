// libFuzzer entry point for the redo log parsers: the header block, the
// checkpoint blocks and the mtr framing all read bytes straight from a file
// that a live server is rewriting under us, so they must never read out of
// bounds, loop forever or accept an mtr whose framing they did not check.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/log_crypt.h"
#include "xbak/innodb/mysql_redo.h"
#include "xbak/innodb/redo_log.h"
#include "xbak/util/endian.h"

using namespace xbak::innodb;
using xbak::util::LoadBE32;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Exact-size copies, so that ASan catches any read past the input.
  std::vector<uint8_t> buf(data, data + size);

  auto header = ParseLogHeader(buf.data(), buf.size());
  uint64_t first_lsn = header.ok() ? header->first_lsn : kLogFirstLsn;
  if (header.ok() && header->creator.size() > kLogHeaderCreatorLen) std::abort();
  auto cp = PickCheckpoint(buf.data(), buf.size(), first_lsn);
  if (cp.ok() && (cp->checkpoint_lsn < first_lsn || cp->end_lsn < cp->checkpoint_lsn)) std::abort();

  // Walk the input as a log: both sequence bits, and a wrap point taken from
  // the first byte, as the copier does for an mtr straddling the file end.
  for (bool bit : {false, true}) {
    size_t flip = size > 0 ? data[0] * 97u : SIZE_MAX;
    size_t pos = 0;
    MtrInfo info;
    std::string why;
    while (pos < buf.size()) {
      MtrStatus st =
          ParseMtr(buf.data() + pos, buf.size() - pos, bit, &info, &why, flip > pos ? flip - pos : 0);
      if (st != MtrStatus::kComplete) break;
      if (info.length < kMtrTrailerSize + 1 || info.length > buf.size() - pos ||
          info.records_length + kMtrTrailerSize != info.length || info.records_length > kMtrSizeMax) {
        std::abort();
      }
      pos += info.length;
    }
  }

  // An encrypted log: the same framing with a nonce, then the records
  // decrypted (headers kept as they are) and their FILE_ records read.
  {
    AesKey key{};
    for (size_t i = 0; i < key.size(); i++) key[i] = static_cast<uint8_t>(i + 1);
    size_t pos = 0;
    MtrInfo info;
    std::string why;
    while (pos < buf.size()) {
      if (ParseMtr(buf.data() + pos, buf.size() - pos, true, &info, &why, SIZE_MAX, true) !=
          MtrStatus::kComplete)
        break;
      if (info.records_length + kMtrTrailerSize + kMtrNonceSize != info.length) std::abort();
      std::vector<uint8_t> plain(info.records_length);
      for (CryptMode m : {CryptMode::kCbc, CryptMode::kCtr}) {
        if (!DecryptMtr(buf.data() + pos, info.records_length, key, m, plain.data()).ok()) std::abort();
        if (plain.empty() || plain[0] != buf[pos]) std::abort();  // the first header stays plain
        (void)ParseFileRecords(plain.data(), plain.size(), &info, &why);
      }
      pos += info.length;
    }
  }
  if (size >= 4) {
    (void)CryptDataFromWrite(16384, LoadBE32(data) % 65536, buf.data() + 4, buf.size() - 4);
  }

  // Record framing and varints on their own.
  uint32_t v = 0;
  size_t len = 0;
  if (DecodeVarint(buf.data(), buf.size(), &v, &len) == DecodeResult::kOk) {
    uint8_t enc[5];
    if (len > buf.size() || EncodeVarint(v, enc) != len) std::abort();
  }
  RecordFrame f;
  if (size > 0 && DecodeRecordLength(buf.data(), buf.size(), &f) == DecodeResult::kOk &&
      f.header_length > 6) {
    std::abort();
  }
  // The same bytes as a MySQL redo file (#ib_redoN): header, slots, blocks.
  namespace my = xbak::innodb::mysql_redo;
  if (buf.size() >= my::kFileHeaderSize) {
    auto h = my::ParseFileHeader(buf.data(), "fuzz");
    if (h.ok() && (h->start_lsn % my::kBlockSize != 0 || h->creator.size() >= 32)) std::abort();
    for (size_t slot : {my::kCheckpoint1, my::kCheckpoint2}) {
      auto c = my::ParseCheckpoint(buf.data() + slot);
      if (c && *c < my::kStartLsn) std::abort();
    }
    const uint64_t start = h.ok() ? h->start_lsn : my::kStartLsn;
    for (size_t off = my::kFileHeaderSize; off + my::kBlockSize <= buf.size(); off += my::kBlockSize) {
      const uint64_t lsn = start + (off - my::kFileHeaderSize);
      (void)my::CheckBlock(buf.data() + off, lsn);
      if (my::ParseBlockHeader(buf.data() + off).data_len > 0x7FFF) std::abort();
    }
  }
  return 0;
}
