// Test helper: a small HTTP server on loopback that answers each request as
// the test says (cut transfers, ignored ranges, replaced objects, errors),
// which real stores cannot be made to do, and keeps what it was sent.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace xbak::storage {

struct HttpRequest {
  std::string line;  // "GET /bucket/key HTTP/1.1"
  std::string range, if_match;
  std::string head;  // the whole head, for Header()
  std::string body;  // as Content-Length says
};

// What to send back: `head` (status line and headers, without the blank
// line), then `body`, or only its first `cut` bytes before the connection
// is closed.
struct HttpAnswer {
  std::string head;
  std::string body;
  size_t cut = std::string::npos;
};

inline std::string Header(const std::string& req, const std::string& name) {
  // Header names are case-insensitive; curl sends "Range:" and our "If-Match:".
  std::string lower = req;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t at = lower.find("\r\n" + name + ":");
  if (at == std::string::npos) return "";
  at += 2 + name.size() + 1;
  while (at < req.size() && req[at] == ' ') at++;
  return req.substr(at, req.find("\r\n", at) - at);
}

// One connection at a time; every answer closes its connection.
class FakeHttp {
 public:
  using Handler = std::function<HttpAnswer(const HttpRequest&, int n)>;
  explicit FakeHttp(Handler handler) : handler_(std::move(handler)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeHttp() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<HttpRequest> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }

 private:
  void Serve() {
    for (int n = 0; !stop_; n++) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t r = ::read(c, buf, sizeof buf);
        if (r <= 0) break;
        req.append(buf, static_cast<size_t>(r));
      }
      const size_t head_end = req.find("\r\n\r\n");
      std::string head = req.substr(0, head_end),
                  body = head_end == std::string::npos ? "" : req.substr(head_end + 4);
      const std::string length = Header(head + "\r\n", "content-length");
      const size_t want = length.empty() ? 0 : std::stoul(length);
      while (body.size() < want) {
        ssize_t r = ::read(c, buf, sizeof buf);
        if (r <= 0) break;
        body.append(buf, static_cast<size_t>(r));
      }
      HttpRequest hr{req.substr(0, req.find("\r\n")), Header(req, "range"), Header(req, "if-match"),
                     head + "\r\n", body};
      {
        std::lock_guard<std::mutex> l(mu_);
        requests_.push_back(hr);
      }
      HttpAnswer a = handler_(hr, n);
      std::string out = a.head + "\r\nConnection: close\r\n\r\n" + a.body.substr(0, a.cut);
      for (size_t at = 0; at < out.size();) {
        ssize_t w = ::send(c, out.data() + at, out.size() - at, MSG_NOSIGNAL);
        if (w <= 0) break;
        at += static_cast<size_t>(w);
      }
      ::close(c);
    }
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<HttpRequest> requests_;
};

inline std::string Object(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
  return s;
}

// "bytes=A-B" -> A, B.
inline std::pair<size_t, size_t> ParseRange(const std::string& r) {
  size_t a = std::stoul(r.substr(6));
  size_t b = std::stoul(r.substr(r.find('-') + 1));
  return {a, b};
}

// A 206 for the range asked, as S3 answers it.
inline HttpAnswer Partial(const std::string& object, const HttpRequest& req,
                          const std::string& etag = "abc") {
  auto [a, b] = ParseRange(req.range);
  std::string body = object.substr(a, b - a + 1);
  return {"HTTP/1.1 206 Partial Content\r\nETag: \"" + etag + "\"\r\nContent-Range: bytes " +
              std::to_string(a) + "-" + std::to_string(b) + "/" + std::to_string(object.size()) +
              "\r\nContent-Length: " + std::to_string(body.size()),
          body};
}

}  // namespace xbak::storage
