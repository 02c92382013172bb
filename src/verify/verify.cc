#include "xbak/verify/verify.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <set>

#include "backup_dir.h"
#include "delta_checker.h"
#include "file_stream.h"
#include "log_checker.h"
#include "page_checker.h"
#include "problems.h"
#include "xbak/backupdir/layout.h"
#include "xbak/stream/xbstream.h"
#include "xbak/util/parallel.h"
#include "xbak/util/prefetch.h"

namespace xbak::verify {
namespace {

struct Job {
  std::string path;  // the file it reads (the first, for the system tablespace's)
  uint64_t size = 0;
  std::function<void()> run;
};

class Verifier {
 public:
  explicit Verifier(const VerifyOptions& o) : o_(o), r_(o) {}

  VerifyResult Run() {
    std::vector<std::string> dirs{o_.target_dir};
    for (const auto& d : o_.incremental_dirs) dirs.push_back(d);
    for (const auto& d : dirs) {
      auto b = std::make_unique<BackupDir>();
      b->dir = d;
      struct stat st;
      if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        r_.Add(d + ": not a directory");
        backups_.push_back(std::move(b));
        continue;
      }
      ListTree(d, "", b.get(), r_);  // first: the metadata is read under the names the files have
      ReadMetadata(b.get(), o_.keys, r_);
      CheckPromised(*b, r_);
      backups_.push_back(std::move(b));
    }
    CheckChain();
    for (auto& b : backups_) PlanJobs(*b);
    std::sort(jobs_.begin(), jobs_.end(), [](const Job& a, const Job& b) { return a.size > b.size; });
    std::vector<util::PrefetchRange> ranges;
    for (const Job& j : jobs_) ranges.push_back({j.path, j.size});
    // A cold disk kept busy: the files' starts asked ahead of the threads.
    auto ahead = util::PrefetchWholeFiles(std::move(ranges));
    std::atomic<bool> cancel{false};
    (void)util::RunParallel(
        jobs_.size(), o_.parallel,
        [&](size_t i) {
          jobs_[i].run();
          ahead->Consumed();
          return Status::Ok();
        },
        &cancel);
    for (auto& b : backups_) CheckLogLsns(*b);
    // The log checkers' FileProblems report their summaries when destroyed.
    for (auto& b : backups_) {
      b->log.reset();
      b->log_problems.reset();
    }
    VerifyResult res;
    res.files = files_.load();
    res.pages = pages_.load();
    res.bytes = bytes_.load();
    res.problems = r_.Take();
    std::sort(res.problems.begin(), res.problems.end());
    res.problem_count = res.problems.size() + r_.unlisted.load();
    return res;
  }

 private:
  void CheckChain() {
    for (size_t i = 0; i < backups_.size(); i++) {
      const BackupDir& b = *backups_[i];
      if (!b.has_checkpoints) continue;
      std::string cp = backupdir::MetaPath(b.dir, backupdir::Meta::kCheckpoints);
      if (backups_.size() > 1 && i == 0 && b.cp.backup_type == "incremental") {
        r_.Add(cp + ": the first backup of a chain must be a full backup, this one is incremental");
      }
      if (i == 0) continue;
      if (b.cp.backup_type != "incremental") {
        r_.Add(cp + ": backup_type " + b.cp.backup_type + " where the chain needs an incremental");
        continue;
      }
      const BackupDir& prev = *backups_[i - 1];
      if (!prev.has_checkpoints) continue;
      if (b.cp.from_lsn != prev.cp.to_lsn) {
        r_.Add(cp + ": from_lsn " + std::to_string(b.cp.from_lsn) + " does not continue " + prev.dir +
               " (to_lsn " + std::to_string(prev.cp.to_lsn) + ")" +
               (b.cp.from_lsn > prev.cp.to_lsn ? ": changes in between are in no backup of the chain"
                                               : ": wrong base, or incrementals out of order"));
      }
    }
  }

  void AddJob(const BackupDir& b, const std::string& rel, uint64_t size, std::function<void()> fn) {
    jobs_.push_back(Job{util::JoinPath(b.dir, rel), size, std::move(fn)});
  }

