// converter/output_file.h: the output path rules (devices, the input itself, symlinks, empty
// paths), exclusive creation, and the temporary file removed on error and on SIGINT / SIGTERM.
#include "converter/output_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "converter/error.h"

namespace {

namespace fs = std::filesystem;
using Catch::Matchers::ContainsSubstring;
using tern::convert::CheckOutputPath;
using tern::convert::Error;
using tern::convert::TempFile;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "tern_output_XXXXXX").string();
    REQUIRE(::mkdtemp(&templ[0]) != nullptr);
    path = templ;
  }
  ~TempDir() { fs::remove_all(path); }
  size_t Entries() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(path)) n += e.path().empty() ? 0 : 1;
    return n;
  }
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteText(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

const uint8_t kBytes[] = {'t', 'e', 'r', 'n'};

}  // namespace

TEST_CASE("output: an empty path, a device and a directory are refused", "[output]") {
  CHECK_THROWS_WITH(CheckOutputPath("", true, {}), "the output path is empty");
  CHECK_THROWS_WITH(CheckOutputPath("/dev/null", true, {}),
                    ContainsSubstring("/dev/null exists and is not a regular file"));
  TempDir dir;
  CHECK_THROWS_WITH(CheckOutputPath(dir.path.string(), true, {}),
                    ContainsSubstring("is not a regular file"));
  CHECK_THROWS_WITH(CheckOutputPath((dir.path / "no" / "x.tern").string(), true, {}),
                    ContainsSubstring("does not exist"));
}

TEST_CASE("output: the input file itself is refused even with --force", "[output]") {
  TempDir dir;
  const fs::path input = dir.path / "model.safetensors";
  WriteText(input, "weights");
  const fs::path hard = dir.path / "other_name";
  fs::create_hard_link(input, hard);
  CHECK_THROWS_WITH(CheckOutputPath(input.string(), true, {input.string()}),
                    ContainsSubstring("is the input file"));
  CHECK_THROWS_WITH(CheckOutputPath(hard.string(), true, {input.string()}),
                    ContainsSubstring("is the input file " + input.string()));
  CHECK_THROWS_WITH(CheckOutputPath(input.string(), false, {}),
                    ContainsSubstring("exists; pass --force to overwrite it"));
  CHECK(CheckOutputPath(input.string(), true, {}) == input.string());
}

TEST_CASE("output: a symlink's target is replaced, the link stays", "[output]") {
  TempDir dir;
  const fs::path target = dir.path / "v1.tern", link = dir.path / "current.tern";
  WriteText(target, "old");
  fs::create_symlink(target, link);
  const std::string resolved = CheckOutputPath(link.string(), true, {});
  CHECK(fs::equivalent(resolved, target));
  {
    TempFile temp(resolved);
    temp.Write(kBytes, sizeof kBytes);
    temp.Commit(true);
  }
  CHECK(fs::is_symlink(link));
  CHECK(Slurp(target) == "tern");
  fs::remove(target);
  CHECK_THROWS_WITH(CheckOutputPath(link.string(), true, {}),
                    ContainsSubstring("a symbolic link whose target cannot be resolved"));
}

TEST_CASE("output: without overwrite the final name is created exclusively", "[output]") {
  TempDir dir;
  const fs::path out = dir.path / "m.tern";
  TempFile first(out.string());
  first.Write(kBytes, sizeof kBytes);
  // Another writer got there between the check and the commit.
  WriteText(out, "theirs");
  CHECK_THROWS_WITH(first.Commit(false), out.string() + " exists; pass --force to overwrite it");
  CHECK(Slurp(out) == "theirs");
}

TEST_CASE("output: an uncommitted temporary file is removed", "[output]") {
  TempDir dir;
  const fs::path out = dir.path / "m.tern";
  std::string temp_path;
  {
    TempFile temp(out.string());
    temp_path = temp.path();
    CHECK(fs::exists(temp_path));
    CHECK(fs::path(temp_path).parent_path() == dir.path);
  }
  CHECK_FALSE(fs::exists(temp_path));
  CHECK(dir.Entries() == 0);
  {
    TempFile temp(out.string());
    temp.Write(kBytes, sizeof kBytes);
    temp.Commit(false);
  }
  CHECK(Slurp(out) == "tern");
  CHECK(dir.Entries() == 1);
  CHECK((fs::status(out).permissions() & fs::perms::owner_read) != fs::perms::none);
}

TEST_CASE("output: SIGINT and SIGTERM remove the temporary file", "[output]") {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir dir;
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      TempFile temp((dir.path / "m.tern").string());
      temp.Write(kBytes, sizeof kBytes);
      ::raise(sig);
      ::_exit(3);  // not reached: the signal ends the process
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(dir.Entries() == 0);
  }
}
