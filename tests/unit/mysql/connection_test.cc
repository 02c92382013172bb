// mysql::Connection against a private mariadbd (tests/unit/testing/private_server.h):
// queries and their values as the server sends them, quoting, and every
// failure in words an operator can act on.
#include "xbak/mysql/connection.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "testing/server_fixture.h"

namespace xbak::mysql {
namespace {

using ConnectionTest = xbak::testing::ServerTest;

TEST_F(ConnectionTest, OpensOverTheSocketAndNamesItInMessages) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  EXPECT_GE(c->ServerVersion(), 100800u);  // 10.8+: the redo format xbak reads
  EXPECT_EQ(Options().Describe(), "socket " + server_->socket());
  ConnectOptions tcp;
  tcp.host = "127.0.0.1";
  EXPECT_EQ(tcp.Describe(), "127.0.0.1:3306");
  tcp.port = 3307;
  EXPECT_EQ(tcp.Describe(), "127.0.0.1:3307");
  EXPECT_EQ(ConnectOptions{}.Describe(), "socket (default)");
}

TEST_F(ConnectionTest, ValuesComeBackAsTheServerSendsThemNullIncluded) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto rows = c->Query("SELECT 1, NULL, 'x' UNION ALL SELECT 2, 'y', NULL");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0][0], "1");
  EXPECT_FALSE((*rows)[0][1].has_value());
  EXPECT_EQ((*rows)[1][1], "y");
  EXPECT_FALSE((*rows)[1][2].has_value());

  auto none = c->QueryValue("SELECT 1 FROM DUAL WHERE 0");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto null = c->QueryValue("SELECT NULL");
  ASSERT_TRUE(null.ok());
  EXPECT_FALSE(null->has_value());

  auto named = c->QueryNamed("SELECT 7 AS seven, NULL AS nothing");
  ASSERT_TRUE(named.ok());
  ASSERT_EQ(named->size(), 1u);
  EXPECT_EQ((*named)[0].at("seven"), "7");
  EXPECT_EQ((*named)[0].at("nothing"), "");  // SHOW ... STATUS columns: NULL reads as empty
  // A statement without a result set is no error for Query.
  auto empty = c->Query("DO 1");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST_F(ConnectionTest, QuoteRoundTripsEveryByteThatNeedsEscaping) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  const std::string nasty = std::string("it's a \"test\"\\ with a NUL ") + '\0' + " and \n newline; DROP";
  EXPECT_EQ(c->Quote("plain"), "'plain'");
  auto back = c->QueryValue("SELECT " + c->Quote(nasty));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ(**back, nasty);  // binary-safe: the NUL and what follows it come back

  EXPECT_EQ(Connection::QuoteIdentifier("t"), "`t`");
  EXPECT_EQ(Connection::QuoteIdentifier("a`b"), "`a``b`");
  const std::string db = Connection::QuoteIdentifier("xbak test`db");
  ASSERT_TRUE(c->Execute("CREATE DATABASE " + db).ok());
  auto found = c->QueryValue("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = " +
                             c->Quote("xbak test`db"));
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, "xbak test`db");
  EXPECT_TRUE(c->Execute("DROP DATABASE " + db).ok());
}

TEST_F(ConnectionTest, GlobalVariablesAndStatusAreTheServersOwn) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto vars = c->GlobalVariables();
  ASSERT_TRUE(vars.ok()) << vars.status().message();
  ASSERT_TRUE(vars->count("datadir"));  // names in lower case
  EXPECT_EQ(vars->at("datadir"), server_->datadir() + "/");
  EXPECT_EQ(vars->at("skip_networking"), "ON");
  auto lsn = c->GlobalStatus("innodb_lsn_current");  // any case
  ASSERT_TRUE(lsn.ok()) << lsn.status().message();
  ASSERT_TRUE(lsn->has_value());
  EXPECT_GT(std::stoull(**lsn), 0u);
  auto unknown = c->GlobalStatus("NO_SUCH_STATUS_VARIABLE");
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->has_value());
}

TEST_F(ConnectionTest, AServerThatIsNotThereIsNamedWithItsSocket) {
  ConnectOptions o = Options();
  o.socket = server_->Scratch("no-such.sock");
  auto c = Connection::Open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cannot reach the MariaDB server at socket " + o.socket),
            std::string::npos)
      << c.status().message();
}

TEST_F(ConnectionTest, WrongCredentialsSaySo) {
  ConnectOptions o = Options();
  o.user = "xbak_no_such_user";
  o.password = "wrong";
  auto c = Connection::Open(o);
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("access denied for user 'xbak_no_such_user'"), std::string::npos) << m;
  EXPECT_NE(m.find("wrong user or password"), std::string::npos) << m;
  EXPECT_EQ(m.find("wrong\""), std::string::npos) << "the password must never appear: " << m;
}

TEST_F(ConnectionTest, AFailedStatementNamesItselfAndTheServersError) {
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  Status st = c->Execute("SELEC 1");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("`SELEC 1` failed"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("(error 1064)"), std::string::npos) << st.message();
  // The connection stays usable after an error.
  auto v = c->QueryValue("SELECT 41 + 1");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "42");
}

TEST_F(ConnectionTest, AMissingPrivilegeIsNamedAsSuch) {
  ConnectOptions o = User("xbak_weak", "");
  auto c = Connection::Open(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  Status st = (*c)->Execute("FLUSH TABLES");  // needs RELOAD
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("missing privilege for `FLUSH TABLES`"), std::string::npos) << st.message();
}

TEST_F(ConnectionTest, AConnectionKilledUnderneathSaysTheServerWentAway) {
  auto victim = Connect(), killer = Connect();
  ASSERT_NE(victim, nullptr);
  ASSERT_NE(killer, nullptr);
  auto id = victim->QueryValue("SELECT CONNECTION_ID()");
  ASSERT_TRUE(id.ok() && id->has_value());
  ASSERT_TRUE(killer->Execute("KILL CONNECTION " + **id).ok());
  Status st = victim->Execute("SELECT 1");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("the server at socket " + server_->socket() + " went away during `SELECT 1`"),
            std::string::npos)
      << st.message();
}

// read_timeout_s bounds every statement: a server that stops answering
// cannot hang a backup.
TEST_F(ConnectionTest, AStatementThatHangsIsCutOffByTheReadTimeout) {
  ConnectOptions o = Options();
  o.read_timeout_s = 1;
  auto c = Connection::Open(o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const auto t0 = std::chrono::steady_clock::now();
  Status st = (*c)->Execute("SELECT SLEEP(30)");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(st.ok());
  EXPECT_LT(took, std::chrono::seconds(15));
  EXPECT_NE(st.message().find("went away during `SELECT SLEEP(30)`"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace xbak::mysql