  // Streams one file into `consume`; stream errors are problems of that file
  // (false: the content was cut short, its checker's Finish would only echo it).
  bool Stream(const BackupDir& b, const FileEntry& f, FileProblems& p, const Consumer& consume) {
    uint64_t content = 0;
    const std::string name =
        f.encrypted ? f.rel.substr(0, f.rel.size() - crypt::kEncryptedSuffix.size()) : f.rel;
    Status st = StreamFile(Display(b, f.rel), {f.algo, f.encrypted, name, o_.keys}, consume, &content);
    bytes_ += content;
    files_++;
    if (!st.ok()) p.Add(st.message());
    return st.ok();
  }

  void PlanJobs(BackupDir& b) {
    const bool inc = IsIncremental(b);
    std::set<std::string> system(b.system_files.begin(), b.system_files.end());
    for (auto& [base, f] : b.files) {
      const FileEntry* fe = &f;
      BackupDir* bp = &b;
      if (base.ends_with(stream::kXbstreamPartialSuffix)) {
        r_.Add(Display(b, f.rel) + ": an unfinished file (its backup or extraction was interrupted)");
        files_++;
        continue;
      }
      if (system.count(base)) {
        if (base != b.system_files.front()) continue;  // checked with the first, in order
        uint64_t total = 0;
        for (const auto& s : b.system_files) {
          if (b.files.count(s)) total += b.files.at(s).size;
        }
        AddJob(b, f.rel, total, [this, bp] { CheckSystem(*bp); });
        continue;
      }
      if (base == "ib_logfile0") {
        b.log_problems = std::make_unique<FileProblems>(r_, Display(b, f.rel), o_.max_problems_per_file);
        b.log = std::make_unique<LogChecker>(*b.log_problems, !IsPrepared(b));
        AddJob(b, f.rel, f.size, [this, bp, fe] {
          if (Stream(*bp, *fe, *bp->log_problems, [&](const uint8_t* d, size_t n) { bp->log->Feed(d, n); })) {
            bp->log->Finish();
          }
        });
        continue;
      }
      if (base.ends_with(".ibd") || base.ends_with(".new") || backupdir::IsUndoTablespaceName(base)) {
        AddJob(b, f.rel, f.size, [this, bp, fe] { CheckTablespace(*bp, *fe); });
        continue;
      }
      if (base.ends_with(".delta")) {
        AddJob(b, f.rel, f.size, [this, bp, fe] { CheckDelta(*bp, *fe); });
        continue;
      }
      if (base.ends_with(".meta")) {
        files_++;
        std::string stem = base.substr(0, base.size() - 5);
        if (!b.files.count(stem + ".delta")) {
          r_.Add(Display(b, f.rel) + ": a .meta without its .delta");
        }
        if (f.algo) r_.Add(Display(b, f.rel) + ": a compressed .meta (they are never compressed)");
        continue;
      }
      if (f.algo || f.encrypted) {
        // Any other compressed or encrypted file: its frames and content
        // checksums, its chunks' tags.
        AddJob(b, f.rel, f.size, [this, bp, fe] {
          FileProblems p(r_, Display(*bp, fe->rel), o_.max_problems_per_file);
          Stream(*bp, *fe, p, [](const uint8_t*, size_t) {});
        });
        continue;
      }
      files_++;  // a plain file with nothing to check inside
    }
    (void)inc;
  }

  void CheckSystem(const BackupDir& b) {
    std::optional<innodb::SpaceFlags> flags;
    uint32_t next_page = 0;
    for (size_t i = 0; i < b.system_files.size(); i++) {
      auto it = b.files.find(b.system_files[i]);
      if (it == b.files.end()) return;  // reported as missing; later files cannot be numbered
      FileProblems p(r_, Display(b, it->second.rel), o_.max_problems_per_file);
      PageChecker::Options po;
      po.logical = b.page_size;
      po.is_system = true;
      po.first_page_no = next_page;
      if (i > 0) {
        if (!flags) {
          p.Add("not checked: the first system tablespace file has no readable page 0");
          files_++;
          continue;
        }
        po.flags = flags;
        po.space_id = 0;
      }
      PageChecker c(p, po);
      if (Stream(b, it->second, p, [&](const uint8_t* d, size_t n) { c.Feed(d, n); })) c.Finish();
      pages_ += c.pages();
      if (i == 0) {
        flags = c.flags();
        if (flags && c.space_id() != 0)
          p.Add("page 0 says space id " + std::to_string(c.space_id()) + ", not 0");
      }
      next_page += static_cast<uint32_t>(c.pages());
    }
  }

