#include "xbak/storage/s3_xml.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "xbak/storage/md5.h"

namespace xbak::storage {
namespace {

// As MinIO sends it (one line in reality; the whitespace must not matter).
constexpr char kMinioPage[] = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>backups</Name><Prefix>full/2024-05-01/</Prefix><KeyCount>3</KeyCount><MaxKeys>3</MaxKeys>
  <Delimiter></Delimiter><IsTruncated>true</IsTruncated>
  <Contents><Key>full/2024-05-01/ibdata1</Key><LastModified>2024-05-01T10:00:00.000Z</LastModified>
    <ETag>&quot;D41D8CD98F00B204E9800998ECF8427E&quot;</ETag><Size>12582912</Size>
    <Owner><ID>02d6176db174dc93cb1b899f7c6078f08654445fe8cf1b6ce98d8855f66bdbf4</ID>
      <DisplayName>minio</DisplayName></Owner>
    <StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>full/2024-05-01/mysql/user.MAD</Key><LastModified>2024-05-01T10:00:01.000Z</LastModified>
    <ETag>&#34;9b2cf535f27731c974343645a3985328-3&#34;</ETag><Size>0</Size>
    <StorageClass>STANDARD</StorageClass></Contents>
  <!-- a comment, <Contents> in it is not an object -->
  <Contents><Key>full/2024-05-01/xtrabackup_checkpoints</Key><Size>18446744073709551615</Size></Contents>
  <NextContinuationToken>1vLQ/Y7Kz+ab==</NextContinuationToken><EncodingType/>
</ListBucketResult>
)";

// Turns a Delete request into a listing of the same keys, so that what
// BuildDeleteRequest writes is read back by the real parser.
std::string DeleteRequestAsListing(std::string xml) {
  // Copies into a new string: replacing in place would be quadratic in the number of keys.
  auto replace_all = [&xml](const std::string& from, const std::string& to) {
    std::string out;
    size_t done = 0;
    for (size_t p; (p = xml.find(from, done)) != std::string::npos; done = p + from.size()) {
      out.append(xml, done, p - done).append(to);
    }
    xml = out.append(xml, done);
  };
  replace_all("<Delete>", "<ListBucketResult>");
  replace_all("</Delete>", "</ListBucketResult>");
  replace_all("<Object>", "<Contents><Size>1</Size>");
  replace_all("</Object>", "</Contents>");
  return xml;
}

void ExpectCorrupt(std::string_view xml, const std::string& needle) {
  auto r = ParseListObjectsV2(xml);
  ASSERT_FALSE(r.ok()) << xml;
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.status().message().find("S3 ListObjectsV2 response: "), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(S3Xml, MinioListingPage) {
  auto r = ParseListObjectsV2(kMinioPage);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->objects.size(), 3u);
  EXPECT_EQ(r->objects[0].key, "full/2024-05-01/ibdata1");
  EXPECT_EQ(r->objects[0].size, 12582912u);
  EXPECT_EQ(r->objects[0].etag, "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(r->objects[1].key, "full/2024-05-01/mysql/user.MAD");
  EXPECT_EQ(r->objects[1].size, 0u);
  EXPECT_EQ(r->objects[1].etag, "9b2cf535f27731c974343645a3985328-3");
  EXPECT_EQ(r->objects[2].size, UINT64_MAX);
  EXPECT_EQ(r->objects[2].etag, "");
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->next_token, "1vLQ/Y7Kz+ab==");
}

TEST(S3Xml, CommonPrefixesAndTimes) {
  auto r = ParseListObjectsV2(
      "<ListBucketResult><Contents><Key>p/xbcloud.manifest</Key><Size>9</Size>"
      "<LastModified>2026-11-26T21:50:54.000Z</LastModified>"
      "<ETag>&quot;D41D8CD98F00B204E9800998ECF8427E&quot;</ETag></Contents>"
      "<Contents><Key>p/odd</Key><Size>1</Size><LastModified>yesterday</LastModified>"
      "<ETag>\"9b2cf535f27731c974343645a3985328-3\"</ETag></Contents>"
      "<CommonPrefixes><Prefix>p/a/</Prefix></CommonPrefixes>"
      "<CommonPrefixes><Prefix>p/b/</Prefix></CommonPrefixes></ListBucketResult>");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->objects[0].modified, 1795729854);
  EXPECT_EQ(r->objects[1].modified, 0);
  EXPECT_EQ(r->prefixes, (std::vector<std::string>{"p/a/", "p/b/"}));
  ListResult out = ListResultFrom(std::move(*r));
  ASSERT_EQ(out.objects.size(), 2u);
  ASSERT_TRUE(out.objects[0].md5.has_value());
  EXPECT_EQ(Md5Hex(*out.objects[0].md5), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_FALSE(out.objects[1].md5.has_value());  // a multipart ETag is not an MD5
  EXPECT_EQ(out.prefixes.size(), 2u);
  EXPECT_TRUE(out.next_token.empty());
  ExpectCorrupt("<ListBucketResult><CommonPrefixes></CommonPrefixes></ListBucketResult>", "without <Prefix>");
}

TEST(S3Xml, IsoTimesStrictly) {
  EXPECT_EQ(ParseIsoUtc("2026-11-26T21:50:54Z"), 1795729854);
  EXPECT_EQ(ParseIsoUtc("2026-11-26T21:50:54.123Z"), 1795729854);
  EXPECT_EQ(FormatIsoUtc(1795729854), "2026-11-26T21:50:54Z");
  for (const char* bad : {"2026-02-30T00:00:00Z", "2026--1-01T00:00:00Z", "2026-13-01T00:00:00Z",
                          "2026-11-26T24:00:00Z", "2026-11-26T21:50:54+01:00", "2026-11-26T21:50:54xZ",
                          "2026-11-26T21:50:54.Z", "+026-11-26T21:50:54Z", "1969-12-31T23:59:59Z", ""}) {
    EXPECT_EQ(ParseIsoUtc(bad), 0) << bad;
  }
}

TEST(S3Xml, EmptyAndLastPages) {
  auto empty = ParseListObjectsV2(
      R"(<?xml version="1.0" encoding="UTF-8"?>)"
      R"(<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">)"
      "<Name>b</Name><Prefix/><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>");
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->objects.empty());
  EXPECT_FALSE(empty->truncated);
  EXPECT_EQ(empty->next_token, "");

  // Namespace prefixes and a byte order mark are accepted too.
  auto last = ParseListObjectsV2(
      "\xEF\xBB\xBF<s3:ListBucketResult xmlns:s3='http://s3.amazonaws.com/doc/2006-03-01/'><s3:Contents>"
      "<s3:Key>k</s3:Key><s3:Size> 7 </s3:Size></s3:Contents></s3:ListBucketResult>");
  ASSERT_TRUE(last.ok()) << last.status().message();
  ASSERT_EQ(last->objects.size(), 1u);
  EXPECT_EQ(last->objects[0].key, "k");
  EXPECT_EQ(last->objects[0].size, 7u);
  EXPECT_FALSE(last->truncated);
}

