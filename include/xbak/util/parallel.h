// Runs a list of independent jobs on N threads pulling from a shared queue
// (an atomic index: jobs should be ordered largest first for balance). The
// first failure sets `cancel`, so the other workers stop at their next
// check, and is the Status returned.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>

#include "xbak/util/status.h"

namespace xbak::util {

Status RunParallel(size_t jobs, int threads, const std::function<Status(size_t job)>& fn,
                   std::atomic<bool>* cancel);

}  // namespace xbak::util
