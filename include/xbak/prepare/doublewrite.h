// The redo apply's doublewrite file, `xbak_doublewrite` in the directory it
// writes (the backup for --prepare, the datadir for --restore from
// directories).
//
// Why: a page written in place can be left torn by a kill. Linux copies a
// buffered write into the page cache one 4 KiB page at a time and stops at a
// fatal signal: a SIGKILL in the middle of a 16 KiB write leaves its first
// 4 KiB new and the rest old. The apply run again would trust such a page:
// its LSN field (in the first 4 KiB) says the log is applied, so its records
// are skipped and the page stays half old. The server has the same problem
// and the same answer, its doublewrite buffer: every page image goes to a
// side file first, and only then in place. Run again, the apply of the same
// log first writes back every intact image of the side file: each is a whole
// page of this log's apply, from which applying the rest of the log gives the
// same bytes (the records at or below its LSN are skipped, as for any page).
//
// A kill of the process, not a power loss: the page cache outlives the
// process, so nothing is synced per page (the server's fsync per batch would
// cost the apply about a tenth of its time). A run interrupted on an earlier
// boot of the machine (the file records the kernel's boot id) may have left
// torn pages on disk with their copies lost: that is refused, by name, and
// the apply must start over from the backup.
//
// Bounded: one slot of `slot_pages` images per writer thread, reused batch
// after batch (a slot is reused only once its pages are all in place).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "xbak/util/file.h"
#include "xbak/util/status.h"

namespace xbak::prepare {

inline constexpr const char* kDoublewriteFile = "xbak_doublewrite";

// Which apply a doublewrite file's images belong to: its log's checkpoint
// and end. Images of another log are never written back.
struct DoublewriteTag {
  uint64_t checkpoint_lsn = 0;
  uint64_t end_lsn = 0;
};

// One page as it is written in place.
struct PageImage {
  std::string_view rel;        // the file written, relative to the directory (ibdata2, db/t.ibd)
  std::string_view space_rel;  // the tablespace's first file, whose page 0 names it
  uint32_t space_id = 0;
  uint64_t offset = 0;  // in `rel`
  std::span<const uint8_t> bytes;
};

class Doublewrite {
 public:
  // Creates DIR/xbak_doublewrite afresh (an older one is replaced: write
  // back its images first, RestoreDoublewrite) for `slots` writers of up to
  // `slot_pages` images of up to `page_size` bytes. The header is synced, with
  // the directory, before any page is written in place: after a power loss
  // the file is there to say that this step was interrupted on that boot.
  static Result<std::unique_ptr<Doublewrite>> Create(const std::string& dir, DoublewriteTag tag, size_t slots,
                                                     size_t slot_pages, size_t page_size);

  // A free slot, waiting for one if every slot is taken; an error once a
  // slot was abandoned (no slot is written after a failed in-place write).
  Result<size_t> Acquire();
  // The slot's pages are all in place: it may be reused.
  void Release(size_t slot);
  // A write in place of the slot's pages failed, and may have left one
  // torn: its copies must survive for the next run, so the slot is never
  // reused, and no other slot is written from now on.
  void Abandon(size_t slot);
  // Writes `images` (at most slot_pages) into `slot`.
  Status Write(size_t slot, std::span<const PageImage> images);
  // Once every page is in place and synced: the file goes, and the
  // directory is synced (a power loss must not bring it back).
  Status Remove();

 private:
  Doublewrite(util::File file, DoublewriteTag tag, size_t slots, size_t slot_pages, size_t page_size);

  util::File file_;
  const DoublewriteTag tag_;
  const size_t slot_pages_, stride_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<bool> busy_;
  bool abandoned_ = false;
};

// Writes back, in place, every intact image of `tag` that DIR/xbak_doublewrite
// holds, where its file still holds that tablespace (page 0's space id).
// Returns how many; 0 when there is no such file, or it belongs to another
// log. An error when the run that wrote it was on an earlier boot, or when
// the boot is unknown (no boot id then or now).
Result<size_t> RestoreDoublewrite(const std::string& dir, DoublewriteTag tag);

// The kernel's boot id (/proc/sys/kernel/random/boot_id), or "" where there
// is none: two runs on the same boot share the page cache.
std::string BootId();

}  // namespace xbak::prepare
