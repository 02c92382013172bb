// The storage-driver interface behind which S3 and a local directory live
// (after pgBackRest's storage drivers): the cloud commands only ever talk to
// an ObjectStore, so their logic is tested on the posix driver and run on S3.
//
// Every operation is asynchronous: it starts at once and its callback runs
// later on the EventLoop thread, never inside the call. Drivers retry what is
// worth retrying (see each driver); a callback's error is final. Errors name
// the object and what the store answered, never a credential.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xbak/storage/md5.h"
#include "xbak/util/status.h"

namespace xbak::storage {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  // The object's MD5 when the listing tells it (S3: the ETag of an object
  // stored by one plain PUT without SSE-KMS/SSE-C is its MD5; a multipart
  // or encrypted object's is not, and is left out).
  std::optional<Md5Digest> md5;
  int64_t modified = 0;  // Unix time of its last write; 0: unknown
};

struct ListQuery {
  std::string prefix;
  std::string token;  // the previous page's next_token; empty: the first page
  // Group the keys that have a '/' after the prefix by their part up to it
  // (S3's delimiter "/"): one entry "prefix.../" in ListResult::prefixes
  // instead of every key below it. Lets a caller walk a bucket like a tree
  // without listing every object.
  bool delimit = false;
};

// Bytes [offset, offset + length) of an object.
struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct ListResult {
  std::vector<ObjectInfo> objects;
  std::vector<std::string> prefixes;  // with ListQuery::delimit, each ending in '/'
  std::string next_token;             // empty: this was the last page
};

struct StoreStats {
  uint64_t requests = 0;
  uint64_t retries = 0;
  uint64_t bytes_sent = 0;      // request bodies acknowledged by the store
  uint64_t bytes_received = 0;  // response bodies of GETs that succeeded
};

class ObjectStore {
 public:
  using Body = std::shared_ptr<const std::string>;
  virtual ~ObjectStore() = default;

  // Stores `body` under `key` (replacing it). The store checks `md5` against
  // what it received (S3: Content-MD5); a mismatch is retried from `body`.
  virtual void Put(const std::string& key, Body body, const Md5Digest& md5,
                   std::function<void(Status)> done) = 0;
  // Reads a whole object; kNotFound when it does not exist. `buffer` may be
  // a string from an earlier Get: its memory is reused for the body (reading
  // GiBs into fresh allocations costs a page fault per 4 KiB).
  virtual void Get(const std::string& key, std::function<void(Result<std::string>)> done,
                   std::string buffer = {}) = 0;
  // The first max_bytes bytes of an object, or all of it when it is
  // shorter (S3: one GET with a Range, whatever the object's size; an empty
  // object gives ""); kNotFound when it does not exist. For reading the
  // head of a file whose size is not known (list: each manifest's summary).
  virtual void GetFirst(const std::string& key, uint64_t max_bytes,
                        std::function<void(Result<std::string>)> done) = 0;
  // Reads `range` of an object (length > 0, inside the object) as it
  // arrives, in consecutive pieces of reader.piece_bytes (the last one
  // shorter): each piece is handed to reader.piece, on the loop, as soon as
  // it is complete, while the rest is still on the wire; reader.done runs
  // once, after the last piece or with the error. Lets a caller hash an
  // object as it downloads, with one request per object, and bound what it
  // holds per request.
  //
  // Pieces handed over are final: a transfer cut after some bytes resumes
  // from the first byte not received (S3: a Range from there, If-Match the
  // ETag first seen), so no piece is ever sent twice or changed. A store
  // that answers with another number of bytes, or not the bytes asked for,
  // is retried like a cut transfer, then reported as kCorrupt.
  struct RangeReader {
    uint64_t piece_bytes = uint64_t{1} << 20;
    // An empty string to fill (its capacity is reused), e.g. from a pool.
    std::function<std::string()> buffer = [] { return std::string(); };
    std::function<void(size_t index, std::string piece)> piece;
    std::function<void(Status)> done;
    // Flow control (optional): asked before the first piece and after each
    // piece handed over; false holds the transfer (the store reads no more
    // of it, TCP slows the sender) until ResumeHeld() finds it true again.
    // true lets it read one more piece at least (a driver may also have
    // part of the next one in hand).
    std::function<bool()> may_read;
  };
  virtual void GetRange(const std::string& key, ByteRange range, RangeReader reader) = 0;
  // Continues the held GetRange transfers whose may_read() is now true.
  virtual void ResumeHeld() {}
  // One page of the keys starting with query.prefix, in key order (with
  // delimit, objects and prefixes each in key order); pass the previous
  // page's next_token to continue.
  virtual void List(const ListQuery& query, std::function<void(Result<ListResult>)> done) = 0;
  // Deletes up to 1000 keys (absent keys are not an error).
  virtual void Delete(const std::vector<std::string>& keys, std::function<void(Status)> done) = 0;

  // Ends every request in flight or waiting for a retry: their callbacks run
  // soon (on the loop) with kCancelled. For a command that already failed and
  // must not wait out another request's retries.
  virtual void CancelAll() = 0;

  virtual StoreStats stats() const = 0;
  // What every object put gets beyond its bytes (S3: server-side
  // encryption, its key's MD5, storage class, Object Lock), as text: two
  // objects with the same bytes stored under other options are not the same
  // (a resumed put compares it). "" for none. No secret in it.
  virtual std::string ObjectOptions() const { return ""; }
  // For messages: "s3://bucket at https://host" or "directory /x" (no secrets).
  virtual std::string Describe() const = 0;
};

}  // namespace xbak::storage