TEST(S3Xml, EscapedKeys) {
  auto r = ParseListObjectsV2(
      "<ListBucketResult>"
      "<Contents><Key>a&amp;b&lt;c&gt;.ibd</Key><Size>1</Size></Contents>"
      "<Contents><Key>line&#13;&#10;tab&#x9;.ibd</Key><Size>2</Size></Contents>"
      "<Contents><Key>\xC3\xA4/&#252;/&#x1F600;.ibd</Key><Size>3</Size></Contents>"
      "<Contents><Key> with spaces .ibd </Key><Size>4</Size></Contents>"
      "<Contents><Key>&apos;q&quot;</Key><Size>5</Size></Contents>"
      "<Contents><Key><![CDATA[raw <&> text]]></Key><Size>6</Size></Contents>"
      "</ListBucketResult>");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->objects.size(), 6u);
  EXPECT_EQ(r->objects[0].key, "a&b<c>.ibd");
  EXPECT_EQ(r->objects[1].key, "line\r\ntab\t.ibd");
  EXPECT_EQ(r->objects[2].key, "\xC3\xA4/\xC3\xBC/\xF0\x9F\x98\x80.ibd");
  EXPECT_EQ(r->objects[3].key, " with spaces .ibd ");
  EXPECT_EQ(r->objects[4].key, "'q\"");
  EXPECT_EQ(r->objects[5].key, "raw <&> text");
}

