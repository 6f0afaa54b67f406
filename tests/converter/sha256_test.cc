// SHA-256 against the FIPS 180-4 / NIST example vectors, padding-boundary lengths (digests from
// Python's hashlib), updates split at every odd chunk size, and Sha256File.
#include "converter/sha256.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "converter/error.h"

namespace {

using tern::convert::Sha256;

std::string Digest(const std::string& message) {
  Sha256 sha;
  sha.Update(message.data(), message.size());
  return sha.HexDigest();
}

std::string DigestInChunks(const std::string& message, size_t chunk) {
  Sha256 sha;
  for (size_t i = 0; i < message.size(); i += chunk) {
    sha.Update(message.data() + i, std::min(chunk, message.size() - i));
  }
  return sha.HexDigest();
}

const char kMillionA[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

}  // namespace

TEST_CASE("SHA-256: FIPS 180-4 example vectors", "[converter][sha256]") {
  REQUIRE(Digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  REQUIRE(Digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  REQUIRE(Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  REQUIRE(Digest("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                 "klmnopqrlmnopqrsmnopqrstnopqrstu") ==
          "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  REQUIRE(Digest(std::string(1000000, 'a')) == kMillionA);
}

TEST_CASE("SHA-256: lengths around the 55/56/64-byte padding boundaries", "[converter][sha256]") {
  const std::pair<size_t, const char*> cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  for (const auto& c : cases) {
    INFO(c.first << " x 'a'");
    REQUIRE(Digest(std::string(c.first, 'a')) == c.second);
  }
  // All byte values (high bits set), 1792 bytes.
  std::string bytes;
  for (int rep = 0; rep < 7; ++rep) {
    for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  }
  REQUIRE(Digest(bytes) == "a3652ad1f4cb62f8cec5a16bf51b158f2f538cbeaa72c8d647fcdac6b1cc6cfa");
}

TEST_CASE("SHA-256: the digest does not depend on how updates are split", "[converter][sha256]") {
  const std::string million(1000000, 'a');
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{7}, size_t{13}, size_t{63}, size_t{64},
                       size_t{65}, size_t{4097}}) {
    INFO("chunk " << chunk);
    REQUIRE(DigestInChunks(million, chunk) == kMillionA);
  }
  Sha256 empty_updates;
  empty_updates.Update("", 0);
  empty_updates.Update("abc", 3);
  empty_updates.Update(nullptr, 0);
  REQUIRE(empty_updates.HexDigest() ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("SHA-256: Sha256File hashes a file's bytes", "[converter][sha256]") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tern_sha256_test_" + std::to_string(::getpid()) + ".bin");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string million(1000000, 'a');
    out.write(million.data(), static_cast<std::streamsize>(million.size()));
  }
  REQUIRE(tern::convert::Sha256File(path.string()) == kMillionA);
  { std::ofstream truncate(path, std::ios::binary); }
  REQUIRE(tern::convert::Sha256File(path.string()) ==
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::filesystem::remove(path);
  REQUIRE_THROWS_WITH(tern::convert::Sha256File(path.string()),
                      Catch::Matchers::ContainsSubstring(path.string()));
}
