// Compiled (not linked) against the installed headers only: tern.hpp must stand on the headers
// `make install` puts next to it, with no internal class (runtime/models/ is not installed).
// libtern.so exports the C API only, so nothing here is called.
#include <tern/tern.hpp>
#include <type_traits>

static_assert(!std::is_copy_constructible<tern::Session>::value, "a Session is not copyable");
static_assert(sizeof(tern::Session) >= tern::Session::kStorageBytes, "in-object storage");

static_assert(!std::is_copy_constructible<tern::SharedWeights>::value,
              "SharedWeights is not copyable");

tern::Status (tern::Session::*const kPrepare)(const tern::Model&, const tern::Limits&, void*,
                                              size_t,
                                              tern::SharedWeights*) = &tern::Session::Prepare;
tern::Result<size_t> (*const kGeneratorBytes)(const tern::Model&, const tern::Limits&,
                                              const tern::SharedWeights*) =
    &tern::Generator::RequiredArenaBytes;
tern::Result<size_t> (*const kSharedBytes)(const tern::Model&, const tern::Limits&) =
    &tern::SharedWeights::RequiredBytes;

int UseOptions() {
  tern::DecodingOptions decoding;
  tern::GenerationOptions generation;
  tern::Limits limits;
  return decoding.beam_size + generation.max_new_tokens + limits.beam_size;
}