TEST(S3Xml, BadListings) {
  ExpectCorrupt(
      "<ListBucketResult><Contents><Key>big.ibd</Key><Size>18446744073709551616</Size></Contents>"
      "</ListBucketResult>",
      "of key \"big.ibd\" is not a decimal uint64 at byte 46");
  ExpectCorrupt("<ListBucketResult><Contents><Key>k</Key><Size>12a</Size></Contents></ListBucketResult>",
                "\"12a\" of key \"k\"");
  ExpectCorrupt("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>",
                "\"-1\"");
  ExpectCorrupt("<ListBucketResult><Contents><Key>k</Key><Size/></Contents></ListBucketResult>", "\"\"");
  ExpectCorrupt("<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>",
                "<Contents> of key \"k\" without <Size> at byte 18");
  ExpectCorrupt("<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>", "without <Key>");
  ExpectCorrupt("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                "truncated listing without <NextContinuationToken> at byte 0");
  ExpectCorrupt("<ListBucketResult><IsTruncated>yes</IsTruncated></ListBucketResult>",
                "<IsTruncated> is \"yes\"");
  ExpectCorrupt("<ListAllMyBucketsResult/>",
                "root element <ListAllMyBucketsResult> instead of <ListBucketResult>");
  // A 200 OK carrying an error document says what the server meant.
  ExpectCorrupt("<Error><Code>InternalError</Code><Message>try again</Message></Error>",
                "an error document (InternalError: try again) at byte 0");
}

TEST(S3Xml, MalformedDocuments) {
  std::string page = kMinioPage;
  ExpectCorrupt(page.substr(0, 300), "unexpected end of document at byte 300");
  ExpectCorrupt("", "unexpected end of document at byte 0");
  ExpectCorrupt("   \n", "unexpected end of document at byte 4");
  ExpectCorrupt("<ListBucketResult", "unexpected end of document at byte 17");
  ExpectCorrupt("<ListBucketResult a=\">\"", "unexpected end of document at byte 23");
  ExpectCorrupt("<?xml version=\"1.0\"", "unexpected end of document at byte 19");
  ExpectCorrupt("<ListBucketResult><!-- never closed", "unexpected end of document at byte 35");
  ExpectCorrupt("<ListBucketResult><Name>b</Prefix></ListBucketResult>",
                "closing tag </Prefix> does not match <Name> opened at byte 18 at byte 25");
  ExpectCorrupt("<ListBucketResult></ListBucketResult><Other/>", "a second root element at byte 37");
  ExpectCorrupt("<ListBucketResult/>trailing", "text after the root element at byte 19");
  ExpectCorrupt("</ListBucketResult>", "a closing tag before any opening tag at byte 0");
  ExpectCorrupt("<ListBucketResult><Name>a&b</Name></ListBucketResult>", "unterminated entity at byte 25");
  ExpectCorrupt("<ListBucketResult><Name>&nbsp;</Name></ListBucketResult>",
                "bad entity \"&nbsp;\" at byte 24");
  ExpectCorrupt("<ListBucketResult><Name a<b>x</Name></ListBucketResult>",
                "'<' inside the tag of <Name> at byte 25");
  ExpectCorrupt("<ListBucketResult>< /></ListBucketResult>", "an element without a name at byte 18");
  ExpectCorrupt("HTTP/1.1 502 Bad Gateway", "text before the root element at byte 0");
  ExpectCorrupt(std::string("<\0\xff<", 4), "at byte");

  // 64 levels are fine, 65 are not.
  auto nested = [](int depth) {
    std::string xml = "<ListBucketResult>";
    for (int i = 1; i < depth; i++) xml += "<a>";
    for (int i = 1; i < depth; i++) xml += "</a>";
    return xml + "</ListBucketResult>";
  };
  EXPECT_TRUE(ParseListObjectsV2(nested(64)).ok());
  ExpectCorrupt(nested(65), "elements nested deeper than 64 at byte " + std::to_string(18 + 63 * 3));
  ExpectCorrupt(nested(100000), "elements nested deeper than 64");
}

TEST(S3Xml, ErrorBodies) {
  S3ErrorBody e = ParseErrorBody(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>"
      "<Message>The specified bucket does not exist</Message><BucketName>x</BucketName>"
      "<Resource>/x</Resource><RequestId>17C2B3F1E0A2D6B4</RequestId><HostId>dd9025bab4ad464b</HostId></"
      "Error>");
  EXPECT_EQ(e.code, "NoSuchBucket");
  EXPECT_EQ(e.message, "The specified bucket does not exist");

  e = ParseErrorBody("<Error><Code>SignatureDoesNotMatch</Code><Message>a &amp; b</Message></Error>");
  EXPECT_EQ(e.code, "SignatureDoesNotMatch");
  EXPECT_EQ(e.message, "a & b");

  for (std::string_view body :
       {"", "<html><head><title>502 Bad Gateway</title></head><body><hr><center>nginx</center></body></html>",
        "<Error><Code>NoSuchKey</Code>", "Service Unavailable", "<ListBucketResult/>"}) {
    e = ParseErrorBody(body);
    EXPECT_EQ(e.code, "") << body;
    EXPECT_EQ(e.message, "") << body;
  }
}

TEST(S3Xml, DeleteResult) {
  auto r = ParseDeleteResult(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Deleted><Key>a.ibd</Key></Deleted>"
      "<Error><Key>b&amp;c.ibd</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
      "</DeleteResult>");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].key, "b&c.ibd");
  EXPECT_EQ((*r)[0].code, "AccessDenied");
  EXPECT_EQ((*r)[0].message, "Access Denied");

  r = ParseDeleteResult("<DeleteResult/>");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->empty());

  r = ParseDeleteResult("<DeleteResult><Error><Key>x</Key>");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(r.status().message(), "S3 DeleteObjects response: unexpected end of document at byte 33");
}

