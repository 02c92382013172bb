#include "xbak/sink/decrypt.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "decode_files.h"
#include "xbak/crypt/cipher.h"
#include "xbak/util/file.h"
#include "xbak/util/hex.h"

namespace xbak::sink {
namespace {

const std::string kSuffix(crypt::kEncryptedSuffix);

// crypt's Decryptor behind the FileDecoder interface (its output goes to
// whatever writer the current Feed was given).
class DecryptDecoder : public FileDecoder {
 public:
  DecryptDecoder(const crypt::KeyRing& keys, const std::string& origin, const std::string& expected_path)
      : d_(keys, origin, expected_path, [this](const uint8_t* p, size_t n) { return (*out_)(p, n); }) {}
  Status Feed(const uint8_t* data, size_t n, const Output& out) override {
    out_ = &out;
    return d_.Write(data, n);
  }
  Status Finish() override { return d_.Finish(); }

 private:
  const Output* out_ = nullptr;
  crypt::Decryptor d_;
};

// The path a file of the backup was encrypted under: relative to the backup
// root, without the suffix.
std::string RelativeName(const std::string& root, const std::string& output) {
  std::string rel = output.substr(root.size());
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  return rel;
}

// Reads and checks a file's header (key, header tag, name), without its data.
Result<crypt::FileHeader> CheckHeader(const DecodeJob& job, const std::string& rel,
                                      const crypt::KeyRing& keys) {
  XBAK_ASSIGN_OR_RETURN(util::File f, util::File::OpenRead(job.input));
  std::vector<uint8_t> buf(64 + crypt::kMaxPathBytes + crypt::kTagBytes);
  XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(buf.data(), buf.size(), 0));
  size_t header_len = 0;
  XBAK_ASSIGN_OR_RETURN(auto cipher, crypt::OpenHeader(buf.data(), n, keys, job.input, rel, &header_len));
  if (!cipher) {
    return Error(ErrorCode::kCorrupt, job.input + ": ends at byte " + std::to_string(n) +
                                          " inside its header: the file is truncated");
  }
  return cipher->header();
}

// A backup id in messages: its first 8 bytes are enough to tell two apart.
std::string Hex(const crypt::BackupId& id) { return util::HexBytes(id.data(), 8) + "..."; }

// The backup id of the first file extracted: every other must carry it.
struct OneBackup {
  std::mutex mu;
  std::optional<crypt::BackupId> id;
  std::string first;
  Status Check(const crypt::BackupId& id_of, const std::string& name) {
    std::lock_guard<std::mutex> lock(mu);
    if (!id) {
      id = id_of;
      first = name;
    } else if (*id != id_of) {
      return Error(ErrorCode::kCorrupt, name + " belongs to another backup (backup id " + Hex(id_of) +
                                            ") than " + first + " (" + Hex(*id) +
                                            "): the stream mixes backups");
    }
    return Status::Ok();
  }
};

class DecryptFilter : public stream::ExtractFilter {
 public:
  DecryptFilter(const crypt::KeyRing& keys, std::shared_ptr<OneBackup> backup, const std::string& rel,
                stream::ExtractWriter write)
      : backup_(std::move(backup)),
        rel_(rel),
        write_(std::move(write)),
        d_(keys, rel, rel.substr(0, rel.size() - kSuffix.size()), write_) {}
  Status Write(const uint8_t* data, size_t n) override {
    XBAK_RETURN_IF_ERROR(d_.Write(data, n));
    if (!checked_ && d_.header() != nullptr) {
      checked_ = true;
      XBAK_RETURN_IF_ERROR(backup_->Check(d_.header()->backup_id, rel_));
    }
    return Status::Ok();
  }
  Status Finish() override { return d_.Finish(); }

 private:
  std::shared_ptr<OneBackup> backup_;
  std::string rel_;
  stream::ExtractWriter write_;
  crypt::Decryptor d_;
  bool checked_ = false;
};

}  // namespace

Status DecryptBackup(const DecryptOptions& options, const crypt::KeyRing& keys) {
  if (keys.empty()) return Error(ErrorCode::kInvalidArgument, "--decrypt needs the key (--encrypt-key-file)");
  DecodeRun run{"--decrypt", "decrypt", options.target_dir, options.parallel, options.remove_original};
  std::string root = options.target_dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  XBAK_ASSIGN_OR_RETURN(
      std::vector<DecodeJob> jobs,
      FindDecodeJobs(run, [&](const std::string& path, uint64_t size) -> std::optional<DecodeJob> {
        if (!path.ends_with(kSuffix)) return std::nullopt;
        const std::string output = path.substr(0, path.size() - kSuffix.size());
        const std::string rel = RelativeName(root, output);
        return DecodeJob{
            path, output, size, [&keys, path, rel]() -> Result<std::unique_ptr<FileDecoder>> {
              return std::unique_ptr<FileDecoder>(std::make_unique<DecryptDecoder>(keys, path, rel));
            }};
      }));
  // Every header first: a wrong key, a renamed file or one of another backup
  // is refused before anything is written. The backup is what most files say.
  std::vector<crypt::BackupId> ids;
  std::map<crypt::BackupId, size_t> votes;
  for (const auto& j : jobs) {
    XBAK_ASSIGN_OR_RETURN(crypt::FileHeader h, CheckHeader(j, RelativeName(root, j.output), keys));
    ids.push_back(h.backup_id);
    votes[h.backup_id]++;
  }
  if (votes.size() > 1) {
    auto most = std::max_element(votes.begin(), votes.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    for (size_t i = 0; i < jobs.size(); i++) {
      if (ids[i] == most->first) continue;
      return Error(ErrorCode::kCorrupt, "--decrypt: " + jobs[i].input +
                                            " belongs to another backup (backup id " + Hex(ids[i]) +
                                            ") than the other " + std::to_string(most->second) + " files (" +
                                            Hex(most->first) + "): it was put in from elsewhere");
    }
  }
  return RunDecodeJobs(run, std::move(jobs));
}

Result<std::string> ReadEncryptedFile(const std::string& path, const std::string& rel,
                                      const crypt::KeyRing& keys, size_t limit) {
  XBAK_ASSIGN_OR_RETURN(std::string blob, util::ReadSmallFile(path, limit + 4096));
  std::string plain;
  crypt::Decryptor d(keys, path, rel, [&](const uint8_t* p, size_t n) {
    plain.append(reinterpret_cast<const char*>(p), n);
    return Status::Ok();
  });
  XBAK_RETURN_IF_ERROR(d.Write(blob.data(), blob.size()));
  XBAK_RETURN_IF_ERROR(d.Finish());
  return plain;
}

stream::ExtractFilterFactory DecryptingExtractFilter(const crypt::KeyRing& keys) {
  auto backup = std::make_shared<OneBackup>();
  return [&keys, backup](const std::string& rel, std::string* out_rel,
                         stream::ExtractWriter write) -> Result<std::unique_ptr<stream::ExtractFilter>> {
    if (!rel.ends_with(kSuffix)) return std::unique_ptr<stream::ExtractFilter>();
    *out_rel = rel.substr(0, rel.size() - kSuffix.size());
    return std::unique_ptr<stream::ExtractFilter>(
        std::make_unique<DecryptFilter>(keys, backup, rel, std::move(write)));
  };
}

}  // namespace xbak::sink
