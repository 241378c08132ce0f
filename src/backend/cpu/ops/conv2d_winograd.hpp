// conv2d's 3x3, stride 1, padding 1 convolutions in float32 and bf16 (ResNet's), as Winograd's minimal
// filtering F(2x2, 3x3): each 2x2 output tile costs 16 multiplications per input channel instead of 36, so
// the three GEMMs of a training step do 2.25x less work. Forward, the data gradient and the weight gradient
// are all Winograd: backward is the exact reverse of forward's arithmetic (docs/performance-notes.md, 11).
#pragma once

#include <cstddef>

#include "interface/op_call.h"

namespace dpt::cpu::winograd {

// True when the call's convolution runs here: a 3x3 kernel, stride 1, padding 1, at least kMinChannels input
// and output channels (below that the transforms cost more than the multiplications they save), and
// float32 or bf16 matrix products; never when the environment has DPTRAIN_CONV_KERNEL=im2col. With bf16 the
// transforms stay float32 and the 16 point GEMMs take bfloat16 inputs: what is rounded is the transformed
// tiles and weights, not the tensors (2x im2col's distance from float32, docs/precision.md). fp16 keeps
// im2col: the transforms' sums could leave float16's range where the tensors do not.
bool applies(const dpt_op_call &call);

// With bf16 the transformed tiles (V) and output gradients (dM), which only GEMMs read, are stored as
// bfloat16 where the transforms can round them (AVX512_BF16): the GEMM rounds its inputs to bfloat16
// anyway, so the bits are float32 storage's, at half the bytes written and read. Off: float32 storage. For
// tests and benchmarks.
void set_bf16_operands(bool on);

size_t scratch_bytes(const dpt_op_call &call);
void forward(const dpt_op_call &call);
void backward(const dpt_op_call &call);

}  // namespace dpt::cpu::winograd