TEST(S3Xml, BuildDeleteRequest) {
  EXPECT_EQ(BuildDeleteRequest({"a&b.ibd"}),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete><Quiet>true</Quiet>"
            "<Object><Key>a&amp;b.ibd</Key></Object></Delete>");

  std::vector<std::string> keys = {
      "a&b<c>.ibd", "\xC3\xA4/\xC3\xBC.ibd", " spaced key ", "cr\rlf\ntab\t", "q\"'", "</Key></Object>", ""};
  auto back = ParseListObjectsV2(DeleteRequestAsListing(BuildDeleteRequest(keys)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->objects.size(), keys.size());
  for (size_t i = 0; i < keys.size(); i++) EXPECT_EQ(back->objects[i].key, keys[i]);
}

TEST(S3Xml, EscapeAndUnescape) {
  EXPECT_EQ(XmlEscape("a&b<c>\"d'e"), "a&amp;b&lt;c&gt;&quot;d&apos;e");
  EXPECT_EQ(XmlEscape("x\r\n\t\x01y"), "x&#13;&#10;&#9;&#1;y");
  EXPECT_EQ(XmlEscape("\xC3\xA4"), "\xC3\xA4");

  auto u = XmlUnescape("&amp;&lt;&gt;&quot;&apos;&#65;&#x42;&#X43;&#0000000000000000000000068;");
  ASSERT_FALSE(u.ok());  // "&#X43;": the x of a hex reference is lowercase
  u = XmlUnescape("&amp;&lt;&gt;&quot;&apos;&#65;&#x42;&#x4a;&#0000000000000000000068;&#228;&#x10FFFF;");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(*u, "&<>\"'ABJD\xC3\xA4\xF4\x8F\xBF\xBF");

  for (std::string_view bad : {"&", "&amp", "&;", "&foo;", "&#;", "&#x;", "&#xZZ;", "&#12a;", "&#0;", "&#x0;",
                               "&#xD800;", "&#x110000;", "&#1114112;", "&#99999999999999999999;", "&AMP;"}) {
    auto r = XmlUnescape(std::string("ok ") + std::string(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kCorrupt);
    EXPECT_NE(r.status().message().find("at byte 3"), std::string::npos) << r.status().message();
  }

  for (const std::string& k :
       std::vector<std::string>{"", "plain", "a&b<c>.ibd", "&amp;", "\r\n\t\x1f", std::string("nul\0x", 5)}) {
    auto r = XmlUnescape(XmlEscape(k));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, k);
  }
}

}  // namespace
}  // namespace xbak::storage
