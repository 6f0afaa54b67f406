// Weight quantization done offline (design.md "Quantization"):
//   f16  - IEEE half, round to nearest even.
//   int8 - per output channel (row) symmetric: scale = max|w_row| / 127, q in [-127, 127];
//          the layout XNNPACK's qd8_f32_qc8w fully-connected consumes.
//   int4 - symmetric per block of `group_size` columns of a row: scale = max|w_block| / 7
//          (also when the block spans the whole row); q in [-7, 7], two's-complement nibbles,
//          low first. Per row (group_size 0): the scale in [max|w| / 14, max|w| / 7] with the
//          least squared error (quantize.cc's RowScaleInt4: one scale for a whole row clips
//          its few largest weights to round the many small ones finer; 30% less error than
//          max-abs on Gaussian rows of 512). XNNPACK's per-row int4 kernel (qc4w) streams a
//          decode step at int8's bandwidth, its blockwise one (qb4w) computes at about half
//          of it: tern bench --linear.
#pragma once

#include <cstdint>
#include <vector>

#include "converter/host_tensor.h"
#include "runtime/core/dtype.h"

namespace tern::convert {

struct EncodedTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  std::vector<float> scales;  // quantized dtypes
  int64_t group_size = 0;
};

// Encodes a tensor in `dtype`; quantized dtypes need rank >= 2 (rows = dims[0]).
EncodedTensor Encode(const HostTensor& tensor, DType dtype, int64_t group_size = 0);

// Values the encoded tensor stands for (for error reports and tests).
std::vector<float> Decode(const EncodedTensor& tensor);

}  // namespace tern::convert
