#include "http_request.h"

#include <strings.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace xbak::storage::http {
size_t ReadBody(char* dst, size_t size, size_t nitems, void* userp) {
  auto* r = static_cast<Request*>(userp);
  const std::string_view parts[] = {r->body_head, r->body ? std::string_view(*r->body) : std::string_view(),
                                    r->body_tail};
  size_t want = size * nitems, done = 0, at = 0;
  for (std::string_view part : parts) {
    if (r->sent < at + part.size() && done < want) {
      size_t from = r->sent - at, n = std::min(want - done, part.size() - from);
      std::copy_n(part.data() + from, n, dst + done);
      done += n;
      r->sent += n;
    }
    at += part.size();
  }
  return done;
}

int SeekBody(void* userp, curl_off_t offset, int origin) {
  auto* r = static_cast<Request*>(userp);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > r->BodySize())
    return CURL_SEEKFUNC_FAIL;
  r->sent = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

namespace {

// GetRange: the first body bytes of an attempt. Are they the bytes asked
// for? (A store that ignores Range answers 200 with the object from byte 0;
// one whose object changed since the first attempt has another ETag.)
void CheckRangeAnswer(Request* r) {
  r->checked = true;
  long http = 0;
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &http);
  if (http < 200 || http >= 300) return;  // an error body, classified in OnDone
  r->body_is_data = true;
  if (http == 206 && !r->content_range) {
    r->wrong_answer = "answered 206 without a valid Content-Range";
  } else if (http == 206 && (r->content_range->first != r->want() || r->content_range->last > r->last())) {
    // (Less than asked is taken: the rest is asked for again.)
    r->wrong_answer = "answered bytes " + std::to_string(r->content_range->first) + "-" +
                      std::to_string(r->content_range->last);
  } else if (http != 206 && r->want() != 0) {
    r->wrong_answer = "ignored the range (HTTP " + std::to_string(http) + ")";
  } else if (!r->first_version.empty() && !r->version().empty() && r->version() != r->first_version) {
    r->wrong_answer = "sent another version of the object (" +
                      std::string(r->generation.empty() ? "ETag" : "generation") + " " + r->version() +
                      ", first " + r->first_version + ")";
  }
  if (r->first_version.empty()) {
    r->first_version = r->version();
    r->first_etag = r->etag_raw;
    r->first_generation = r->generation;
  }
}

size_t WriteRangePieces(const char* data, size_t n, Request* r) {
  if (!r->checked) CheckRangeAnswer(r);
  if (!r->body_is_data) {
    // An error document: kept (bounded) for the message.
    if (r->response.size() < (64u << 10)) r->response.append(data, std::min<size_t>(n, 64u << 10));
    return n;
  }
  if (!r->wrong_answer.empty()) return 0;  // 0 aborts the transfer
  // Flow control: nothing more while a complete piece waits to be handed
  // over (that happens outside libcurl's callbacks, which then decide
  // whether to go on), or while the reader cannot take more. libcurl keeps
  // `data` and passes it again on resume. (Checking only after a whole
  // socket read would not bound anything: libcurl reads up to 100 buffers
  // in one go.)
  // The first bytes of the body wait until the reader may take them (a
  // get starting many transfers at once would otherwise take a piece of
  // each before any could be held).
  if (r->received == 0 && r->current.empty() && !r->asked_first && r->reader.may_read) {
    r->asked_first = true;
    r->held = !r->reader.may_read();
  }
  if (r->held || !r->ready.empty()) {
    r->paused = true;
    return CURL_WRITEFUNC_PAUSE;
  }
  // A store that ignores Range (or a hostile one) could send a whole large
  // object: stop at once instead of buffering it.
  if (n > r->range.length - r->received) {
    r->overlong = true;
    return 0;
  }
  const uint64_t piece_bytes = r->reader.piece_bytes;
  for (size_t at = 0; at < n;) {
    size_t piece_len =
        static_cast<size_t>(std::min(piece_bytes, r->range.length - r->next_piece * piece_bytes));
    if (r->current.empty()) {
      r->current = r->reader.buffer();
      r->current.clear();
      r->current.reserve(piece_len);
    }
    size_t take = std::min(n - at, piece_len - r->current.size());
    r->current.append(data + at, take);
    at += take;
    r->received += take;
    if (r->current.size() == piece_len) {
      r->ready.emplace_back(r->next_piece++, std::move(r->current));
      r->current = std::string();
    }
  }
  return n;
}

}  // namespace

size_t WriteResponse(char* data, size_t size, size_t nmemb, void* userp) {
  auto* r = static_cast<Request*>(userp);
  size_t n = size * nmemb;
  if (r->ranged()) return WriteRangePieces(data, n, r);
  r->response.append(data, n);
  return n;
}

namespace {

// The value of header `name` ("content-length:") if `line` is that header.
bool HeaderValue(std::string_view line, std::string_view name, std::string* value) {
  if (line.size() <= name.size() || strncasecmp(line.data(), name.data(), name.size()) != 0) return false;
  *value = std::string(line.substr(name.size()));
  return true;
}

}  // namespace

size_t ReadHeader(char* data, size_t size, size_t nitems, void* userp) {
  auto* r = static_cast<Request*>(userp);
  std::string_view line(data, size * nitems);
  std::string v;
  if (HeaderValue(line, "content-length:", &v)) {
    // Size the body buffer once instead of growing it by doubling (copies).
    // (A range goes into pieces; its response holds at most an error document.)
    unsigned long long n = std::strtoull(v.c_str(), nullptr, 10);
    if (n > 0 && n <= (1ULL << 31) && r->op != Op::kPut && !r->ranged())
      r->response.reserve(static_cast<size_t>(n));
  } else if (HeaderValue(line, "content-range:", &v)) {
    r->content_range = ParseContentRange(v);
  } else if (HeaderValue(line, "etag:", &v)) {
    r->etag = NormalizeEtag(v);
    r->etag_raw = std::string(TrimHeaderValue(v));
  } else if (HeaderValue(line, "content-md5:", &v)) {
    r->answer_md5 = std::string(TrimHeaderValue(v));
  } else if (HeaderValue(line, "x-goog-generation:", &v)) {
    r->generation = std::string(TrimHeaderValue(v));
  }
  return size * nitems;
}

}  // namespace xbak::storage::http
