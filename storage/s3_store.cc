#include "xbak/storage/s3_store.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <variant>

#include "s3_address.h"
#include "s3_object_options.h"
#include "s3_request.h"
#include "xbak/storage/http_headers.h"
#include "xbak/storage/s3_xml.h"
#include "xbak/storage/sigv4.h"

namespace xbak::storage {

namespace {

using namespace s3;  // Request and its libcurl callbacks

// The SHA-256 of an empty body, which SigV4 wants in x-amz-content-sha256 for
// requests without one.
constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

class S3Store final : public ObjectStore {
 public:
  S3Store(EventLoop& loop, S3Config config, std::string base_url, std::string path_prefix)
      : loop_(loop),
        config_(std::move(config)),
        base_url_(std::move(base_url)),
        path_prefix_(std::move(path_prefix)),
        host_(base_url_.substr(base_url_.find("://") + 3)),
        rng_(std::random_device{}()) {
    multi_ = curl_multi_init();
    if (multi_ == nullptr) throw std::runtime_error("libcurl: curl_multi_init failed");
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &S3Store::OnCurlSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &S3Store::OnCurlTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    ev_timer_init(&timer_, &S3Store::OnEvTimer, 0., 0.);
    timer_.data = this;
  }

  ~S3Store() override {
    ev_timer_stop(loop_.raw(), &timer_);
    for (auto& [easy, req] : active_) curl_multi_remove_handle(multi_, easy);
    active_.clear();
    for (auto& [fd, w] : sockets_) ev_io_stop(loop_.raw(), &w->io);
    sockets_.clear();
    curl_multi_cleanup(multi_);
  }

  void Put(const std::string& key, Body body, const Md5Digest& md5,
           std::function<void(Status)> done) override {
    auto r = std::make_shared<Request>();
    r->method = Method::kPut;
    r->key = key;
    r->body = std::move(body);
    r->content_md5 = Md5Base64(md5);
    if (s3::EtagIsMd5(config_)) r->expect_etag = Md5Hex(md5);
    r->done = std::move(done);
    Start(std::move(r));
  }

  void Get(const std::string& key, std::function<void(Result<std::string>)> done,
           std::string buffer) override {
    auto r = std::make_shared<Request>();
    r->method = Method::kGet;
    r->key = key;
    buffer.clear();
    r->response = std::move(buffer);
    r->done = std::move(done);
    Start(std::move(r));
  }

  void GetFirst(const std::string& key, uint64_t max_bytes,
                std::function<void(Result<std::string>)> done) override {
    auto r = std::make_shared<Request>();
    r->method = Method::kGet;
    r->key = key;
    r->first_bytes = std::max<uint64_t>(max_bytes, 1);
    r->done = std::move(done);
    Start(std::move(r));
  }

  void GetRange(const std::string& key, ByteRange range, RangeReader reader) override {
    auto r = std::make_shared<Request>();
    r->method = Method::kGet;
    r->key = key;
    r->range = range;
    r->done = std::move(reader.done);
    r->reader = std::move(reader);
    if (range.length == 0 || r->reader.piece_bytes == 0) {
      Status s = Error(ErrorCode::kInvalidArgument, "GET " + key + ": empty range or pieces");
      loop_.After(0, [this, r, s] { Finish(*r, s, {}); });
      return;
    }
    Start(std::move(r));
  }

  void List(const ListQuery& q, std::function<void(Result<ListResult>)> done) override {
    auto r = std::make_shared<Request>();
    r->method = Method::kGet;
    // Parameters in canonical order (sorted by name), values encoded once.
    if (!q.token.empty()) r->query = "continuation-token=" + UriEncode(q.token, false) + "&";
    if (q.delimit) r->query += "delimiter=%2F&";
    r->query += "list-type=2&prefix=" + UriEncode(q.prefix, false);
    r->done = std::move(done);
    Start(std::move(r));
  }

