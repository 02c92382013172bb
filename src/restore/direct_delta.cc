#include "xbak/restore/direct_delta.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "xbak/innodb/crypt_data.h"
#include "xbak/innodb/delta.h"
#include "xbak/innodb/page.h"
#include "xbak/prepare/applied_delta.h"
#include "xbak/prepare/delta_apply.h"
#include "xbak/sink/compress.h"
#include "xbak/sink/decompress.h"
#include "xbak/util/endian.h"
#include "xbak/util/file.h"

namespace xbak::restore {

// One delta of a stream, parsed as its bytes come (slot 0 of a block, then
// its pages) and written page by page into the datadir's file of its table.
// Until its first page has shown that the delta is of the tablespace that
// file holds, nothing is written; if it is not, the delta is staged whole
// instead (the bytes seen so far first), and its NAME.xbapplied stays empty.
class DirectDeltaFilter : public stream::ExtractFilter {
 public:
  DirectDeltaFilter(std::string rel, std::string target, const innodb::SpaceHeader& page0, uint32_t page_size,
                    std::string staged_path, stream::ExtractWriter record, DirectDeltas::Counts& counts)
      : rel_(std::move(rel)),
        target_(std::move(target)),
        space_id_(page0.space_id),
        flags_(page0.flags),
        ps_(page_size),
        staged_path_(std::move(staged_path)),
        record_(std::move(record)),
        counts_(counts),
        unit_(page_size) {}

  Status Write(const uint8_t* p, size_t n) override {
    while (n > 0) {
      if (staged_) return staged_->Write(p, n);
      if (ended_) return Corrupt("bytes after its last block", offset_);
      const size_t take = std::min(n, size_t{ps_} - have_);
      std::memcpy(unit_.data() + have_, p, take);
      have_ += take;
      p += take;
      n -= take;
      if (have_ == ps_) {
        have_ = 0;
        XBAK_RETURN_IF_ERROR(Unit());
      }
    }
    return Status::Ok();
  }

  Status Finish() override {
    if (staged_) {
      counts_.staged++;
      return staged_->Close();
    }
    if (!ended_ || have_ != 0) return Corrupt("the last block is cut short", offset_ + have_);
    XBAK_RETURN_IF_ERROR(FlushRun());
    if (out_) {
      XBAK_ASSIGN_OR_RETURN(uint64_t size, out_->Size());
      // As the staged apply's PrepareTarget: grown to its page 0's size, never shrunk.
      if (want_size_ > size) XBAK_RETURN_IF_ERROR(out_->Truncate(want_size_));
      out_->StartWriteback();
      XBAK_RETURN_IF_ERROR(out_->Close());
    }
    counts_.direct++;
    counts_.bytes += pages_ * ps_;
    if (!seen_page_) record_pending_ = prepare::AppliedDeltaHead(space_id_);  // no page
    return FlushRecord();
  }

 private:
  static constexpr size_t kRunPages = 64;          // pages of one pwrite, at most
  static constexpr size_t kRecordPiece = 1 << 16;  // bytes of the record written at once

  Status Corrupt(const std::string& what, uint64_t at) const {
    return Error(ErrorCode::kCorrupt, rel_ + ": " + what + " (byte " + std::to_string(at) + " of the delta)");
  }

