// Errors as data. Every fallible operation returns a Status or a Result<T>;
// the message is written for the operator (it names the file, offset or option
// involved), so callers add context and pass it up instead of printing it.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace xbak {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad option or bad input from the user
  kIo,               // a system call failed (errno in the message)
  kNoSpace,          // ENOSPC / EDQUOT on the target
  kCorrupt,          // bytes that do not follow the format (checksum, magic, ...)
  kNotFound,
  kAlreadyExists,
  kUnsupported,  // a valid input we deliberately do not handle
  kServer,       // the database server refused or failed
  kTimeout,
  kCancelled,   // another part of the operation failed first
  kUnreadable,  // stored, but not handed over as asked (an object needing a key not given, archived)
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy with "context: " prepended to the message.
  Status With(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status Error(ErrorCode code, std::string message) { return Status(code, std::move(message)); }

// Builds a kIo (or kNoSpace for ENOSPC/EDQUOT) error from errno, naming the
// operation and the path: "write /backup/db/t.ibd: No space left on device".
Status ErrnoError(const std::string& what, const std::string& path, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be ok()

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace xbak

#define XBAK_CONCAT_INNER(a, b) a##b
#define XBAK_CONCAT(a, b) XBAK_CONCAT_INNER(a, b)

// Returns early from the enclosing function if `expr` (a Status) failed.
#define XBAK_RETURN_IF_ERROR(expr) \
  do {                             \
    ::xbak::Status _st = (expr);   \
    if (!_st.ok()) return _st;     \
  } while (0)

// `XBAK_ASSIGN_OR_RETURN(auto x, MakeX());`
#define XBAK_ASSIGN_OR_RETURN(lhs, rexpr) XBAK_ASSIGN_OR_RETURN_IMPL(XBAK_CONCAT(_res_, __LINE__), lhs, rexpr)
#define XBAK_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
