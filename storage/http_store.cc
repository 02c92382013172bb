#include "http_store.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <variant>

namespace xbak::storage::http {

namespace {

class HttpStore final : public ObjectStore {
 public:
  HttpStore(EventLoop& loop, HttpOptions options, std::unique_ptr<HttpDialect> dialect)
      : loop_(loop),
        options_(std::move(options)),
        dialect_(std::move(dialect)),
        rng_(std::random_device{}()) {
    multi_ = curl_multi_init();
    if (multi_ == nullptr) throw std::runtime_error("libcurl: curl_multi_init failed");
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &HttpStore::OnCurlSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &HttpStore::OnCurlTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    ev_timer_init(&timer_, &HttpStore::OnEvTimer, 0., 0.);
    timer_.data = this;
  }

  ~HttpStore() override {
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
    r->op = Op::kPut;
    r->key = key;
    r->body = std::move(body);
    r->md5 = md5;
    r->done = std::move(done);
    dialect_->ShapePut(*r);
    Start(std::move(r));
  }

  void Get(const std::string& key, std::function<void(Result<std::string>)> done,
           std::string buffer) override {
    auto r = NewGet(key);
    buffer.clear();
    r->response = std::move(buffer);
    r->done = std::move(done);
    Start(std::move(r));
  }

  void GetFirst(const std::string& key, uint64_t max_bytes,
                std::function<void(Result<std::string>)> done) override {
    auto r = NewGet(key);
    r->first_bytes = std::max<uint64_t>(max_bytes, 1);
    r->done = std::move(done);
    Start(std::move(r));
  }

  void GetRange(const std::string& key, ByteRange range, RangeReader reader) override {
    auto r = NewGet(key);
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
    r->op = Op::kList;
    r->method = Method::kGet;
    r->done = std::move(done);
    dialect_->ShapeList(*r, q);
    Start(std::move(r));
  }

  void Delete(const std::vector<std::string>& keys, std::function<void(Status)> done) override {
    if (keys.empty()) {
      loop_.After(0, [done] { done(Status::Ok()); });
      return;
    }
    // One request per batch of keys (a store without a batch delete: per
    // key), queued store-wide so that at most kMaxDeletes are in flight
    // whatever the callers ask at once; done once, with the first error.
    const size_t batch = std::max<size_t>(dialect_->DeleteBatch(), 1);
    auto fan = std::make_shared<DeleteFan>();
    fan->left = (keys.size() + batch - 1) / batch;
    fan->done = std::move(done);
    for (size_t at = 0; at < keys.size(); at += batch) {
      auto r = std::make_shared<Request>();
      r->op = Op::kDelete;
      dialect_->ShapeDelete(*r, {keys.begin() + at, keys.begin() + std::min(keys.size(), at + batch)});
      r->done = std::function<void(Status)>([this, fan](Status s) {
        deletes_in_flight_--;
        if (!s.ok() && fan->first.ok()) fan->first = s;
        if (--fan->left == 0) fan->done(fan->first);
        PumpDeletes();
      });
      delete_queue_.push_back(std::move(r));
    }
    PumpDeletes();
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
    // Queued deletes end as cancelled too (their completion counts them as
    // in flight, as if started).
    for (auto& r : delete_queue_) {
      deletes_in_flight_++;
      victims.push_back(std::move(r));
    }
    delete_queue_.clear();
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
  std::string ObjectOptions() const override { return dialect_->ObjectOptions(); }
  std::string Describe() const override { return dialect_->Describe(); }

 private:
  struct SocketWatch {
    ev_io io;
    HttpStore* self;
  };

  // One Delete call: its requests not yet done, the first error.
  struct DeleteFan {
    size_t left = 0;
    Status first;
    std::function<void(Status)> done;
  };
  static constexpr size_t kMaxDeletes = 32;

  void PumpDeletes() {
    while (deletes_in_flight_ < kMaxDeletes && !delete_queue_.empty()) {
      auto r = std::move(delete_queue_.front());
      delete_queue_.pop_front();
      deletes_in_flight_++;
      Start(std::move(r));
    }
  }

  static std::shared_ptr<Request> NewGet(const std::string& key) {
    auto r = std::make_shared<Request>();
    r->op = Op::kGet;
    r->method = Method::kGet;
    r->key = key;
    return r;
  }

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
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, options_.connect_timeout_s);
    // A transfer that moves less than 1 byte/s for stall_timeout_s is a stall.
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, options_.stall_timeout_s);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    if (options_.insecure) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (!options_.cacert.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, options_.cacert.c_str());
    // No "Expect: 100-continue" round trip: the body is in memory and a
    // rejected PUT is cheap to resend. (Not by the usual empty "Expect:"
    // header: curl 7.88 would sign that header for S3 and then not send it,
    // and the server would reject the signature.)
    curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  }

