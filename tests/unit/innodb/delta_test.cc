#include "xbak/innodb/delta.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "xbak/util/endian.h"

namespace xbak::innodb {
namespace {

class TempFile {
 public:
  TempFile() {
    char tmpl[] = "/tmp/xbak-delta-XXXXXX";
    int fd = mkstemp(tmpl);
    ::close(fd);
    path_ = tmpl;
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }
  void Write(const std::vector<uint8_t>& bytes) {
    ::unlink(path_.c_str());
    auto f = util::File::CreateNew(path_);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->Write(bytes.data(), bytes.size()).ok());
  }

 private:
  std::string path_;
};

std::vector<uint8_t> Page(uint32_t page_size, uint32_t no) {
  std::vector<uint8_t> p(page_size, static_cast<uint8_t>(no * 7 + 1));
  util::StoreBE32(p.data() + 4, no);
  return p;
}

std::vector<uint8_t> BuildDelta(uint32_t page_size, const std::vector<uint32_t>& nos) {
  std::vector<uint8_t> out;
  DeltaWriter w(page_size, [&](const uint8_t* d, size_t n) {
    out.insert(out.end(), d, d + n);
    return Status::Ok();
  });
  for (uint32_t no : nos) EXPECT_TRUE(w.AddPage(no, Page(page_size, no).data()).ok());
  EXPECT_TRUE(w.Finish().ok());
  return out;
}

TEST(DeltaMeta, FormatIsMariabackupsAndParses) {
  EXPECT_EQ(FormatDeltaMeta({16384, 0, 18}), "page_size = 16384\nzip_size = 0 \nspace_id = 18\n");
  auto m = ParseDeltaMeta("page_size = 16384\nzip_size = 8192 \nspace_id = 6\n", "t.meta");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->page_size, 16384u);
  EXPECT_EQ(m->zip_size, 8192u);
  EXPECT_EQ(m->space_id, 6u);
  EXPECT_FALSE(ParseDeltaMeta("page_size = 1000\nzip_size = 0\nspace_id = 1\n", "x").ok());
  EXPECT_FALSE(ParseDeltaMeta("page_size = 16384\nzip_size = 0\n", "x").ok());
  EXPECT_FALSE(ParseDeltaMeta("page_size = 16384\nzip_size = 0\nspace_id = -1\n", "x").ok());
}

TEST(Delta, UntouchedTableIsOneHeaderBlock) {
  auto d = BuildDelta(16384, {});
  ASSERT_EQ(d.size(), 16384u);
  EXPECT_EQ(std::memcmp(d.data(), "XTRA\xff\xff\xff\xff", 8), 0);  // as in lab-notes section 4
}

TEST(Delta, OnePageMatchesMariabackupLayout) {
  auto d = BuildDelta(16384, {3});
  ASSERT_EQ(d.size(), 32768u);
  EXPECT_EQ(std::memcmp(d.data(), "XTRA\0\0\0\x03\xff\xff\xff\xff", 12), 0);
  EXPECT_EQ(util::LoadBE32(d.data() + 16384 + 4), 3u);
}

TEST(Delta, MultiBlockRoundTrip) {
  const uint32_t ps = 4096;  // 1024 slots: 1023 pages per block
  std::vector<uint32_t> nos;
  for (uint32_t i = 0; i < 2500; i++) nos.push_back(i * 2 + 1);
  auto d = BuildDelta(ps, nos);
  EXPECT_EQ(d.size(), (2500u + 3u) * ps);  // 3 header blocks
  EXPECT_EQ(util::LoadBE32(d.data()), kDeltaMagicMore);
  TempFile tf;
  tf.Write(d);
  auto f = util::File::OpenRead(tf.path());
  ASSERT_TRUE(f.ok());
  DeltaReader r(f.value(), ps);
  std::vector<uint32_t> got;
  for (;;) {
    auto more = r.Next();
    ASSERT_TRUE(more.ok()) << more.status().message();
    if (!more.value()) break;
    for (size_t i = 0; i < r.page_numbers().size(); i++) {
      got.push_back(r.page_numbers()[i]);
      EXPECT_EQ(std::memcmp(r.page(i), Page(ps, r.page_numbers()[i]).data(), ps), 0);
    }
  }
  EXPECT_EQ(got, nos);
}

