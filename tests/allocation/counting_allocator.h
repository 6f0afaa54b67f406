// Counts heap allocations made by this process while counting is on: malloc, calloc, realloc,
// aligned_alloc, posix_memalign, memalign and every global operator new are interposed (the
// executable's definitions win over libc's and libstdc++'s) and forward to glibc.
#pragma once

#include <cstddef>

namespace tern::testing {

void StartCountingAllocations();
// Stops counting; returns the number of allocations since Start.
size_t StopCountingAllocations();

}  // namespace tern::testing
