#include "xbak/storage/posix_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "xbak/util/file.h"

namespace xbak::storage {
namespace {

// Keys come from backup names and stream paths: refuse anything that could
// leave the root once used as a path.
bool SafeKey(const std::string& key) {
  if (key.empty() || key.front() == '/' || key.back() == '/') return false;
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string::npos) end = key.size();
    std::string_view part(key.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return key.find('\0') == std::string::npos;
}

class PosixStore final : public ObjectStore {
 public:
  PosixStore(EventLoop& loop, std::string root) : loop_(loop), root_(std::move(root)) {}

  void Put(const std::string& key, Body body, const Md5Digest& md5,
           std::function<void(Status)> done) override {
    Status s = DoPut(key, *body, md5);
    if (s.ok()) stats_.bytes_sent += body->size();
    Finish([done = std::move(done), s = std::move(s)]() mutable { done(std::move(s)); });
  }

  void Get(const std::string& key, std::function<void(Result<std::string>)> done, std::string) override {
    Result<std::string> r = DoGet(key);
    if (r.ok()) stats_.bytes_received += r->size();
    Finish([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  }

  // Reads the whole range now and hands its pieces over in order, each
  // through the loop as the S3 driver would.
  void GetRange(const std::string& key, ByteRange range, RangeReader reader) override {
    std::vector<std::string> pieces;
    Status s = DoGetRange(key, range, reader, &pieces);
    if (s.ok()) stats_.bytes_received += range.length;
    for (size_t i = 0; i < pieces.size(); i++) {
      loop_.Post([piece = reader.piece, i, p = std::move(pieces[i])]() mutable { piece(i, std::move(p)); });
    }
    Finish([done = std::move(reader.done), s = std::move(s)]() mutable { done(std::move(s)); });
  }

  void List(const std::string& prefix, const std::string& token,
            std::function<void(Result<ListResult>)> done) override {
    Result<ListResult> r = DoList(prefix, token);
    Finish([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  }

  void Delete(const std::vector<std::string>& keys, std::function<void(Status)> done) override {
    Status s;
    for (const auto& k : keys) {
      if (!SafeKey(k)) {
        s = Error(ErrorCode::kInvalidArgument, "unsafe object key '" + k + "'");
        break;
      }
      std::string path = root_ + "/" + k;
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        s = ErrnoError("delete", path, errno);
        break;
      }
    }
    Finish([done = std::move(done), s = std::move(s)]() mutable { done(std::move(s)); });
  }

  // Every operation already completed when it was called; nothing to cancel.
  void CancelAll() override {}

  StoreStats stats() const override { return stats_; }
  std::string Describe() const override { return "directory " + root_; }

 private:
  void Finish(std::function<void()> fn) {
    stats_.requests++;
    loop_.Post(std::move(fn));
  }

  Status DoPut(const std::string& key, const std::string& body, const Md5Digest& md5) {
    if (!SafeKey(key)) return Error(ErrorCode::kInvalidArgument, "unsafe object key '" + key + "'");
    if (Md5(body) != md5)
      return Error(ErrorCode::kCorrupt, "object " + key + ": body does not match its MD5");
    std::string path = root_ + "/" + key;
    XBAK_RETURN_IF_ERROR(MakeDirs(path.substr(0, path.rfind('/'))));
    return WriteFileAtomic(path, body);
  }

  // The object's file, opened for reading; kNotFound when there is none.
  Result<File> OpenObject(const std::string& key) {
    if (!SafeKey(key)) return Error(ErrorCode::kInvalidArgument, "unsafe object key '" + key + "'");
    auto f = File::OpenRead(root_ + "/" + key);
    if (!f.ok() && f.status().code() == ErrorCode::kNotFound)
      return Error(ErrorCode::kNotFound, "object " + key + " not found in " + root_);
    return f;
  }

  Result<std::string> DoGet(const std::string& key) {
    XBAK_ASSIGN_OR_RETURN(File f, OpenObject(key));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    std::string body(static_cast<size_t>(size), '\0');
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(body.data(), body.size(), 0));
    if (n != body.size()) return Error(ErrorCode::kCorrupt, "object " + key + " shrank while it was read");
    return body;
  }

  Status DoGetRange(const std::string& key, ByteRange range, const RangeReader& reader,
                    std::vector<std::string>* pieces) {
    if (reader.piece_bytes == 0) return Error(ErrorCode::kInvalidArgument, "GET " + key + ": no piece size");
    XBAK_ASSIGN_OR_RETURN(File f, OpenObject(key));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    if (range.length == 0 || range.offset > size || range.length > size - range.offset) {
      return Error(ErrorCode::kCorrupt, "object " + key + " has " + std::to_string(size) +
                                            " bytes, not the range " + std::to_string(range.offset) + "+" +
                                            std::to_string(range.length) + " asked for");
    }
    for (uint64_t at = 0; at < range.length; at += reader.piece_bytes) {
      std::string buffer = reader.buffer();
      buffer.resize(static_cast<size_t>(std::min(reader.piece_bytes, range.length - at)));
      XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(buffer.data(), buffer.size(), range.offset + at));
      if (n != buffer.size())
        return Error(ErrorCode::kCorrupt, "object " + key + " shrank while it was read");
      pieces->push_back(std::move(buffer));
    }
    return Status::Ok();
  }

  Status Walk(const std::string& rel, std::vector<ObjectInfo>* out) {
    std::string dir = rel.empty() ? root_ : root_ + "/" + rel;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return Status::Ok();
      return ErrnoError("open directory", dir, errno);
    }
    std::unique_ptr<DIR, int (*)(DIR*)> guard(d, ::closedir);
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name.ends_with(".tmp")) continue;  // a WriteFileAtomic in progress
      std::string child = rel.empty() ? name : rel + "/" + name;
      struct stat st;
      if (::lstat((root_ + "/" + child).c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        XBAK_RETURN_IF_ERROR(Walk(child, out));
      } else if (S_ISREG(st.st_mode)) {
        out->push_back({child, static_cast<uint64_t>(st.st_size)});
      }
    }
    return Status::Ok();
  }

  Result<ListResult> DoList(const std::string& prefix, const std::string& token) {
    std::vector<ObjectInfo> all;
    XBAK_RETURN_IF_ERROR(Walk("", &all));
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    ListResult r;
    for (auto& o : all) {
      if (o.key.compare(0, prefix.size(), prefix) != 0 || (!token.empty() && o.key <= token)) continue;
      if (r.objects.size() == kPage) {
        r.next_token = r.objects.back().key;
        break;
      }
      r.objects.push_back(std::move(o));
    }
    return r;
  }

  static constexpr size_t kPage = 1000;
  EventLoop& loop_;
  const std::string root_;
  StoreStats stats_;
};

}  // namespace

std::unique_ptr<ObjectStore> MakePosixStore(EventLoop& loop, std::string root) {
  return std::make_unique<PosixStore>(loop, std::move(root));
}

}  // namespace xbak::storage
