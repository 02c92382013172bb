#include "http_call.h"

#include <curl/curl.h>

#include <algorithm>
#include <memory>

namespace xbak::storage::http {
namespace {

size_t Collect(char* data, size_t size, size_t n, void* userp) {
  auto* out = static_cast<std::string*>(userp);
  if (out->size() + size * n > (1 << 20)) return 0;  // no credential answer is that large
  out->append(data, size * n);
  return size * n;
}

}  // namespace

// One blocking request. Errors name the URL (no secret is ever in it).
Result<Answer> Perform(const Call& c, const std::string& what) {
  std::unique_ptr<CURL, void (*)(CURL*)> e(curl_easy_init(), curl_easy_cleanup);
  if (!e) return Error(ErrorCode::kInternal, "libcurl: curl_easy_init failed");
  curl_slist* headers = nullptr;
  for (const auto& h : c.headers) headers = curl_slist_append(headers, h.c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> hold(headers, curl_slist_free_all);
  Answer a;
  char err[CURL_ERROR_SIZE] = {};
  CURL* h = e.get();
  curl_easy_setopt(h, CURLOPT_URL, c.url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, std::min(c.timeout_s, 5L));
  curl_easy_setopt(h, CURLOPT_TIMEOUT, c.timeout_s);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &Collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &a.body);
  if (c.insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!c.cacert.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, c.cacert.c_str());
  if (c.method == "POST") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, c.body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(c.body.size()));
  } else if (c.method != "GET") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c.method.c_str());
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  CURLcode cc = curl_easy_perform(h);
  if (cc != CURLE_OK) {
    return Error(ErrorCode::kIo,
                 what + ": " + c.method + " " + c.url + ": " + (err[0] ? err : curl_easy_strerror(cc)));
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.status);
  return a;
}

}  // namespace xbak::storage::http
