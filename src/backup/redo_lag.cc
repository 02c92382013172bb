#include "xbak/backup/redo_lag.h"

#include <algorithm>
#include <cstdio>

#include "xbak/util/log.h"

namespace xbak::backup {
namespace {

constexpr auto kWarningEvery = std::chrono::seconds(10);

unsigned Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : static_cast<unsigned>((part * 100 + whole / 2) / whole);
}

std::string Rate(uint64_t bps) { return util::HumanBytes(bps) + "/s"; }

}  // namespace

std::string DescribeRedoLag(const RedoLagSample& s) {
  std::string out = "redo " + util::HumanBytes(s.lag()) + " behind (" +
                    std::to_string(Percent(s.lag(), s.capacity)) + "% of the " +
                    util::HumanBytes(s.capacity) + " log)";
  if (s.spool.pending > 0) {
    out += ", spool " + util::HumanBytes(s.spool.pending);
    if (s.spool.on_disk > 0) out += " (" + util::HumanBytes(s.spool.on_disk) + " on disk)";
  }
  return out;
}

std::string RedoLagWarning(const RedoLagSample& s) {
  if (s.capacity == 0 || s.lag() * 2 < s.capacity) return "";
  std::string w = "the redo log copy is " + util::HumanBytes(s.lag()) + " behind the server, " +
                  std::to_string(Percent(s.lag(), s.capacity)) + "% of the " + util::HumanBytes(s.capacity) +
                  " the server's log holds";
  if (s.rate > 0 && s.lag() < s.capacity) {
    double left = static_cast<double>(s.capacity - s.lag()) / static_cast<double>(s.rate);
    char b[64];
    std::snprintf(b, sizeof b, "%.0f s", left);
    w += "; the server writes " + Rate(s.rate) +
         " of redo, so at this rate log not yet copied is overwritten in "
         "about " +
         std::string(b);
  }
  return w +
         ". The copy reads the server's log file only: check that its disk is not saturated; a larger "
         "innodb_log_file_size gives more margin";
}

RedoLagMonitor::RedoLagMonitor(uint64_t capacity, Sources sources, util::Progress* progress,
                               std::chrono::milliseconds interval)
    : capacity_(capacity), src_(std::move(sources)), progress_(progress), interval_(interval) {}

RedoLagMonitor::~RedoLagMonitor() { Stop(); }

void RedoLagMonitor::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void RedoLagMonitor::Stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RedoLagMonitor::Run() {
  // The first sample comes one interval in: the copy starts at the server's
  // last checkpoint, up to a whole checkpoint age behind the head, and reads
  // that much in its first milliseconds; that start is not a lag to warn of.
  std::unique_lock lk(mu_);
  for (;;) {
    cv_.wait_for(lk, interval_, [this] { return stop_; });
    if (stop_) break;
    lk.unlock();
    Sample();
    lk.lock();
  }
}

void RedoLagMonitor::Sample() {
  // The copier's position is read before the server's head: read the other
  // way round, a copy that overtook the sampled head would hide real lag.
  RedoLagSample s;
  s.capacity = capacity_;
  s.copied = src_.copied_lsn();
  if (src_.spool) s.spool = src_.spool();
  auto head = src_.server_lsn();
  auto now = std::chrono::steady_clock::now();
  std::string warning, note;
  {
    std::lock_guard lk(mu_);
    if (!head.ok()) {
      if (!head_failed_) {
        head_failed_ = true;
        util::LogWarning("cannot read the server's current LSN, so the redo lag is not shown: " +
                         head.status().message());
      }
      return;
    }
    s.head = *head;
    if (last_head_ != 0 && s.head >= last_head_) {
      double dt = std::chrono::duration<double>(now - last_time_).count();
      if (dt > 0.05) {
        double r = static_cast<double>(s.head - last_head_) / dt;
        rate_ = rate_ == 0 ? r : 0.5 * rate_ + 0.5 * r;
      }
    }
    last_head_ = s.head;
    last_time_ = now;
    s.rate = static_cast<uint64_t>(rate_);
    max_rate_ = std::max(max_rate_, s.rate);
    max_lag_ = std::max(max_lag_, s.lag());
    note = DescribeRedoLag(s);
    warning = RedoLagWarning(s);
    if (!warning.empty()) {
      if (warnings_ > 0 && now - last_warning_ < kWarningEvery) {
        warning.clear();
      } else {
        warnings_++;
        last_warning_ = now;
      }
    }
  }
  if (progress_ != nullptr) progress_->SetNote(note);
  if (!warning.empty()) util::LogWarning(warning);
}

uint64_t RedoLagMonitor::max_lag() const {
  std::lock_guard lk(mu_);
  return max_lag_;
}

uint64_t RedoLagMonitor::warnings() const {
  std::lock_guard lk(mu_);
  return warnings_;
}

std::string RedoLagMonitor::Summary() const {
  util::Spool::Stats spool = src_.spool ? src_.spool() : util::Spool::Stats{};
  std::lock_guard lk(mu_);
  std::string s = head_failed_
                      ? std::string("redo lag not measured")
                      : "largest redo lag " + util::HumanBytes(max_lag_) + " (" +
                            std::to_string(Percent(max_lag_, capacity_)) + "% of the " +
                            util::HumanBytes(capacity_) + " log), server redo up to " + Rate(max_rate_);
  if (spool.peak_pending > 0) {
    s += "; output behind by up to " + util::HumanBytes(spool.peak_pending) + " of redo";
    if (spool.peak_on_disk > 0) s += " (up to " + util::HumanBytes(spool.peak_on_disk) + " spooled to disk)";
  }
  return s;
}

}  // namespace xbak::backup