  void Delete(const std::vector<std::string>& keys, std::function<void(Status)> done) override {
    auto r = std::make_shared<Request>();
    r->method = Method::kPost;
    r->query = "delete=";
    auto xml = std::make_shared<std::string>(BuildDeleteRequest(keys));
    r->content_md5 = Md5Base64(Md5(*xml));
    r->body = std::move(xml);
    r->done = std::move(done);
    Start(std::move(r));
  }

  void CancelAll() override {
    std::vector<std::shared_ptr<Request>> victims;
    for (auto& [easy, r] : active_) {
      curl_multi_remove_handle(multi_, easy);
      victims.push_back(r);
    }
    active_.clear();
    for (auto& r : waiting_) victims.push_back(r);
    waiting_.clear();
    Status cancelled = Error(ErrorCode::kCancelled, "cancelled");
    for (auto& r : victims) {
      r->cancelled = true;
      loop_.After(0, [this, r, cancelled] { Finish(*r, cancelled, {}); });
    }
  }

  void ResumeHeld() override {
    std::vector<std::shared_ptr<Request>> go;
    for (auto& [easy, r] : active_) {
      if (r->held && r->reader.may_read()) go.push_back(r);
    }
    for (auto& r : go) DeliverPieces(*r);
  }

  StoreStats stats() const override { return stats_; }
  std::string ObjectOptions() const override { return s3::ObjectOptionsText(config_); }
  std::string Describe() const override { return "s3://" + config_.bucket + " at " + config_.endpoint; }

 private:
  struct SocketWatch {
    ev_io io;
    S3Store* self;
  };

  // --- request lifecycle --------------------------------------------------

  void Start(std::shared_ptr<Request> r) {
    r->Reset();
    if (r->held && r->reader.may_read()) r->held = false;  // it may have been resumed while it waited
    Status s = Setup(*r);
    if (!s.ok()) {
      // Never complete inside the caller's call (the interface promises it).
      loop_.After(0, [this, r, s] { Finish(*r, s, {}); });
      return;
    }
    stats_.requests++;
    CURL* easy = r->easy;
    active_.emplace(easy, std::move(r));
    CURLMcode mc = curl_multi_add_handle(multi_, easy);
    if (mc != CURLM_OK) {
      auto node = active_.extract(easy);
      auto req = std::move(node.mapped());
      Status err = Error(ErrorCode::kInternal, std::string("libcurl: ") + curl_multi_strerror(mc));
      loop_.After(0, [this, req, err] { Finish(*req, err, {}); });
    }
  }

  // Protocols, timeouts and TLS: the same for every request.
  void SetConnection(CURL* e) const {
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, config_.connect_timeout_s);
    // A transfer that moves less than 1 byte/s for stall_timeout_s is a stall.
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, config_.stall_timeout_s);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (config_.insecure) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (!config_.cacert.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, config_.cacert.c_str());
  }

