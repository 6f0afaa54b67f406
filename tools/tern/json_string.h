// JSON string literals for the CLI's --json output. The output is always valid JSON (and valid
// UTF-8) whatever the input line held: each byte that does not start a well-formed UTF-8
// sequence (overlong forms, surrogates, code points above U+10FFFF, truncated sequences) is
// written as U+FFFD, the Unicode replacement character, as \ufffd.
#pragma once

#include <string>

namespace tern::cli {

std::string JsonString(const std::string& s);

}  // namespace tern::cli