  // The method and body: a PUT or POST sends its buffer through ReadBody
  // (rewound by SeekBody on a retry). The body is not hashed again for a
  // signature: it is covered by its MD5, which the store checks or returns
  // (hashing 10 MiB twice would cost more CPU than the upload itself).
  static void SetBody(Request& r, CURL* e) {
    const auto size = static_cast<curl_off_t>(r.BodySize());
    switch (r.method) {
      case Method::kGet:
        return;
      case Method::kDelete:
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
        return;
      case Method::kPut:
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, size);
        break;
      case Method::kPost:
        curl_easy_setopt(e, CURLOPT_POST, 1L);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, size);
        break;
    }
    curl_easy_setopt(e, CURLOPT_READFUNCTION, &ReadBody);
    curl_easy_setopt(e, CURLOPT_READDATA, &r);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, &SeekBody);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, &r);
  }

  Status Setup(Request& r) {
    Attempt a;
    XBAK_RETURN_IF_ERROR(dialect_->Prepare(r, &a));
    r.easy = curl_easy_init();
    if (r.easy == nullptr) return Error(ErrorCode::kInternal, "libcurl: curl_easy_init failed");
    CURL* e = r.easy;
    curl_easy_setopt(e, CURLOPT_URL, a.url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &r);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r.curl_error);
    SetConnection(e);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &WriteResponse);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &ReadHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &r);
    SetBody(r, e);
    // Through CURLOPT_RANGE, not as a header of ours: curl sends it as
    // "Range: bytes=...", which the dialect signed where its signature
    // covers it. (A ranged GET answers 206 with those bytes; GetFirst of
    // an object shorter than asked gets it whole.)
    const std::string range = r.RangeSpec();
    if (!range.empty()) curl_easy_setopt(e, CURLOPT_RANGE, range.c_str());  // curl copies the string
    for (const auto& h : a.headers) r.headers = curl_slist_append(r.headers, h.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r.headers);
    return Status::Ok();
  }

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
    if (o.retry && r->attempt < options_.max_retries) return RetryLater(std::move(r));
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
    if (http >= 200 && http < 300) return dialect_->Answered(r);
    return dialect_->Failed(r, http);
  }

  // No HTTP answer: a wrong endpoint or an untrusted certificate is final,
  // anything else may pass.
  Outcome TransferFailed(const Request& r, CURLcode cc) const {
    std::string detail = r.curl_error[0] != '\0' ? r.curl_error : curl_easy_strerror(cc);
    const std::string endpoint = dialect_->Endpoint();
    switch (cc) {
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CACERT_BADFILE:
        return {Error(ErrorCode::kInvalidArgument, "TLS certificate of " + endpoint + " not trusted (" +
                                                       detail +
                                                       "); give its CA with --cacert=FILE, or --insecure")};
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_UNSUPPORTED_PROTOCOL:
      case CURLE_URL_MALFORMAT:
        return {Error(ErrorCode::kInvalidArgument, "cannot reach " + endpoint + ": " + detail)};
      default:  // refused, reset, timed out, stalled, TLS handshake cut ...
        return {Error(ErrorCode::kIo, "cannot reach " + endpoint + ": " + detail), true};
    }
  }

  // The wait doubles with each attempt, up to backoff_max_s.
  void RetryLater(std::shared_ptr<Request> r) {
    r->attempt++;
    stats_.retries++;
    double cap = std::min(options_.backoff_max_s, options_.backoff_initial_s * std::pow(2.0, r->attempt - 1));
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
    if (r.op == Op::kPut) stats_.bytes_sent += r.body->size();  // the object's bytes, not a wrapping
    if (r.op == Op::kGet) stats_.bytes_received += r.ranged() ? r.range.length : r.response.size();
    Finish(r, Status::Ok(), std::move(r.response));
  }

  // Runs the caller's callback with the final outcome.
  void Finish(Request& r, const Status& s, std::string response) {
    if (auto* f = std::get_if<std::function<void(Status)>>(&r.done)) {
      if (s.ok() && r.op == Op::kDelete) {
        r.response = std::move(response);
        return (*f)(dialect_->DeleteAnswered(r));
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
      auto page = dialect_->ParseList(response);
      if (!page.ok()) return (*l)(page.status().With(r.What() + " response from " + dialect_->Endpoint()));
      (*l)(std::move(*page));
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
    auto* self = static_cast<HttpStore*>(userp);
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
      ev_init(&w->io, &HttpStore::OnEvIo);
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
    auto* self = static_cast<HttpStore*>(userp);
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
    HttpStore* self = w->self;
    int action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) | ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    int running = 0;
    curl_multi_socket_action(self->multi_, io->fd, action, &running);
    self->DeliverAllPieces();
    self->Drain();
  }

  static void OnEvTimer(struct ev_loop*, ev_timer* t, int) {
    auto* self = static_cast<HttpStore*>(t->data);
    int running = 0;
    curl_multi_socket_action(self->multi_, CURL_SOCKET_TIMEOUT, 0, &running);
    self->DeliverAllPieces();
    self->Drain();
  }

  EventLoop& loop_;
  const HttpOptions options_;
  const std::unique_ptr<HttpDialect> dialect_;
  std::mt19937_64 rng_;
  CURLM* multi_ = nullptr;
  ev_timer timer_;
  std::map<CURL*, std::shared_ptr<Request>> active_;
  std::set<std::shared_ptr<Request>> waiting_;  // backing off before a retry
  std::map<curl_socket_t, std::unique_ptr<SocketWatch>> sockets_;
  std::deque<std::shared_ptr<Request>> delete_queue_;  // not started yet (PumpDeletes)
  size_t deletes_in_flight_ = 0;
  StoreStats stats_;
};

}  // namespace

std::unique_ptr<ObjectStore> MakeHttpStore(EventLoop& loop, const HttpOptions& options,
                                           std::unique_ptr<HttpDialect> dialect) {
  // curl_global_init is not thread-safe and must run before any other libcurl
  // call; once per process is enough.
  static std::once_flag curl_init;
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  return std::make_unique<HttpStore>(loop, options, std::move(dialect));
}

}  // namespace xbak::storage::http