  // The body of a PUT (from its buffer, rewound on a retry) or POST.
  template <typename Sign>
  static void SetBody(Request& r, CURL* e, Sign&& sign) {
    switch (r.method) {
      case Method::kGet:
        break;
      case Method::kPut:
        // The body is not hashed for the signature (it is already covered by
        // Content-MD5, which the server checks): hashing 10 MiB twice would
        // cost more CPU than the upload itself.
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_READFUNCTION, &ReadBody);
        curl_easy_setopt(e, CURLOPT_READDATA, &r);
        curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, &SeekBody);
        curl_easy_setopt(e, CURLOPT_SEEKDATA, &r);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body->size()));
        break;
      case Method::kPost:
        sign("Content-Type: application/xml");
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body->data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body->size()));
        break;
    }
  }

  Status Setup(Request& r) {
    r.easy = curl_easy_init();
    if (r.easy == nullptr) return Error(ErrorCode::kInternal, "libcurl: curl_easy_init failed");
    CURL* e = r.easy;
    std::string url = base_url_ + path_prefix_ + UriEncode(r.key, true);
    if (!r.query.empty()) url += "?" + r.query;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r.curl_error);
    SetConnection(e);
    // Renewed here when they are about to expire (a long put outlives
    // temporary credentials).
    const int64_t now = static_cast<int64_t>(::time(nullptr));
    XBAK_ASSIGN_OR_RETURN(AwsCredentials keys, config_.credentials->Get(now));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &WriteResponse);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &ReadHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &r);

    auto add = [&r](const std::string& h) { r.headers = curl_slist_append(r.headers, h.c_str()); };
    // Headers that go into the signature (sigv4.h) as well.
    std::vector<std::pair<std::string, std::string>> signed_headers;
    auto sign = [&](const std::string& h) {
      const size_t colon = h.find(':');
      signed_headers.emplace_back(h.substr(0, colon), h.substr(colon + 2));
      add(h);
    };
    sign("Host: " + host_);
    // No "Expect: 100-continue" round trip: the body is in memory and a
    // rejected PUT is cheap to resend. (Not by the usual empty "Expect:"
    // header: curl 7.88 would sign that header and then not send it, and the
    // server would reject the signature.)
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
    if (!keys.session_token.empty()) sign("x-amz-security-token: " + keys.session_token);
    if (!r.content_md5.empty()) sign("Content-MD5: " + r.content_md5);
    if (!r.key.empty()) {  // an object's PUT or GET: its storage class, encryption, lock
      for (const auto& h : r.method == Method::kPut ? s3::PutHeaders(config_) : s3::GetHeaders(config_))
        sign(h);
    }
    const char* payload = r.method == Method::kGet ? kEmptySha256 : "UNSIGNED-PAYLOAD";
    sign(std::string("x-amz-content-sha256: ") + payload);
    SetBody(r, e, sign);
    if (r.ranged()) {
      // Set through CURLOPT_RANGE, not as a header: the SigV4 signature
      // then covers the same headers as a whole-object GET.
      std::string spec = std::to_string(r.want()) + "-" + std::to_string(r.last());
      curl_easy_setopt(e, CURLOPT_RANGE, spec.c_str());  // curl copies the string
      // A resumed transfer must continue the same object: a store whose
      // object was replaced since answers 412 instead.
      if (r.received > 0 && !r.first_etag.empty()) add("If-Match: \"" + r.first_etag + "\"");
    }
    if (r.first_bytes > 0) {
      // 206 with up to that many bytes, or the whole of a shorter object.
      curl_easy_setopt(e, CURLOPT_RANGE, ("0-" + std::to_string(r.first_bytes - 1)).c_str());
    }
    SigV4Input in{MethodName(r.method), path_prefix_ + UriEncode(r.key, true), r.query,
                  std::move(signed_headers), payload};
    for (const auto& h : SignV4(in, {keys.access_key, keys.secret_key, config_.region, "s3"}, now)) add(h);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r.headers);
    return Status::Ok();
  }

  // What a finished attempt came to: success (err ok), a final error, or an
  // error worth another attempt (retry).
  struct Outcome {
    Status err;
    bool retry = false;
  };

  // Ends a finished attempt: success, another attempt after a wait, or the
  // final error (naming the attempts when it was worth retrying).
  void OnDone(std::shared_ptr<Request> r, CURLcode cc) {
    long http = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &http);
    DeliverPieces(*r, false);  // what arrived complete before the end or the cut
    if (r->first_bytes > 0 && cc == CURLE_OK && http == 416) {
      // Range not satisfiable: the object is empty.
      r->response.clear();
      return Succeed(*r);
    }
    if (r->first_bytes > 0 && cc == CURLE_OK && http / 100 == 2 && r->response.size() > r->first_bytes) {
      r->response.resize(r->first_bytes);  // a store that ignored the Range
    }
    Outcome o = Classify(*r, cc, http);
    if (o.err.ok()) return Succeed(*r);
    if (o.retry && r->attempt < config_.max_retries) return RetryLater(std::move(r));
    Status err = o.err;
    if (o.retry)
      err = Status(err.code(),
                   err.message() + " (gave up after " + std::to_string(r->attempt + 1) + " attempts)");
    Finish(*r, err, {});
  }

  // The checks in the order they take precedence: a ranged GET's bytes
  // first (whatever the transfer's end), then libcurl's verdict, then HTTP's.
  Outcome Classify(const Request& r, CURLcode cc, long http) const {
    if (r.ranged() && (r.overlong || !r.wrong_answer.empty())) {
      return {Error(ErrorCode::kCorrupt, r.What() + ": asked for bytes " + std::to_string(r.want()) + "-" +
                                             std::to_string(r.last()) + ", the store " +
                                             (r.overlong ? std::string("sent more") : r.wrong_answer)),
              true};
    }
    if (r.ranged() && cc == CURLE_OK && http >= 200 && http < 300 && r.received != r.range.length) {
      // A cut transfer is CURLE_PARTIAL_FILE below; this answer said it was
      // complete. Resumed like a cut one.
      return {Error(ErrorCode::kCorrupt, r.What() + ": asked for " + std::to_string(r.range.length) +
                                             " bytes from " + std::to_string(r.range.offset) +
                                             ", the store sent " + std::to_string(r.received)),
              true};
    }
    if (cc != CURLE_OK) return TransferFailed(r, cc);
    if (http >= 200 && http < 300) return Answered(r);
    return HttpFailed(r, http);
  }

  // No HTTP answer: a wrong endpoint or an untrusted certificate is final,
  // anything else may pass.
  Outcome TransferFailed(const Request& r, CURLcode cc) const {
    std::string detail = r.curl_error[0] != '\0' ? r.curl_error : curl_easy_strerror(cc);
    switch (cc) {
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CACERT_BADFILE:
        return {Error(ErrorCode::kInvalidArgument, "TLS certificate of " + config_.endpoint +
                                                       " not trusted (" + detail +
                                                       "); give its CA with --cacert=FILE, or --insecure")};
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_UNSUPPORTED_PROTOCOL:
      case CURLE_URL_MALFORMAT:
        return {Error(ErrorCode::kInvalidArgument, "cannot reach " + config_.endpoint + ": " + detail)};
      default:  // refused, reset, timed out, stalled, TLS handshake cut ...
        return {Error(ErrorCode::kIo, "cannot reach " + config_.endpoint + ": " + detail), true};
    }
  }

  // A 2xx answer: a PUT's ETag must be the MD5 of what was sent.
  Outcome Answered(const Request& r) const {
    if (r.method == Method::kPut && !r.expect_etag.empty() && r.etag != r.expect_etag) {
      // The server stored something else than we sent (or a proxy mangled it).
      return {Error(ErrorCode::kCorrupt, r.What() + ": the store answered ETag " + r.etag +
                                             ", not the MD5 of what was sent (" + r.expect_etag + ")"),
              true};
    }
    // GET bodies are not checked against their ETag here: the caller
    // knows the MD5 it expects (xbcloud's manifest) and checks it once;
    // hashing every body twice was a third of get's CPU.
    return {Status::Ok()};
  }

  // Any other answer: the store's error body says more, and whether it is
  // worth another attempt.
  Outcome HttpFailed(const Request& r, long http) const {
    S3ErrorBody body = ParseErrorBody(r.response);
    std::string what = r.What() + ": HTTP " + std::to_string(http);
    if (!body.code.empty()) what += " " + body.code;
    if (!body.message.empty()) what += ": " + body.message;
    if (http >= 500 || http == 408 || http == 429 || body.code == "SlowDown" ||
        body.code == "RequestTimeout" || body.code == "BadDigest" || body.code == "InternalError" ||
        body.code == "RequestTimeTooSkewed") {
      return {Error(ErrorCode::kIo, what), true};
    }
    if (http == 404) {
      return {Error(body.code == "NoSuchBucket" ? ErrorCode::kInvalidArgument : ErrorCode::kNotFound,
                    body.code == "NoSuchBucket" ? "bucket '" + config_.bucket + "' does not exist at " +
                                                      config_.endpoint + " (" + what + ")"
                                                : what)};
    }
    if (http == 412 && r.ranged()) {
      return {Error(ErrorCode::kCorrupt, what + " (the object was replaced while it was read)")};
    }
    if (http == 400 && body.message.find("Server Side Encryption") != std::string::npos) {
      return {Error(ErrorCode::kUnreadable, what + " (an SSE-C backup: give its key, --s3-sse-c-key-file)")};
    }
    if (http == 403 && body.code == "InvalidObjectState") {
      return {Error(ErrorCode::kUnreadable,
                    what + " (an archived object: restore it from its storage class first)")};
    }
    if (http == 403 || http == 401) {
      return {Error(ErrorCode::kInvalidArgument, what + " (check the access key, secret key and region)")};
    }
    return {Error(ErrorCode::kServer, what)};
  }

  // The wait doubles with each attempt, up to backoff_max_s.
  void RetryLater(std::shared_ptr<Request> r) {
    r->attempt++;
    stats_.retries++;
    double cap = std::min(config_.backoff_max_s, config_.backoff_initial_s * std::pow(2.0, r->attempt - 1));
    // Equal jitter (a wait drawn from [cap/2, cap]): concurrent requests
    // failing together do not retry together, and none retries at once.
    double delay = std::uniform_real_distribution<double>(cap / 2, cap)(rng_);
    r->Reset();
    waiting_.insert(r);
    loop_.After(delay, [this, r] {
      waiting_.erase(r);
      if (!r->cancelled) Start(r);
    });
  }

  void Succeed(Request& r) {
    if (r.method == Method::kPut) stats_.bytes_sent += r.body->size();
    if (r.method == Method::kGet && r.query.empty())
      stats_.bytes_received += r.ranged() ? r.range.length : r.response.size();
    Finish(r, Status::Ok(), std::move(r.response));
  }

  // Runs the caller's callback with the final outcome.
  void Finish(Request& r, const Status& s, std::string response) {
    if (auto* f = std::get_if<std::function<void(Status)>>(&r.done)) {
      if (s.ok() && r.method == Method::kPost) {  // DeleteObjects: per-key failures in a 200
        auto failures = ParseDeleteResult(response);
        if (!failures.ok()) return (*f)(failures.status().With("DeleteObjects response"));
        if (!failures->empty()) {
          const auto& d = failures->front();
          return (*f)(Error(ErrorCode::kServer, "delete " + d.key + ": " + d.code + ": " + d.message +
                                                    " (and " + std::to_string(failures->size() - 1) +
                                                    " more)"));
        }
      }
      (*f)(s);
    } else if (auto* g = std::get_if<std::function<void(Result<std::string>)>>(&r.done)) {
      if (s.ok()) {
        (*g)(std::move(response));
      } else {
        (*g)(s);
      }
    } else if (auto* l = std::get_if<std::function<void(Result<ListResult>)>>(&r.done)) {
      if (!s.ok()) return (*l)(s);
      auto page = ParseListObjectsV2(response);
      if (!page.ok()) return (*l)(page.status().With("ListObjectsV2 response from " + config_.endpoint));
      (*l)(ListResultFrom(std::move(*page)));
    }
  }

  // GetRange: hands the pieces completed by the last transfers to their
  // readers. Runs outside libcurl's callbacks (a reader may start requests,
  // which libcurl refuses from inside one).
  void DeliverPieces(Request& r, bool running = true) {
    for (;;) {
      auto pieces = std::move(r.ready);
      r.ready.clear();
      for (auto& [index, piece] : pieces) {
        if (r.cancelled) return;
        r.reader.piece(index, std::move(piece));
      }
      if (r.cancelled || !running) return;
      r.held = r.reader.may_read && r.received < r.range.length && !r.reader.may_read();
      if (!r.paused || r.held) return;
      r.paused = false;
      // May pass the data it kept to WriteResponse at once (completing
      // another piece); libcurl then wakes the transfer through its timer.
      curl_easy_pause(r.easy, CURLPAUSE_CONT);
      if (r.ready.empty()) return;
    }
  }
  void DeliverAllPieces() {
    std::vector<std::shared_ptr<Request>> with;
    for (auto& [easy, r] : active_) {
      if (!r->ready.empty()) with.push_back(r);
    }
    for (auto& r : with) DeliverPieces(*r);
  }

  // --- libcurl multi <-> libev glue ----------------------------------------

  void Drain() {
    int pending = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &pending)) {
      if (m->msg != CURLMSG_DONE) continue;
      CURL* easy = m->easy_handle;
      CURLcode cc = m->data.result;
      curl_multi_remove_handle(multi_, easy);
      auto node = active_.extract(easy);
      if (node.empty()) continue;
      OnDone(std::move(node.mapped()), cc);
    }
  }

  static int OnCurlSocket(CURL*, curl_socket_t fd, int what, void* userp, void* socketp) {
    auto* self = static_cast<S3Store*>(userp);
    auto* w = static_cast<SocketWatch*>(socketp);
    if (what == CURL_POLL_REMOVE) {
      if (w != nullptr) {
        ev_io_stop(self->loop_.raw(), &w->io);
        self->sockets_.erase(fd);
      }
      return 0;
    }
    if (w == nullptr) {
      auto owned = std::make_unique<SocketWatch>();
      w = owned.get();
      w->self = self;
      ev_init(&w->io, &S3Store::OnEvIo);
      w->io.data = w;
      self->sockets_[fd] = std::move(owned);
      curl_multi_assign(self->multi_, fd, w);
    }
    int events = ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
    ev_io_stop(self->loop_.raw(), &w->io);
    ev_io_set(&w->io, fd, events);
    ev_io_start(self->loop_.raw(), &w->io);
    return 0;
  }

  static int OnCurlTimer(CURLM*, long timeout_ms, void* userp) {
    auto* self = static_cast<S3Store*>(userp);
    ev_timer_stop(self->loop_.raw(), &self->timer_);
    if (timeout_ms >= 0) {
      // Even a 0 ms timeout goes through the loop: libcurl forbids calling
      // back into it from this callback.
      ev_timer_set(&self->timer_, static_cast<double>(timeout_ms) / 1000.0, 0.);
      ev_timer_start(self->loop_.raw(), &self->timer_);
    }
    return 0;
  }

  static void OnEvIo(struct ev_loop*, ev_io* io, int revents) {
    auto* w = static_cast<SocketWatch*>(io->data);
    S3Store* self = w->self;
    int action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) | ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(self->multi_, io->fd, action, &running);
    self->DeliverAllPieces();
    self->Drain();
  }

  static void OnEvTimer(struct ev_loop*, ev_timer* t, int) {
    auto* self = static_cast<S3Store*>(t->data);
    int running = 0;
    curl_multi_socket_action(self->multi_, CURL_SOCKET_TIMEOUT, 0, &running);
    self->DeliverAllPieces();
    self->Drain();
  }

  EventLoop& loop_;
  const S3Config config_;
  const std::string base_url_;     // scheme://host[:port]
  const std::string path_prefix_;  // "/bucket/" (path style) or "/" (virtual-hosted)
  const std::string host_;         // host[:port] of base_url_, as the Host header (signed)
  std::mt19937_64 rng_;
  CURLM* multi_ = nullptr;
  ev_timer timer_;
  std::map<CURL*, std::shared_ptr<Request>> active_;
  std::set<std::shared_ptr<Request>> waiting_;  // backing off before a retry
  std::map<curl_socket_t, std::unique_ptr<SocketWatch>> sockets_;
  StoreStats stats_;
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> MakeS3Store(EventLoop& loop, S3Config config) {
  // curl_global_init is not thread-safe and must run before any other libcurl
  // call; once per process is enough.
  static std::once_flag curl_init;
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  XBAK_ASSIGN_OR_RETURN(s3::Address address, s3::ResolveAddress(&config));
  XBAK_RETURN_IF_ERROR(s3::CheckObjectOptions(config));
  return std::unique_ptr<ObjectStore>(std::make_unique<S3Store>(
      loop, std::move(config), std::move(address.base_url), std::move(address.path_prefix)));
}

}  // namespace xbak::storage