  // A whole slot: a block's header or one of its pages.
  Status Unit() {
    const uint64_t at = offset_;
    offset_ += ps_;
    if (in_header_) {
      auto h = innodb::ParseDeltaBlockHeader(unit_.data(), ps_);
      if (!h.ok()) return h.status().With(rel_ + ": the block at byte " + std::to_string(at));
      block_ = std::move(h->page_nos);
      next_ = 0;
      last_block_ = h->last;
      if (!seen_page_) first_header_.insert(first_header_.end(), unit_.begin(), unit_.end());
      if (block_.empty()) {
        ended_ = last_block_;
        // An empty block before the last (xbak and mariabackup write none):
        // staged whole, for the staged apply to judge, rather than kept here.
        if (!ended_ && !seen_page_) return Stage(/*with_unit=*/false);
      } else {
        in_header_ = false;
      }
      return Status::Ok();
    }
    const uint32_t no = block_[next_++];
    if (next_ == block_.size()) {
      in_header_ = true;
      ended_ = last_block_;
    }
    if (!seen_page_) {
      seen_page_ = true;
      if (!SameTablespace(no)) return Stage(/*with_unit=*/true);
      record_pending_ = prepare::AppliedDeltaHead(space_id_);
    }
    const uint8_t* page = unit_.data();
    const innodb::PageCheck c = innodb::CheckPage(page, flags_, no);
    if (c.verdict == innodb::PageVerdict::kCorrupt) {
      return Corrupt("page " + std::to_string(no) + ": " + c.detail, at);
    }
    if (c.verdict == innodb::PageVerdict::kOk && !c.encrypted && innodb::PageHasSpaceIdField(page) &&
        util::LoadBE32(page + innodb::kFilPageSpaceId) != space_id_) {
      return Corrupt("page " + std::to_string(no) + " is of space " +
                         std::to_string(util::LoadBE32(page + innodb::kFilPageSpaceId)) + ", not " +
                         std::to_string(space_id_),
                     at);
    }
    if (run_pages_ > 0 && (no != run_first_ + run_pages_ || run_pages_ == kRunPages))
      XBAK_RETURN_IF_ERROR(FlushRun());
    if (run_pages_ == 0) {
      run_first_ = no;
      run_.resize(kRunPages * size_t{ps_});
    }
    std::memcpy(run_.data() + run_pages_ * size_t{ps_}, page, ps_);
    run_pages_++;
    pages_++;
    prepare::AppendAppliedPage(&record_pending_, no);
    if (record_pending_.size() >= kRecordPiece) return FlushRecord();
    return Status::Ok();
  }

  // The delta's first page says which tablespace it is of (page 0 in full;
  // another by its space id field): the one the datadir's file holds, in
  // the same format, and page 0 brings no encryption.
  bool SameTablespace(uint32_t no) {
    const uint8_t* page = unit_.data();
    if (no == 0) {
      auto h = innodb::ParseSpaceHeader(page, ps_);
      if (!h.ok() || h->space_id != space_id_ || h->flags.raw != flags_.raw) return false;
      if (auto c = innodb::ReadCryptData(page, h->flags); c.has_value()) return false;
      want_size_ = uint64_t{h->size_in_pages} * ps_;
      return true;
    }
    return innodb::PageHasSpaceIdField(page) && util::LoadBE32(page + innodb::kFilPageSpaceId) == space_id_;
  }

  // Staged whole after all: what came so far (the headers before the first
  // page, and this page when `with_unit`), then the rest as it comes.
  Status Stage(bool with_unit) {
    XBAK_ASSIGN_OR_RETURN(util::File f, util::File::CreateNew(staged_path_));
    staged_.emplace(std::move(f));
    XBAK_RETURN_IF_ERROR(staged_->Write(first_header_.data(), first_header_.size()));
    return with_unit ? staged_->Write(unit_.data(), unit_.size()) : Status::Ok();
  }

  // The record (NAME.xbapplied) so far, through the extractor's writer.
  Status FlushRecord() {
    Status st = record_(reinterpret_cast<const uint8_t*>(record_pending_.data()), record_pending_.size());
    record_pending_.clear();
    return st;
  }

  Status FlushRun() {
    if (run_pages_ == 0) return Status::Ok();
    if (!out_) {
      XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenWrite(target_));
      out_.emplace(std::move(f));
    }
    XBAK_RETURN_IF_ERROR(out_->PWrite(run_.data(), run_pages_ * size_t{ps_}, uint64_t{run_first_} * ps_));
    run_pages_ = 0;
    return Status::Ok();
  }

  const std::string rel_, target_;
  const uint32_t space_id_;
  const innodb::SpaceFlags flags_;
  const uint32_t ps_;
  const std::string staged_path_;
  const stream::ExtractWriter record_;
  DirectDeltas::Counts& counts_;

  std::vector<uint8_t> unit_;  // the slot being filled
  size_t have_ = 0;
  uint64_t offset_ = 0;  // in the delta, of the slot being filled
  bool in_header_ = true, last_block_ = false, ended_ = false, seen_page_ = false;
  std::vector<uint32_t> block_;  // page numbers of the current block
  size_t next_ = 0;              // its next page
  std::vector<uint8_t> first_header_;
  std::optional<util::File> staged_, out_;
  std::vector<uint8_t> run_;  // consecutive pages, written with one pwrite
  uint32_t run_first_ = 0;
  size_t run_pages_ = 0;
  uint64_t want_size_ = 0;
  uint64_t pages_ = 0;
  std::string record_pending_;  // of the record, not written yet
};

