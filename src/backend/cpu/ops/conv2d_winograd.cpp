// Winograd F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015).
//
// A 2x2 output tile y of one output channel is A^T [sum over input channels c of U_c . V_c] A, where
// U_c = G g_c G^T is the 3x3 kernel g_c transformed to 4x4 and V_c = B^T d_c B the 4x4 input patch d_c
// around the tile (. is the elementwise product). Over a group of samples, each of the 16 points p of the
// 4x4 transform is one GEMM: M_p [out_c, tiles] = U_p [out_c, c] V_p [c, tiles]. Backward is forward's
// arithmetic reversed: dM = A dY A^T, dU_p += dM_p V_p^T (then dW += G^T dU G), dV_p = U_p^T dM_p (then
// dX += B dV B^T, the tiles' patches overlapping by two rows and columns).
//
// The transforms (conv2d_winograd_transforms: portable and AVX-512, the same bits) only add, subtract and
// halve. Tiles past the plane's right or bottom edge (odd sizes) read zeros and their outputs are dropped.
#include "backend/cpu/ops/conv2d_winograd.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/ops/blas.hpp"
#include "backend/cpu/ops/conv2d_winograd_transforms.hpp"
#include "backend/cpu/ops/op_tensors.hpp"

namespace dpt::cpu::winograd {

namespace {

// Measured on ResNet-18 (docs/performance-notes.md, 11): below 16 channels the transforms cost more than
// the multiplications they save.
constexpr size_t kMinChannels = 16;
// Tiles per GEMM: a group of samples with about this many tiles, so that small planes (ResNet's last stage:
// four tiles a sample) still make GEMMs wide enough to run at the BLAS kernel's rate.
constexpr size_t kGroupTiles = 512;
constexpr size_t kPoints = 16;  // the 4x4 points of a transformed tile

struct Shape {
  size_t c, out_c;
  Plane image;  // the output plane is as large as the input's
  size_t tiles() const { return image.tiles(); }
  size_t plane() const { return image.size(); }
  size_t group() const { return (kGroupTiles + tiles() - 1) / tiles(); }
};

// The distance between two points' planes of U, V and M: their floats, plus 16 (64 bytes). Without it
// the 16 planes lie a multiple of 4 KiB apart whenever the planes do (ResNet's 64 x 64 weights, 64 channels
// of 512 tiles), all in one set of the L1 cache, and a transform's 16 streams evicted each other.
constexpr size_t kPointPad = 16;
size_t u_stride(const Shape &s) {
  return s.out_c * s.c + kPointPad;
}
size_t v_stride(const Shape &s, size_t tiles) {
  return s.c * tiles + kPointPad;
}
size_t m_stride(const Shape &s, size_t tiles) {
  return s.out_c * tiles + kPointPad;
}

Shape shape_of(const dpt_op_call &call) {
  const dpt_tensor &x = call.inputs[0];
  return Shape{size_t(x.dims[0]), size_t(call.ints[0]), Plane{size_t(x.dims[1]), size_t(x.dims[2])}};
}

// The packed transformed weights: U_p as the GEMM's A operand, for each point p (forward: [out_c, c];
// backward: U_p^T, [c, out_c]), each in packed_bytes(s) (a multiple of 64); dU [16, out_c, c] in float32;
// V [16, c, tiles of a group] (backward: then its gradient), M [16, out_c, tiles of a group] (backward:
// the output gradient's transform), each point's plane u_stride / v_stride / m_stride floats after the
// previous one; rows for the transforms of one plane; room for the kernels of kMaxChunk rows of U_p (or of
// U_p^T: gathered first) transformed at a time.
constexpr size_t kMaxChunk = 32;  // the largest panel height of a GEMM kernel (packed_a_row_unit)

struct Scratch {
  unsigned char *packed;
  size_t packed_bytes;  // per point
  float *du, *v, *m, *rows, *chunk, *gathered;
  bool bf16;  // V and dM stored as bfloat16 (in the room of their floats), M and dV float32
  uint16_t *v16() const { return reinterpret_cast<uint16_t *>(v); }
  uint16_t *m16() const { return reinterpret_cast<uint16_t *>(m); }
};

std::atomic<bool> bf16_operands_on{true};

bool bf16_operands(gemm::Precision p) {
  return p == gemm::Precision::kBF16 && transforms().input_bf16 != nullptr &&
         bf16_operands_on.load(std::memory_order_relaxed);
}

size_t packed_bytes(const Shape &s, gemm::Precision p) {
  const size_t bytes = std::max(gemm::packed_a_bytes(p, s.out_c, s.c), gemm::packed_a_bytes(p, s.c, s.out_c));
  return (bytes + 63) / 64 * 64;
}

// A chunk of kMaxChunk rows of U_p for every p: forward kMaxChunk x c, backward out_c x kMaxChunk.
size_t chunk_stride(const Shape &s) {
  return kMaxChunk * std::max(s.out_c, s.c) + kPointPad;
}

size_t scratch_floats(const Shape &s, gemm::Precision p) {
  const size_t group_tiles = s.group() * s.tiles();
  return kPoints * packed_bytes(s, p) / sizeof(float) + kPoints * u_stride(s) +
         kPoints * (v_stride(s, group_tiles) + m_stride(s, group_tiles)) +
         plane_rows_floats(s.image, s.group()) + kPoints * chunk_stride(s) + s.out_c * kMaxChunk * 9;
}

Scratch scratch_of(const dpt_op_call &call, const Shape &s) {
  // The op's scratch is 64-byte aligned (the packed panels come first).
  unsigned char *base = static_cast<unsigned char *>(call.scratch);
  const size_t group_tiles = s.group() * s.tiles();
  Scratch r{};
  r.packed = base;
  r.packed_bytes = packed_bytes(s, blas::precision_of(call));
  r.du = reinterpret_cast<float *>(base + kPoints * r.packed_bytes);
  r.v = r.du + kPoints * u_stride(s);
  r.m = r.v + kPoints * v_stride(s, group_tiles);
  r.rows = r.m + kPoints * m_stride(s, group_tiles);
  r.chunk = r.rows + plane_rows_floats(s.image, s.group());
  r.gathered = r.chunk + kPoints * chunk_stride(s);
  r.bf16 = bf16_operands(blas::precision_of(call));
  return r;
}

unsigned char *packed_u(const Scratch &sc, size_t point) {
  return sc.packed + point * sc.packed_bytes;
}

// Rows of U_p a chunk: the kernel's panel height (OpenBLAS, which takes any: 16).
size_t chunk_rows(gemm::Precision p) {
  const size_t unit = gemm::packed_a_row_unit(p);
  return unit == 1 ? 16 : unit;
}

// U_p = G g G^T packed as the forward GEMMs' A [out_c, c], chunk by chunk of output channels: their kernels
// (contiguous in W [out_c, c, 3, 3]) transformed into the chunk's room, which stays in the cache, and
// packed from there, so that U is never written whole in float32.
void pack_weights(const Shape &s, const float *w, gemm::Precision p, const Scratch &sc) {
  for (size_t q = 0; q < kPoints; ++q) gemm::begin_packed_a(p, false, s.out_c, s.c, packed_u(sc, q));
  const size_t chunk = chunk_rows(p);
  for (size_t o = 0; o < s.out_c; o += chunk) {
    const size_t rows = std::min(chunk, s.out_c - o);
    transforms().weights(rows * s.c, w + o * s.c * 9, sc.chunk, chunk_stride(s));
    for (size_t q = 0; q < kPoints; ++q)
      gemm::pack_a_rows(packed_u(sc, q), sc.chunk + q * chunk_stride(s), s.c, o, rows);
  }
}

// U_p^T [c, out_c] packed as the backward GEMMs' A, chunk by chunk of input channels: their kernels of
// every output channel gathered ([out_c, rows, 3, 3]), transformed, and packed transposed.
void pack_weights_transposed(const Shape &s, const float *w, gemm::Precision p, const Scratch &sc) {
  for (size_t q = 0; q < kPoints; ++q) gemm::begin_packed_a(p, true, s.c, s.out_c, packed_u(sc, q));
  const size_t chunk = chunk_rows(p);
  for (size_t c = 0; c < s.c; c += chunk) {
    const size_t rows = std::min(chunk, s.c - c);
    for (size_t o = 0; o < s.out_c; ++o)
      std::memcpy(sc.gathered + o * rows * 9, w + (o * s.c + c) * 9, rows * 9 * sizeof(float));
    transforms().weights(s.out_c * rows, sc.gathered, sc.chunk, chunk_stride(s));
    for (size_t q = 0; q < kPoints; ++q)
      gemm::pack_a_rows(packed_u(sc, q), sc.chunk + q * chunk_stride(s), rows, c, rows);
  }
}

// dU_p (+)= dM_p V_p^T for the 16 points of a group of `tiles` tiles (the first group stores its product).
void weight_gradient_per_point(const Shape &s, const Scratch &sc, gemm::Precision p, size_t tiles, bool add) {
  const size_t ms = m_stride(s, tiles), vs = v_stride(s, tiles);
  for (size_t q = 0; q < kPoints; ++q) {
    float *du = sc.du + q * u_stride(s);
    if (sc.bf16)
      gemm::gemm_bf16(false, true, s.out_c, s.c, tiles, 1.0f, sc.m16() + q * ms, tiles, sc.v16() + q * vs,
                      tiles, add ? 1.0f : 0.0f, du, s.c);
    else
      blas::gemm(false, true, s.out_c, s.c, tiles, 1.0f, sc.m + q * ms, tiles, sc.v + q * vs, tiles,
                 add ? 1.0f : 0.0f, du, s.c, p);
  }
}

// C_p = U_p B_p (forward: M = U V) or U_p^T B_p (backward: dV = U^T dM) for the 16 points, the packed U_p;
// B float32 or (sc.bf16) bfloat16.
template <typename T>
void packed_gemm_per_point(const Scratch &sc, size_t n, const T *b, size_t b_block, float *c,
                           size_t c_block) {
  for (size_t q = 0; q < kPoints; ++q)
    gemm::gemm_packed_a(packed_u(sc, q), false, n, 1.0f, b + q * b_block, n, 0.0f, c + q * c_block, n);
}

// V for the g samples from first: for each channel, its planes of the g samples (C planes apart), their
// tiles side by side. Channel outer (here and in the other loops over a group): consecutive channels extend
// the same 16 runs of V or M.
void transform_group_input(const dpt_op_call &call, const Shape &s, const Scratch &sc, size_t first,
                           size_t g) {
  const size_t tiles = g * s.tiles(), stride = v_stride(s, tiles);
  const Planes planes{g, s.c * s.plane()};
  for (size_t c = 0; c < s.c; ++c) {
    const float *x = in(call) + (first * s.c + c) * s.plane();
    if (sc.bf16)
      transforms().input_bf16(s.image, planes, x, sc.v16() + c * tiles, stride, sc.rows);
    else
      transforms().input(s.image, planes, x, sc.v + c * tiles, stride, sc.rows);
  }
}

// C_p = U_p B_p for a group of n tiles: forward M = U V (b = V), backward dV = U^T dM (b = dM, c in V's
// room); b read as bfloat16 where the scratch holds it so.
void multiply_group(const Scratch &sc, size_t n, const float *b, size_t b_block, float *c, size_t c_block) {
  if (sc.bf16)
    packed_gemm_per_point(sc, n, reinterpret_cast<const uint16_t *>(b), b_block, c, c_block);
  else
    packed_gemm_per_point(sc, n, b, b_block, c, c_block);
}

// dM = A dY A^T for the g samples from first.
void transform_group_output_gradient(const dpt_op_call &call, const Shape &s, const Scratch &sc, size_t first,
                                     size_t g) {
  const size_t tiles = g * s.tiles(), stride = m_stride(s, tiles);
  const Planes planes{g, s.out_c * s.plane()};
  for (size_t o = 0; o < s.out_c; ++o) {
    const float *g_planes = dy(call) + (first * s.out_c + o) * s.plane();
    if (sc.bf16)
      transforms().output_gradient_bf16(s.image, planes, g_planes, sc.m16() + o * tiles, stride, sc.rows);
    else
      transforms().output_gradient(s.image, planes, g_planes, sc.m + o * tiles, stride, sc.rows);
  }
}

}  // namespace

void set_bf16_operands(bool on) {
  bf16_operands_on.store(on, std::memory_order_relaxed);
}

bool applies(const dpt_op_call &call) {
  // DPTRAIN_CONV_KERNEL=im2col: every convolution on im2col (the bits of versions before this path, and the
  // "before" of a side-by-side measurement in one build).
  static const bool pinned_im2col = [] {
    const char *name = std::getenv("DPTRAIN_CONV_KERNEL");
    return name != nullptr && std::strcmp(name, "im2col") == 0;
  }();
  if (pinned_im2col) return false;
  const dpt_tensor &x = call.inputs[0];
  return call.ints[1] == 3 && call.ints[2] == 1 && call.ints[3] == 1 && x.dims[0] >= int64_t(kMinChannels) &&
         call.ints[0] >= int64_t(kMinChannels) && blas::precision_of(call) != gemm::Precision::kF16;
}

size_t scratch_bytes(const dpt_op_call &call) {
  return scratch_floats(shape_of(call), blas::precision_of(call)) * sizeof(float);
}

void forward(const dpt_op_call &call) {
  const Shape s = shape_of(call);
  const Scratch sc = scratch_of(call, s);
  const float *b = param(call, 1);
  const gemm::Precision p = blas::precision_of(call);
  pack_weights(s, param(call, 0), p, sc);
  for (size_t first = 0; first < n(call); first += s.group()) {
    const size_t g = std::min(s.group(), n(call) - first), tiles = g * s.tiles();
    transform_group_input(call, s, sc, first, g);
    multiply_group(sc, tiles, sc.v, v_stride(s, tiles), sc.m, m_stride(s, tiles));
    for (size_t o = 0; o < s.out_c; ++o)
      transforms().output(s.image, Planes{g, s.out_c * s.plane()}, sc.m + o * tiles, m_stride(s, tiles),
                          b != nullptr ? b[o] : 0.0f, out(call) + (first * s.out_c + o) * s.plane(), sc.rows);
  }
}

void backward(const dpt_op_call &call) {
  const Shape s = shape_of(call);
  const Scratch sc = scratch_of(call, s);
  float *dw = param_grad(call, 0), *d = dx(call);
  const gemm::Precision p = blas::precision_of(call);
  // dU is the first group's product, then each later group's added (an empty slice: zero). Not zeroed and
  // added into: that wrote and read dU once more (16 MB for a 512-channel layer), and the first product
  // plus a zero is the product itself (the micro-kernels' sums start from +0, so never -0).
  if (dw != nullptr && n(call) == 0) std::fill(sc.du, sc.du + kPoints * u_stride(s), 0.0f);
  if (d != nullptr) pack_weights_transposed(s, param(call, 0), p, sc);
  for (size_t first = 0; first < n(call); first += s.group()) {
    const size_t g = std::min(s.group(), n(call) - first), tiles = g * s.tiles();
    transform_group_output_gradient(call, s, sc, first, g);
    if (dw != nullptr) {
      transform_group_input(call, s, sc, first, g);
      weight_gradient_per_point(s, sc, p, tiles, first > 0);
    }
    if (d != nullptr) {
      multiply_group(sc, tiles, sc.m, m_stride(s, tiles), sc.v, v_stride(s, tiles));
      for (size_t c = 0; c < s.c; ++c)
        transforms().input_gradient(s.image, Planes{g, s.c * s.plane()}, sc.v + c * tiles, v_stride(s, tiles),
                                    d + (first * s.c + c) * s.plane(), sc.rows);
    }
  }
  if (dw != nullptr) transforms().weight_gradient(s.out_c * s.c, sc.du, u_stride(s), dw);
}

}  // namespace dpt::cpu::winograd
