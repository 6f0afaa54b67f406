// Whether XNNPACK's operator for a linear path computes right on the CPU tern runs on.
//
// XNNPACK picks its micro-kernels by CPU feature at run time, and Debian 13's build (2024-11)
// has kernels that compute wrong results on some CPUs: its blockwise int4 GEMM (qb4w) on
// AVX512-VNNI (an AMD EPYC, 2026-12-05), its per-row int4 GEMM (qc4w) and its f16 GEMM on an
// Intel Xeon with AMX and AVX512-FP16 (2026-12-05: errors of the size of the outputs
// themselves, every batch size; int8 and f32 exact there). A list of known CPUs misses the next
// one, so the first time a path is planned in a process, tern runs that path's operator, created
// and fed exactly as a session does (PrepareOperands, XNNPACK's own activation conversions), on
// small layers whose every product and sum is exact in the path's arithmetic (small integers,
// power-of-two scales), at batch sizes from 1 to 33, and compares with the exact result. A
// correct kernel gives it to the bit in any summation order; a wrong one is far off. A path
// found wrong is not used in this process: the planner takes the next path of the weight's
// chain, or tern's own loops (linear.h, Chain in linear.cc), and the backend report names it.
//
// The check runs at planning (RequiredArenaBytes, Prepare), never while translating; it takes
// about a millisecond per path and its memory comes from the heap and goes back to it.
#pragma once

#include <cstddef>

#include "runtime/kernels/xnnpack/linear.h"

namespace tern::xnn {

// Whether `path`'s operator may be used on this CPU: false when it is known wrong here (qb4w on
// AVX512-VNNI, whose errors appear at some batch sizes only) or this process's check of it
// failed. Thread-safe; the first call per path runs the check. kReference, and paths XNNPACK does
// not support on this CPU (the planner finds that out itself): true.
bool PathTrusted(LinearPath path);

// The check itself, run now (not cached). corrupt: one weight of what XNNPACK is given is
// changed, for tests: the check must then fail for every path XNNPACK supports here.
enum class KernelVerdict { kRight, kWrong, kUnsupported };
KernelVerdict CheckKernel(LinearPath path, bool corrupt = false);

// The operators PathTrusted refused so far in this process, comma-separated (empty: none), for
// reports. Writes at most `size` bytes, always terminated.
void UntrustedPaths(char* out, size_t size);

}  // namespace tern::xnn
