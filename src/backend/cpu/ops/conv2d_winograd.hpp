// conv2d's 3x3, stride 1, padding 1 convolutions in float32 (ResNet's), as Winograd's minimal filtering
// F(2x2, 3x3): each 2x2 output tile costs 16 multiplications per input channel instead of 36, so the three
// GEMMs of a training step do 2.25x less work. Forward, the data gradient and the weight gradient are all
// Winograd: backward is the exact reverse of forward's arithmetic (docs/performance-notes.md, 11).
#pragma once

#include <cstddef>

#include "interface/op_call.h"

namespace dpt::cpu::winograd {

// True when the call's convolution runs here: a 3x3 kernel, stride 1, padding 1, at least kMinChannels input
// and output channels (below that the transforms cost more than the multiplications they save), and
// float32 matrix products (bf16/fp16 inputs would round the transformed tiles, not the tensors); never when
// the environment has DPTRAIN_CONV_KERNEL=im2col.
bool applies(const dpt_op_call &call);

size_t scratch_bytes(const dpt_op_call &call);
void forward(const dpt_op_call &call);
void backward(const dpt_op_call &call);

}  // namespace dpt::cpu::winograd
