// oneDNN's convolutions on ResNet-18's (28x28) and LeNet's shapes, one thread: forward, backward-data and
// backward-weights per shape, including the reorders between NCHW tensors and oneDNN's blocked layouts
// (what using it as dptrain's CPU convolution would cost). The measurement behind docs/performance-notes.md,
// 9 ("oneDNN measured and not taken"); not built by CMake, since oneDNN is not a dependency:
//
//   apt-get install libdnnl-dev
//   g++ -O2 -fopenmp tests/bench/onednn_conv_check.cpp -o /tmp/onednn_conv -ldnnl
//   /tmp/onednn_conv 64            # blocked layouts (format any), batch 64
//   /tmp/onednn_conv 64 plain      # NCHW / OIHW as they are
//   /tmp/onednn_conv 256 any lenet # LeNet's two convolutions
//
// Compare with `build/bin/dptrain_bench --models resnet18 --only-layers --batch 64` (the conv rows), run
// alternately: this machine's speed drifts by 10% within minutes.
#include <omp.h>
#include <dnnl.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
struct S {
  int c, oc, h, k, s, p, count;
};
static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
int main(int argc, char **argv) {
  omp_set_num_threads(1);
  const int N = argc > 1 ? atoi(argv[1]) : 64;
  const bool plain = argc > 2 && argv[2][0] == 'p';
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const bool lenet = argc > 3 && std::string(argv[3]) == "lenet";
  // {in channels, out channels, size, kernel, stride, padding, how many in the network}
  const std::vector<S> resnet = {
      {1, 64, 28, 3, 1, 1, 1},    {64, 64, 28, 3, 1, 1, 4},   {64, 128, 28, 3, 2, 1, 1},
      {128, 128, 14, 3, 1, 1, 3}, {64, 128, 28, 1, 2, 0, 1},  {128, 256, 14, 3, 2, 1, 1},
      {256, 256, 7, 3, 1, 1, 3},  {128, 256, 14, 1, 2, 0, 1}, {256, 512, 7, 3, 2, 1, 1},
      {512, 512, 4, 3, 1, 1, 3},  {256, 512, 7, 1, 2, 0, 1}};
  const std::vector<S> lenet_shapes = {{1, 20, 28, 3, 1, 0, 1}, {20, 50, 13, 5, 1, 0, 1}};
  const std::vector<S> &shapes = lenet ? lenet_shapes : resnet;
  double total = 0, flops_total = 0;
  for (const S &s : shapes) {
    const int oh = (s.h + 2 * s.p - s.k) / s.s + 1;
    memory::dims src{N, s.c, s.h, s.h}, wei{s.oc, s.c, s.k, s.k}, dst{N, s.oc, oh, oh}, str{s.s, s.s},
        pad{s.p, s.p};
    auto t_any = plain ? tag::nchw : tag::any, w_any = plain ? tag::oihw : tag::any;
    memory::desc src_d(src, dt::f32, t_any), wei_d(wei, dt::f32, w_any), dst_d(dst, dt::f32, t_any);
    auto fwd_pd = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src_d, wei_d,
                                  dst_d, str, pad, pad),
        eng);
    auto bwd_d_pd = convolution_backward_data::primitive_desc(
        convolution_backward_data::desc(algorithm::convolution_direct, src_d, wei_d, dst_d, str, pad, pad),
        eng, fwd_pd);
    auto bwd_w_pd = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(algorithm::convolution_direct, src_d, wei_d, dst_d, str, pad, pad),
        eng, fwd_pd);
    // plain user memories + reorders (what dptrain's NCHW tensors would cost)
    memory u_src({src, dt::f32, tag::nchw}, eng), u_wei({wei, dt::f32, tag::oihw}, eng),
        u_dst({dst, dt::f32, tag::nchw}, eng);
    memory u_dsrc({src, dt::f32, tag::nchw}, eng), u_dwei({wei, dt::f32, tag::oihw}, eng),
        u_ddst({dst, dt::f32, tag::nchw}, eng);
    for (auto *m : {&u_src, &u_wei, &u_dst, &u_ddst}) {
      float *p = (float *)m->get_data_handle();
      size_t n = m->get_desc().get_size() / 4;
      for (size_t i = 0; i < n; ++i) p[i] = 1e-3f * (i % 17);
    }
    memory f_src(fwd_pd.src_desc(), eng), f_wei(fwd_pd.weights_desc(), eng), f_dst(fwd_pd.dst_desc(), eng);
    memory b_ddst(bwd_d_pd.diff_dst_desc(), eng), b_wei(bwd_d_pd.weights_desc(), eng),
        b_dsrc(bwd_d_pd.diff_src_desc(), eng);
    memory w_src(bwd_w_pd.src_desc(), eng), w_ddst(bwd_w_pd.diff_dst_desc(), eng),
        w_dwei(bwd_w_pd.diff_weights_desc(), eng);
    auto ro = [&](memory &a, memory &b) {
      if (a.get_desc() != b.get_desc()) reorder(a, b).execute(st, a, b);
    };
    auto pass = [&] {
      ro(u_src, f_src);
      ro(u_wei, f_wei);
      convolution_forward(fwd_pd).execute(
          st, {{DNNL_ARG_SRC, f_src}, {DNNL_ARG_WEIGHTS, f_wei}, {DNNL_ARG_DST, f_dst}});
      ro(f_dst, u_dst);
      ro(u_ddst, b_ddst);
      ro(u_wei, b_wei);
      convolution_backward_data(bwd_d_pd).execute(
          st, {{DNNL_ARG_DIFF_DST, b_ddst}, {DNNL_ARG_WEIGHTS, b_wei}, {DNNL_ARG_DIFF_SRC, b_dsrc}});
      ro(b_dsrc, u_dsrc);
      ro(u_src, w_src);
      ro(u_ddst, w_ddst);
      convolution_backward_weights(bwd_w_pd).execute(
          st, {{DNNL_ARG_SRC, w_src}, {DNNL_ARG_DIFF_DST, w_ddst}, {DNNL_ARG_DIFF_WEIGHTS, w_dwei}});
      ro(w_dwei, u_dwei);
      st.wait();
    };
    pass();
    const int reps = 3;
    double t0 = now();
    for (int r = 0; r < reps; ++r) pass();
    double t = (now() - t0) / reps;
    double fl = 3.0 * 2.0 * N * s.oc * oh * oh * s.c * s.k * s.k;
    printf("c=%3d oc=%3d h=%2d k=%d s=%d x%d: %7.1f ms  %6.1f GFLOP/s  impl %s\n", s.c, s.oc, s.h, s.k, s.s,
           s.count, t * 1e3, fl / t * 1e-9, fwd_pd.impl_info_str());
    total += t * s.count;
    flops_total += fl * s.count;
  }
  printf("total convs fwd+bwd, batch %d: %.1f ms, %.1f GFLOP/s\n", N, total * 1e3,
         flops_total / total * 1e-9);
}