TEST(Delta, FullLastBlockHasNoTerminator) {
  const uint32_t ps = 4096;
  std::vector<uint32_t> nos;
  for (uint32_t i = 0; i < 1023; i++) nos.push_back(i);
  auto d = BuildDelta(ps, nos);
  ASSERT_EQ(d.size(), 1024u * ps);
  EXPECT_EQ(util::LoadBE32(d.data()), kDeltaMagicLast);
  EXPECT_EQ(util::LoadBE32(d.data() + 4 * 1023), 1022u);
}

Status ReadAllDeltas(const std::vector<uint8_t>& bytes, uint32_t ps) {
  TempFile tf;
  tf.Write(bytes);
  auto f = util::File::OpenRead(tf.path());
  DeltaReader r(f.value(), ps);
  for (;;) {
    auto more = r.Next();
    if (!more.ok()) return more.status();
    if (!more.value()) return Status::Ok();
  }
}

TEST(Delta, BadInputIsNamedWithOffset) {
  auto good = BuildDelta(4096, {1, 2, 3});
  auto bad_magic = good;
  bad_magic[0] = 'Q';
  Status st = ReadAllDeltas(bad_magic, 4096);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("at byte 0"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("magic"), std::string::npos);

  auto truncated = good;
  truncated.resize(good.size() - 100);
  st = ReadAllDeltas(truncated, 4096);
  EXPECT_NE(st.message().find("truncated"), std::string::npos) << st.message();

  auto cut_list = good;  // header says 3 pages but the list terminator is gone and garbage follows
  util::StoreBE32(cut_list.data() + 16, 0x7FFFFFF0);
  st = ReadAllDeltas(cut_list, 4096);
  EXPECT_NE(st.message().find("past any sane"), std::string::npos) << st.message();

  auto no_last = BuildDelta(4096, {1});
  util::StoreBE32(no_last.data(), kDeltaMagicMore);  // claims more blocks follow; none do
  st = ReadAllDeltas(no_last, 4096);
  EXPECT_NE(st.message().find("without its last"), std::string::npos) << st.message();
}

// The one reading of a block header, for the prepare and for --verify.
TEST(DeltaBlockHeader, ParsesAndRefusesByName) {
  std::vector<uint8_t> h(1024, 0xFF);  // 256 slots, list end everywhere
  util::StoreBE32(h.data(), kDeltaMagicMore);
  util::StoreBE32(h.data() + 4, 3);
  util::StoreBE32(h.data() + 8, 9);
  auto ok = ParseDeltaBlockHeader(h.data(), 1024);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_FALSE(ok->last);
  EXPECT_EQ(ok->page_nos, (std::vector<uint32_t>{3, 9}));
  util::StoreBE32(h.data(), kDeltaMagicLast);
  EXPECT_TRUE(ParseDeltaBlockHeader(h.data(), 1024)->last);

  util::StoreBE32(h.data() + 12, 9);  // 3, 9, 9
  auto dup = ParseDeltaBlockHeader(h.data(), 1024);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("not increasing (9 then 9) in slot 3"), std::string::npos)
      << dup.status().message();
  util::StoreBE32(h.data() + 12, kDeltaMaxPageNo + 1);
  auto far = ParseDeltaBlockHeader(h.data(), 1024);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.status().message().find("past any sane tablespace size"), std::string::npos);
  util::StoreBE32(h.data(), 0x41424344);
  auto magic = ParseDeltaBlockHeader(h.data(), 1024);
  ASSERT_FALSE(magic.ok());
  EXPECT_NE(magic.status().message().find("not a delta block (magic 0x41424344"), std::string::npos)
      << magic.status().message();
}

}  // namespace
}  // namespace xbak::innodb