// A compressed delta (db/t.ibd.delta.zst): decompressed as it comes, into
// the filter above.
class DecompressingFilter : public stream::ExtractFilter {
 public:
  DecompressingFilter(std::unique_ptr<sink::Decompressor> decoder,
                      std::unique_ptr<stream::ExtractFilter> inner)
      : decoder_(std::move(decoder)), inner_(std::move(inner)) {}
  Status Write(const uint8_t* p, size_t n) override {
    return decoder_->Feed(p, n, [this](const uint8_t* d, size_t len) { return inner_->Write(d, len); });
  }
  Status Finish() override {
    XBAK_RETURN_IF_ERROR(decoder_->Finish());
    return inner_->Finish();
  }

 private:
  std::unique_ptr<sink::Decompressor> decoder_;
  std::unique_ptr<stream::ExtractFilter> inner_;
};

DirectDeltas::DirectDeltas(std::string datadir, size_t streams)
    : datadir_(std::move(datadir)), gates_(streams), counts_(streams) {}

void DirectDeltas::Open(size_t k, uint32_t page_size, const prepare::LogDdl& ddl) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (k >= gates_.size() || gates_[k].decided) return;
    gates_[k] = GateState{true, std::make_shared<const Gate>(Gate{page_size, ddl})};
  }
  cv_.notify_all();
}

void DirectDeltas::CloseAll() {
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& g : gates_) g.decided = true;
  }
  cv_.notify_all();
}

std::shared_ptr<const DirectDeltas::Gate> DirectDeltas::Wait(size_t k, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, wait, [&] { return gates_[k].decided; });
  return gates_[k].open;
}

stream::ExtractFilterFactory DirectDeltas::Filter(size_t k, std::string staging,
                                                  std::chrono::milliseconds wait) {
  return [this, k, wait, staging = std::move(staging)](
             const std::string& rel, std::string* out_rel,
             stream::ExtractWriter write) -> Result<std::unique_ptr<stream::ExtractFilter>> {
    // A file-per-table tablespace's delta (db/t.ibd.delta), of an
    // incremental; compressed or not.
    const std::optional<sink::CompressOptions::Algo> algo = sink::CompressedWith(rel);
    const std::string name = algo ? rel.substr(0, rel.size() - sink::CompressSuffix(*algo).size()) : rel;
    constexpr std::string_view kDelta = ".delta";
    // The records of deltas written as they arrived have this suffix: one the
    // stream itself brings is not ours.
    if (rel.ends_with(prepare::kAppliedDeltaSuffix)) {
      return Error(ErrorCode::kCorrupt,
                   rel + ": a name xbak keeps for its own records, not part of a backup");
    }
    if (k == 0 || !name.ends_with(".ibd.delta") || name.find('/') == std::string::npos)
      return std::unique_ptr<stream::ExtractFilter>();
    std::shared_ptr<const Gate> gate = Wait(k, wait);
    const std::string table = name.substr(0, name.size() - kDelta.size());
    auto staged = [&] {
      counts_[k].staged++;
      return std::unique_ptr<stream::ExtractFilter>();
    };
    if (!gate || gate->ddl.names.count(table)) return staged();
    const std::string target = util::JoinPath(datadir_, table);
    if (!util::PathExists(target)) return staged();
    bool special = true;
    auto h = prepare::ReadPage0(target, gate->page_size, &special);
    if (!h.ok() || special || h->flags.zip() || gate->ddl.spaces.count(h->space_id)) return staged();
    *out_rel = table + std::string(prepare::kAppliedDeltaSuffix);
    // Staged after all (another tablespace): decompressed, as DecompressBackup would.
    std::unique_ptr<stream::ExtractFilter> direct = std::make_unique<DirectDeltaFilter>(
        name, target, *h, gate->page_size, util::JoinPath(staging, name), std::move(write), counts_[k]);
    if (!algo) return direct;
    XBAK_ASSIGN_OR_RETURN(auto decoder, sink::Decompressor::Create(*algo, rel));
    return std::unique_ptr<stream::ExtractFilter>(
        std::make_unique<DecompressingFilter>(std::move(decoder), std::move(direct)));
  };
}

std::string DirectDeltas::Summary(size_t k) const {
  const Counts& c = counts_[k];
  return std::to_string(c.direct.load()) + " deltas (" + std::to_string(c.bytes.load() >> 20) +
         " MiB) written into the datadir as they arrived, " + std::to_string(c.staged.load()) + " staged";
}

}  // namespace xbak::restore
