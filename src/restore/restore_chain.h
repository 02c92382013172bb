// The chain a restore reads (restore.cc): each backup's identity and
// checkpoints, the facts its links must agree on, and the checks that refuse
// a broken chain before anything is written. Private to the restore layer.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "xbak/backupdir/metadata.h"
#include "xbak/backupdir/table_filter.h"
#include "xbak/restore/restore.h"
#include "xbak/util/status.h"

namespace xbak::restore {

// One backup of the chain.
struct Link {
  std::string dir;   // as given
  std::string real;  // canonical path, for the restore's identity
  backupdir::Checkpoints cp;
};

// What every link must agree on with the full backup.
struct ChainFacts {
  uint32_t page_size = 0;
  backupdir::TableFilter filter;
  std::set<std::string> seen;  // canonical paths of the backups read so far
};

// The whole chain, checked before anything is written (from streams, with
// o.await_incremental set: the full backup only; each incremental is read
// and checked when its stream is whole, before the step that applies it,
// but after the deltas that went in as they arrived). `remote`: the DATA
// DIRECTORY places the backups' .isl files name.
Result<std::vector<Link>> ReadChain(const RestoreOptions& o, std::map<std::string, std::string>* remote,
                                    ChainFacts* facts);

// From streams: waits until incremental k is whole, then reads and checks it
// (chain link, files) before its pages go in, and adds it to the chain.
Status AwaitIncremental(const RestoreOptions& o, size_t k, const std::map<std::string, std::string>& remote,
                        ChainFacts* facts_out, std::vector<Link>* chain_out);

}  // namespace xbak::restore
