// One request of an HTTP object store (http_store.cc) across its retries,
// and the libcurl callbacks that move its bytes: the body sent, the answer
// and its headers received, a ranged GET's bytes handed to its reader in
// pieces. The same for every dialect (S3, Azure Blob, Google Cloud Storage):
// what differs between them is in http_dialect.h. Internal to the storage
// layer.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "xbak/storage/http_headers.h"
#include "xbak/storage/object_store.h"
#include "xbak/util/status.h"

namespace xbak::storage::http {

enum class Method { kGet, kPut, kPost, kDelete };

// What a request does for the ObjectStore interface (its method and URL are
// the dialect's: a Google upload is a POST, an S3 batch delete too).
enum class Op { kPut, kGet, kList, kDelete };

inline const char* MethodName(Method m) {
  switch (m) {
    case Method::kGet:
      return "GET";
    case Method::kPut:
      return "PUT";
    case Method::kPost:
      return "POST";
    case Method::kDelete:
      return "DELETE";
  }
  return "?";
}

using Done = std::variant<std::function<void(Status)>, std::function<void(Result<std::string>)>,
                          std::function<void(Result<ListResult>)>>;

// One logical request, kept across its retries. The body is shared with the
// caller's buffer: a retried PUT resends it from memory.
struct Request {
  Op op = Op::kGet;
  Method method = Method::kGet;
  std::string key;    // object key ("" for bucket-level requests)
  std::string name;   // for messages when there is no key: "ListObjectsV2", "List Blobs", ...
  std::string query;  // the dialect's query string, without '?' (S3: canonical, sorted and encoded)
  // Query parameters as name and value, not yet encoded (Azure and Google:
  // the dialect encodes them into the URL, and Azure signs them decoded).
  std::vector<std::pair<std::string, std::string>> params;
  ObjectStore::Body body;
  // Sent around the body without copying it (Google's multipart upload:
  // the metadata part before, the closing boundary after).
  std::string body_head, body_tail;
  Md5Digest md5{};           // a PUT's: what the store must have received
  std::string content_md5;   // base64, sent as Content-MD5 when non-empty
  std::string content_type;  // of the body sent ("": none)
  ByteRange range;           // GetRange: the bytes asked for (length 0: whole object)
  uint64_t first_bytes = 0;  // GetFirst: at most this many bytes from the start (0: not GetFirst)
  Done done;
  int attempt = 0;
  bool cancelled = false;  // by CancelAll: a pending retry must not start

  // GetRange, across attempts: the range arrives in pieces (the reader's
  // callbacks; reader.done is in `done`). `received` bytes of it are in,
  // the complete pieces handed over or in `ready`, the rest in `current`;
  // an attempt after a cut asks for the bytes from there on.
  ObjectStore::RangeReader reader;
  uint64_t received = 0;
  size_t next_piece = 0;
  std::string current;
  std::vector<std::pair<size_t, std::string>> ready;  // complete, not yet handed over
  std::string first_version;     // of the first answer with a body: its ETag (Google: its generation)
  std::string first_etag;        // that answer's ETag as sent (for If-Match)
  std::string first_generation;  // and its x-goog-generation, if it had one
  bool held = false;             // the reader cannot take more yet (RangeReader::may_read)

  // Per attempt:
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  size_t sent = 0;
  std::string response;
  std::string etag;           // normalized (http_headers.h), for comparing
  std::string etag_raw;       // as sent, for If-Match
  std::string answer_md5;     // Content-MD5 of the answer (Azure: what it stored), base64
  std::string generation;     // x-goog-generation (Google's object version)
  bool overlong = false;      // GetRange: the store sent more than the range
  bool checked = false;       // GetRange: this answer's status and Content-Range were checked
  bool paused = false;        // GetRange: WriteResponse paused the transfer (CURL_WRITEFUNC_PAUSE)
  bool asked_first = false;   // GetRange: may_read was asked before the body's first byte
  bool body_is_data = false;  // GetRange: the answer is the bytes asked for (else an error body)
  std::string wrong_answer;   // GetRange: why the answer is not the bytes asked for
  std::optional<ContentRange> content_range;  // GetRange: of this answer, if valid
  char curl_error[CURL_ERROR_SIZE] = {};

  ~Request() { Reset(); }
  void Reset() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (headers != nullptr) curl_slist_free_all(headers);
    easy = nullptr;
    headers = nullptr;
    sent = 0;
    response.clear();
    etag.clear();
    etag_raw.clear();
    answer_md5.clear();
    generation.clear();
    overlong = false;
    checked = false;
    paused = false;
    body_is_data = false;
    wrong_answer.clear();
    content_range.reset();
    curl_error[0] = '\0';
  }
  bool ranged() const { return range.length > 0; }
  // What a PUT or POST sends: body_head, the body, body_tail.
  size_t BodySize() const { return body_head.size() + (body ? body->size() : 0) + body_tail.size(); }
  // This answer's version of the object: Google's generation, else its ETag.
  const std::string& version() const { return generation.empty() ? etag : generation; }
  // The Range this attempt asks for, as "FIRST-LAST" ("" for none).
  std::string RangeSpec() const {
    if (ranged()) return std::to_string(want()) + "-" + std::to_string(last());
    if (first_bytes > 0) return "0-" + std::to_string(first_bytes - 1);
    return "";
  }
  // A resumed transfer must continue the version it started on.
  bool resuming() const { return ranged() && received > 0 && !first_version.empty(); }
  // The first byte this attempt asks for, and the range's last byte.
  uint64_t want() const { return range.offset + received; }
  uint64_t last() const { return range.offset + range.length - 1; }
  std::string What() const {
    if (!key.empty()) return std::string(MethodName(method)) + " " + key;
    return name;
  }
};

// libcurl's callbacks; `userp` is the Request.
size_t ReadBody(char* dst, size_t size, size_t nitems, void* userp);       // CURLOPT_READFUNCTION
int SeekBody(void* userp, curl_off_t offset, int origin);                  // CURLOPT_SEEKFUNCTION
size_t WriteResponse(char* data, size_t size, size_t nmemb, void* userp);  // CURLOPT_WRITEFUNCTION
size_t ReadHeader(char* data, size_t size, size_t nitems, void* userp);    // CURLOPT_HEADERFUNCTION

}  // namespace xbak::storage::http
