#include "xbak/storage/posix_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>

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

  void GetFirst(const std::string& key, uint64_t max_bytes,
                std::function<void(Result<std::string>)> done) override {
    Result<std::string> r = DoGet(key);
    if (r.ok() && r->size() > max_bytes) r->resize(static_cast<size_t>(max_bytes));
    if (r.ok()) stats_.bytes_received += r->size();
    Finish([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  }

  // Reads the range piece by piece, each through the loop as the S3 driver
  // hands them over, and like it asks may_read before each piece (holding
  // the read until ResumeHeld finds it true), so that a reader's flow
  // control can be tested without a server.
  void GetRange(const std::string& key, ByteRange range, RangeReader reader) override {
    auto r = std::make_shared<RangeRead>();
    r->key = key;
    r->range = range;
    r->reader = std::move(reader);
    r->generation = generation_;
    Status s = OpenRange(*r);
    if (!s.ok()) return Finish([done = std::move(r->reader.done), s = std::move(s)]() mutable { done(s); });
    loop_.Post([this, r] { Continue(r); });
  }

  void ResumeHeld() override {
    std::vector<std::shared_ptr<RangeRead>> go;
    std::erase_if(held_, [&](const std::shared_ptr<RangeRead>& r) {
      if (!r->reader.may_read()) return false;
      go.push_back(r);
      return true;
    });
    for (auto& r : go) loop_.Post([this, r] { Continue(r); });
  }

  void List(const ListQuery& q, std::function<void(Result<ListResult>)> done) override {
    Result<ListResult> r = DoList(q);
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

  // Every other operation already completed when it was called; range reads
  // still going end with kCancelled.
  void CancelAll() override {
    generation_++;
    for (auto& r : held_) loop_.Post([this, r] { Continue(r); });
    held_.clear();
  }

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
    XBAK_RETURN_IF_ERROR(util::MakeDirs(path.substr(0, path.rfind('/'))));
    return util::WriteFileAtomic(path, body);
  }

  // The object's file, opened for reading; kNotFound when there is none.
  Result<util::File> OpenObject(const std::string& key) {
    if (!SafeKey(key)) return Error(ErrorCode::kInvalidArgument, "unsafe object key '" + key + "'");
    auto f = util::File::OpenRead(root_ + "/" + key);
    if (!f.ok() && f.status().code() == ErrorCode::kNotFound)
      return Error(ErrorCode::kNotFound, "object " + key + " not found in " + root_);
    return f;
  }

  Result<std::string> DoGet(const std::string& key) {
    XBAK_ASSIGN_OR_RETURN(util::File f, OpenObject(key));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, f.Size());
    std::string body(static_cast<size_t>(size), '\0');
    XBAK_ASSIGN_OR_RETURN(size_t n, f.PRead(body.data(), body.size(), 0));
    if (n != body.size()) return Error(ErrorCode::kCorrupt, "object " + key + " shrank while it was read");
    return body;
  }

  struct RangeRead {
    std::string key;
    ByteRange range;
    RangeReader reader;
    std::optional<util::File> file;
    uint64_t at = 0;  // bytes of the range handed over
    size_t index = 0;
    uint64_t generation = 0;  // CancelAll ends the reads of earlier generations
  };

  Status OpenRange(RangeRead& r) {
    if (r.reader.piece_bytes == 0)
      return Error(ErrorCode::kInvalidArgument, "GET " + r.key + ": no piece size");
    XBAK_ASSIGN_OR_RETURN(util::File f, OpenObject(r.key));
    r.file.emplace(std::move(f));
    XBAK_ASSIGN_OR_RETURN(uint64_t size, r.file->Size());
    if (r.range.length == 0 || r.range.offset > size || r.range.length > size - r.range.offset) {
      return Error(ErrorCode::kCorrupt, "object " + r.key + " has " + std::to_string(size) +
                                            " bytes, not the range " + std::to_string(r.range.offset) + "+" +
                                            std::to_string(r.range.length) + " asked for");
    }
    return Status::Ok();
  }

  // Hands over the next piece of a range read (on the loop), or ends it.
  void Continue(const std::shared_ptr<RangeRead>& r) {
    auto end = [&](Status s) { Finish([done = std::move(r->reader.done), s]() mutable { done(s); }); };
    if (r->generation != generation_)
      return end(Error(ErrorCode::kCancelled, "GET " + r->key + " cancelled"));
    if (r->at == r->range.length) return end(Status::Ok());
    if (r->reader.may_read && !r->reader.may_read()) {
      held_.push_back(r);
      return;
    }
    std::string buffer = r->reader.buffer();
    buffer.resize(static_cast<size_t>(std::min(r->reader.piece_bytes, r->range.length - r->at)));
    auto n = r->file->PRead(buffer.data(), buffer.size(), r->range.offset + r->at);
    if (!n.ok()) return end(n.status());
    if (*n != buffer.size())
      return end(Error(ErrorCode::kCorrupt, "object " + r->key + " shrank while it was read"));
    r->at += buffer.size();
    stats_.bytes_received += buffer.size();
    r->reader.piece(r->index++, std::move(buffer));
    loop_.Post([this, r] { Continue(r); });
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
        out->push_back({child, static_cast<uint64_t>(st.st_size), std::nullopt, st.st_mtim.tv_sec});
      }
    }
    return Status::Ok();
  }

  // Like S3: keys (or, with delimit, their groups) in order, a page at a
  // time, each object with its MD5 (read from the file: this driver is for
  // tests and small stores) and modification time.
  Result<ListResult> DoList(const ListQuery& q) {
    std::vector<ObjectInfo> all;
    XBAK_RETURN_IF_ERROR(Walk("", &all));
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
    ListResult r;
    size_t entries = 0;
    for (auto& o : all) {
      if (o.key.compare(0, q.prefix.size(), q.prefix) != 0) continue;
      size_t slash = q.delimit ? o.key.find('/', q.prefix.size()) : std::string::npos;
      std::string group = slash == std::string::npos ? std::string() : o.key.substr(0, slash + 1);
      const std::string& entry = group.empty() ? o.key : group;
      if (!q.token.empty() && entry <= q.token) continue;
      if (!group.empty() && !r.prefixes.empty() && r.prefixes.back() == group) continue;
      if (entries == kPage) {
        r.next_token = std::max(r.objects.empty() ? std::string() : r.objects.back().key,
                                r.prefixes.empty() ? std::string() : r.prefixes.back());
        break;
      }
      entries++;
      if (!group.empty()) {
        r.prefixes.push_back(std::move(group));
        continue;
      }
      XBAK_ASSIGN_OR_RETURN(std::string body, DoGet(o.key));
      o.md5 = Md5(body);
      r.objects.push_back(std::move(o));
    }
    return r;
  }

  static constexpr size_t kPage = 1000;
  EventLoop& loop_;
  std::vector<std::shared_ptr<RangeRead>> held_;  // range reads waiting for may_read
  uint64_t generation_ = 0;
  const std::string root_;
  StoreStats stats_;
};

}  // namespace

std::unique_ptr<ObjectStore> MakePosixStore(EventLoop& loop, std::string root) {
  return std::make_unique<PosixStore>(loop, std::move(root));
}

}  // namespace xbak::storage
