#include "encrypt_options.h"

#include <cstdlib>
#include <iostream>

#include "common.h"
#include "xbak/backupdir/metadata.h"
#include "xbak/crypt/format.h"
#include "xbak/sink/decompress.h"
#include "xbak/sink/decrypt.h"
#include "xbak/util/file.h"
#include "xbak/util/log.h"
#include "xbak/util/size.h"

namespace po = boost::program_options;

namespace xbak::cli {
namespace {

std::vector<std::string> KeyFiles(const po::variables_map& vm) {
  return vm.count("encrypt-key-file") ? vm["encrypt-key-file"].as<std::vector<std::string>>()
                                      : std::vector<std::string>();
}

}  // namespace

std::optional<int> CheckEncryptionOptions(const po::variables_map& vm) {
  if (vm.count("encrypt-key")) {
    std::cerr << "xbak: --encrypt-key is not accepted: a key on the command line shows in the process list; "
                 "use --encrypt-key-file=F (mode 600) or the environment variable "
              << kKeyEnvironment << "\n";
    return 2;
  }
  if (vm.count("encrypt") && !vm.count("backup")) {
    std::cerr << "xbak: --encrypt goes with --backup (to read an encrypted backup: --decrypt)\n";
    return 2;
  }
  return std::nullopt;
}

std::optional<int> EncryptOutput(const po::variables_map& vm, bool* encrypt, sink::EncryptOptions* o) {
  *encrypt = vm.count("encrypt") > 0;
  if (!*encrypt) {
    for (const char* k : {"encrypt-key-file", "encrypt-threads", "encrypt-chunk-size"}) {
      if (vm.count(k) && !vm[k].defaulted()) {
        std::cerr << "xbak: --" << k << " goes with --encrypt=AES256\n";
        return 2;
      }
    }
    return std::nullopt;
  }
  auto algorithm = crypt::ParseAlgorithm(vm["encrypt"].as<std::string>());
  if (!algorithm.ok()) return Fail(algorithm.status());
  o->algorithm = *algorithm;
  o->threads = vm["encrypt-threads"].as<int>();
  const std::string size = vm["encrypt-chunk-size"].as<std::string>();
  const auto chunk = util::ParseSize(size);
  if (!chunk || *chunk == 0 || *chunk > crypt::kMaxChunkBytes) {
    std::cerr << "xbak: --encrypt-chunk-size must be a size from 1 byte to 64M (e.g. 64K, 1M), got '" << size
              << "'\n";
    return 2;
  }
  o->chunk_size = static_cast<size_t>(*chunk);
  const auto files = KeyFiles(vm);
  if (files.size() > 1) {
    std::cerr << "xbak: --backup encrypts with one key: give --encrypt-key-file once\n";
    return 2;
  }
  if (files.size() == 1) {
    auto key = crypt::LoadKeyFile(files[0]);
    if (!key.ok()) return Fail(key.status());
    o->key = std::move(key).value();
  } else {
    auto key = crypt::KeyFromEnvironment(kKeyEnvironment);
    if (!key.ok()) return Fail(key.status());
    if (*key == nullptr) {
      std::cerr
          << "xbak: --encrypt needs the key: --encrypt-key-file=F (32 bytes, e.g. `openssl rand -base64 24 "
             "> F; chmod 600 F`) or the environment variable "
          << kKeyEnvironment << "\n";
      return 2;
    }
    o->key = std::move(key).value();
  }
  auto backup = crypt::NewBackupId();
  if (!backup.ok()) return Fail(backup.status());
  o->backup_id = *backup;
  return std::nullopt;
}

bool KeysGiven(const po::variables_map& vm) {
  return vm.count("encrypt-key-file") > 0 || std::getenv(kKeyEnvironment) != nullptr;
}

std::optional<int> ReadKeys(const po::variables_map& vm, const char* mode, crypt::KeyRing* ring) {
  for (const std::string& f : KeyFiles(vm)) {
    auto key = crypt::LoadKeyFile(f);
    if (!key.ok()) return Fail(key.status());
    ring->Add(std::move(key).value());
  }
  auto env = crypt::KeyFromEnvironment(kKeyEnvironment);
  if (!env.ok()) return Fail(env.status());
  if (*env != nullptr) ring->Add(std::move(env).value());
  if (ring->empty()) {
    std::cerr << "xbak: " << mode
              << " needs the backup's key: --encrypt-key-file=F (repeat it for several keys) "
              << "or the environment variable " << kKeyEnvironment << "\n";
    return 2;
  }
  return std::nullopt;
}

std::optional<int> EncryptedBaseLsn(const po::variables_map& vm, const std::string& basedir, uint64_t* lsn) {
  if (!backupdir::StoredMetaName(basedir, backupdir::Meta::kCheckpoints).empty()) return std::nullopt;
  const std::string name =
      backupdir::StoredMetaName(basedir, backupdir::Meta::kCheckpoints, crypt::kEncryptedSuffix);
  if (name.empty()) return std::nullopt;
  const std::string path = util::JoinPath(basedir, crypt::EncryptedName(name));
  crypt::KeyRing ring;
  if (auto rc = ReadKeys(vm, "--incremental-basedir of an encrypted backup", &ring)) return *rc;
  auto text = sink::ReadEncryptedFile(path, name, ring);
  if (!text.ok()) return Fail(text.status());
  auto cp = backupdir::ParseCheckpoints(*text, path);
  if (!cp.ok()) return Fail(cp.status());
  *lsn = cp->to_lsn;
  return 0;
}

std::optional<int> DecryptForPrepare(const po::variables_map& vm, const std::string& dir, int parallel) {
  if (backupdir::StoredMetaName(dir, backupdir::Meta::kCheckpoints, crypt::kEncryptedSuffix).empty()) {
    return std::nullopt;
  }
  crypt::KeyRing ring;
  if (auto rc = ReadKeys(vm, ("--prepare of the encrypted backup in " + dir).c_str(), &ring)) return *rc;
  util::LogInfo("decrypting the backup in " + dir + " in place before the prepare");
  if (Status st = sink::DecryptBackup({dir, parallel, true}, ring); !st.ok()) return Fail(st);
  sink::DecompressOptions d;
  d.target_dir = dir;
  d.parallel = parallel;
  d.remove_original = true;
  if (Status st = sink::DecompressBackup(d); !st.ok()) return Fail(st);
  return std::nullopt;
}

int RunDecryptMode(const po::variables_map& vm, int parallel) {
  if (auto a = crypt::ParseAlgorithm(vm["decrypt"].as<std::string>()); !a.ok()) return Fail(a.status());
  sink::DecryptOptions d;
  d.target_dir = vm.count("target-dir") ? vm["target-dir"].as<std::string>() : std::string();
  if (d.target_dir.empty()) {
    std::cerr << "xbak: --decrypt needs --target-dir\n";
    return 2;
  }
  d.parallel = parallel;
  d.remove_original = vm.count("remove-original") > 0;
  crypt::KeyRing ring;
  if (auto rc = ReadKeys(vm, "--decrypt", &ring)) return *rc;
  Status st = sink::DecryptBackup(d, ring);
  return st.ok() ? 0 : Fail(st);
}

}  // namespace xbak::cli
