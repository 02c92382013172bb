// What --decompress and --decrypt share: every file X<suffix> of a backup
// directory decoded into X, on several threads, with every refusal made
// before anything is written.
//  * Refused first: an output name that exists already, two inputs that would
//    give one name (X.zst and X.lz4).
//  * Each output is written as "<X>.xbpartial", fsynced and renamed to X
//    (never replacing a file), so a name without the suffix is complete.
//  * A damaged input fails naming the file and byte offset; its partial
//    output is removed. The first failure stops the other workers.
//  * With remove_original, X<suffix> is deleted only after X is durable.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xbak/sink/file_decoder.h"
#include "xbak/util/status.h"

namespace xbak::sink {

struct DecodeJob {
  std::string input;   // X<suffix>
  std::string output;  // X
  uint64_t size = 0;
  std::function<Result<std::unique_ptr<FileDecoder>>()> make;
};

struct DecodeRun {
  std::string option;  // "--decompress", for messages
  std::string verb;    // "decompress"
  std::string target_dir;
  int parallel = 1;
  bool remove_original = false;
};

// The regular files under the target directory (recursively, symbolic links
// not followed) for which `job_for` gives a job.
Result<std::vector<DecodeJob>> FindDecodeJobs(
    const DecodeRun& run,
    const std::function<std::optional<DecodeJob>(const std::string& path, uint64_t size)>& job_for);

Status RunDecodeJobs(const DecodeRun& run, std::vector<DecodeJob> jobs);

}  // namespace xbak::sink