  void CheckTablespace(const BackupDir& b, const FileEntry& f) {
    FileProblems p(r_, Display(b, f.rel), o_.max_problems_per_file);
    PageChecker::Options po;
    po.logical = b.page_size;
    PageChecker c(p, po);
    if (Stream(b, f, p, [&](const uint8_t* d, size_t n) { c.Feed(d, n); })) c.Finish();
    pages_ += c.pages();
  }

  void CheckDelta(const BackupDir& b, const FileEntry& f) {
    FileProblems p(r_, Display(b, f.rel), o_.max_problems_per_file);
    std::string stem = f.base.substr(0, f.base.size() - 6);
    std::string meta_path = util::JoinPath(b.dir, stem + ".meta");
    auto text = util::ReadSmallFile(meta_path, 4096);
    if (!text.ok()) {
      p.Add("its .meta is missing or unreadable (" + text.status().message() + "); the delta is not checked");
      files_++;
      return;
    }
    auto meta = innodb::ParseDeltaMeta(text.value(), meta_path);
    if (!meta.ok()) {
      p.Add("bad .meta: " + meta.status().message() + "; the delta is not checked");
      files_++;
      return;
    }
    const uint32_t first_page =
        backupdir::LaterSystemFileFirstPage(b.system_files, b.system_first_page, stem).value_or(0);
    DeltaChecker c(p, meta.value(), b.page_size, first_page);
    if (Stream(b, f, p, [&](const uint8_t* d, size_t n) { c.Feed(d, n); })) c.Finish();
    pages_ += c.pages();
  }

  // After the walk: the log must reach what the checkpoints promise.
  void CheckLogLsns(const BackupDir& b) {
    if (!b.log || !b.log->header_ok() || !b.has_checkpoints || IsPrepared(b)) return;
    FileProblems& p = *b.log_problems;
    const LogChecker& l = *b.log;
    if (l.checkpoint_lsn() > b.cp.to_lsn) {
      p.Add("starts at checkpoint LSN " + std::to_string(l.checkpoint_lsn()) + ", after to_lsn " +
            std::to_string(b.cp.to_lsn) + " of the checkpoints file");
    }
    if (IsIncremental(b) && l.checkpoint_lsn() < b.cp.from_lsn) {
      p.Add("starts at checkpoint LSN " + std::to_string(l.checkpoint_lsn()) + ", before from_lsn " +
            std::to_string(b.cp.from_lsn));
    }
    if (!l.walked()) return;
    if (l.end_lsn() < b.cp.last_lsn) {
      p.Add("the mini-transactions end at LSN " + std::to_string(l.end_lsn()) + ", before last_lsn " +
            std::to_string(b.cp.last_lsn) + " of the checkpoints file: the log is truncated");
    } else if (l.end_lsn() < b.cp.to_lsn) {
      p.Add("the mini-transactions end at LSN " + std::to_string(l.end_lsn()) + ", before to_lsn " +
            std::to_string(b.cp.to_lsn));
    }
  }

  const VerifyOptions& o_;
  Reporter r_;
  std::vector<std::unique_ptr<BackupDir>> backups_;
  std::vector<Job> jobs_;
  std::atomic<uint64_t> files_{0}, pages_{0}, bytes_{0};
};

}  // namespace

std::string VerifyResult::Summary() const {
  return "verify: " + std::to_string(files) + " files, " + std::to_string(pages) + " pages, " +
         std::to_string(problem_count) + " problem" + (problem_count == 1 ? "" : "s");
}

Result<VerifyResult> VerifyBackup(const VerifyOptions& options) {
  if (options.target_dir.empty()) return Error(ErrorCode::kInvalidArgument, "--verify needs --target-dir");
  if (options.parallel < 1) return Error(ErrorCode::kInvalidArgument, "--parallel must be at least 1");
  Verifier v(options);
  return v.Run();
}

}  // namespace xbak::verify
