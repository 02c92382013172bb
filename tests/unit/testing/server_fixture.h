// A GoogleTest fixture for tests that need a live server: one private mariadbd
// (private_server.h) per test suite, skipped where none is installed, and
// connections to it as mysql::Connection. For the layers that link mysql.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "testing/private_server.h"
#include "xbak/mysql/connection.h"

namespace xbak::testing {

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string skip, error;
    server_ = PrivateServer::Start({}, &skip, &error).release();
    skip_ = skip;
    error_ = error;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(server_, nullptr) << error_;
  }

  // The options of the account that needs no password (see PrivateServer::user).
  static mysql::ConnectOptions Options() {
    mysql::ConnectOptions o;
    o.socket = server_->socket();
    o.user = server_->user();
    return o;
  }
  static std::unique_ptr<mysql::Connection> Connect(const mysql::ConnectOptions& o = Options()) {
    auto c = mysql::Connection::Open(o);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  // A fresh account with exactly `grants` ("RELOAD, PROCESS"; "" for none).
  static mysql::ConnectOptions User(const std::string& name, const std::string& grants) {
    EXPECT_EQ(server_->Sql("DROP USER IF EXISTS " + name + "@localhost; CREATE USER " + name +
                           "@localhost IDENTIFIED BY 'pw-" + name + "'" +
                           (grants.empty() ? "" : "; GRANT " + grants + " ON *.* TO " + name + "@localhost")),
              0);
    mysql::ConnectOptions o = Options();
    o.user = name;
    o.password = "pw-" + name;
    return o;
  }

  static inline PrivateServer* server_ = nullptr;
  static inline std::string skip_, error_;
};

}  // namespace xbak::testing
