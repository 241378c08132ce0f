#include "graph/activation_store.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dpt {

namespace {

// 16-bit values per float of a DeviceBuffer.
size_t floats_for_halves(size_t count) {
  return (count + 1) / 2;
}

}  // namespace

// The working slots are planned once, like registers: in forward a stored root holds a slot from the node
// that makes it to its last forward reader (the output's slot is taken before the inputs' are given back, so
// a node never writes over what it reads); in backward each node finds its stored inputs and output in the
// slot that still holds them (forward's last tenants, or what an earlier backward node widened), or widens
// them into free slots. A slot is as wide as the widest tensor it ever holds; each tensor takes the
// narrowest free slot that is wide enough, else the widest free one (which grows), else a new one. Which
// roots are stored: those of at most `largest` floats per sample.
ActivationStore::Plan ActivationStore::plan(size_t largest, const std::vector<bool> &backward) const {
  const std::vector<Node> &nodes = spec_.nodes();
  const size_t tensors = spec_.tensors().size();
  auto width = [&](size_t t) { return spec_.tensors()[t].shape.size(); };
  Plan p;
  p.stored.assign(tensors, false);
  p.forward_slot.assign(tensors, SIZE_MAX);
  p.done.resize(nodes.size());
  p.backward_slots.resize(nodes.size());
  p.copied.assign(tensors, false);
  // One of the free slots (indices into p.widths) for a tensor of w floats per sample; a new slot if none.
  auto take = [&](std::vector<size_t> &free, size_t w) {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < free.size(); ++i) {
      const size_t have = p.widths[free[i]];
      const bool fits = have >= w, best_fits = best != SIZE_MAX && p.widths[free[best]] >= w;
      if (best == SIZE_MAX || (fits && (!best_fits || have < p.widths[free[best]])) ||
          (!fits && !best_fits && have > p.widths[free[best]]))
        best = i;
    }
    size_t slot;
    if (best == SIZE_MAX) {
      slot = p.widths.size();
      p.widths.push_back(0);
    } else {
      slot = free[best];
      free.erase(free.begin() + long(best));
    }
    p.widths[slot] = std::max(p.widths[slot], w);
    return slot;
  };
  std::vector<size_t> last_reader(tensors, SIZE_MAX);
  for (size_t j = 0; j < nodes.size(); ++j) {
    const Node &node = nodes[j];
    if (node.layout.view) continue;
    const size_t out = node.output;  // (a root: not a view)
    p.stored[out] = out != root_[spec_.output_tensor()] && width(out) <= largest;
    if (p.stored[out]) last_reader[out] = j;
    for (size_t t : node.inputs)
      if (p.stored[root_[t]]) last_reader[root_[t]] = j;
  }
  std::vector<size_t> free_slots;
  for (size_t j = 0; j < nodes.size(); ++j) {
    const Node &node = nodes[j];
    if (node.layout.view) continue;
    if (p.stored[node.output]) p.forward_slot[node.output] = take(free_slots, width(node.output));
    for (size_t t = 0; t < tensors; ++t)
      if (p.stored[t] && last_reader[t] == j) {
        p.done[j].push_back(t);
        free_slots.push_back(p.forward_slot[t]);
      }
  }
  // Backward, in its order: a slot still holding a tensor's float32 values (from forward's last nodes, or
  // from the node before) gives them without widening; the others take free slots and are widened there.
  std::vector<size_t> resident(p.widths.size(), SIZE_MAX);  // per slot: the root whose values it holds
  for (size_t t = 0; t < tensors; ++t)
    if (p.stored[t]) resident[p.forward_slot[t]] = t;  // (forward's last tenant of each slot)
  for (size_t j = nodes.size(); j-- > 0;) {
    if (!backward[j]) continue;
    std::vector<size_t> roots;  // the node's distinct stored roots, widest first
    for (size_t t : nodes[j].inputs) roots.push_back(root_[t]);
    roots.push_back(root_[nodes[j].output]);
    std::sort(roots.begin(), roots.end(),
              [&](size_t a, size_t b) { return width(a) != width(b) ? width(a) > width(b) : a < b; });
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    roots.erase(std::remove_if(roots.begin(), roots.end(), [&](size_t r) { return !p.stored[r]; }),
                roots.end());
    std::vector<size_t> free;  // slots holding none of this node's roots
    for (size_t s = 0; s < resident.size(); ++s)
      if (std::find(roots.begin(), roots.end(), resident[s]) == roots.end()) free.push_back(s);
    for (size_t r : roots) {
      const auto here = std::find(resident.begin(), resident.end(), r);
      if (here != resident.end()) {
        p.backward_slots[j].push_back({r, size_t(here - resident.begin()), false});
        continue;
      }
      const size_t slot = take(free, width(r));
      if (slot >= resident.size()) resident.resize(slot + 1, SIZE_MAX);
      resident[slot] = r;
      p.backward_slots[j].push_back({r, slot, true});
      p.copied[r] = true;
    }
  }
  return p;
}

size_t ActivationStore::bytes_per_sample(const Plan &p) const {
  size_t bytes = 0;
  for (size_t w : p.widths) bytes += w * sizeof(float);
  for (size_t t = 1; t < spec_.tensors().size(); ++t) {
    if (root_[t] != t) continue;
    const size_t size = spec_.tensors()[t].shape.size();
    bytes += p.copied[t] ? size * sizeof(uint16_t) : p.stored[t] ? 0 : size * sizeof(float);
  }
  return bytes;
}

// The working slots are as wide as the widest stored tensor: storing the widest ones may cost more slot
// room than it saves (LeNet: its two widest tensors are most of its activations). Of the plans that store
// every tensor up to some width, the one with the fewest bytes (storing none is float32's).
ActivationStore::ActivationStore(const ModelSpec &spec, const std::vector<size_t> &root,
                                 const std::vector<bool> &backward, DeviceKernels &kernels, DType dtype)
    : spec_(spec), root_(root), kernels_(kernels), dtype_(dtype) {
  DPT_REQUIRE(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16,
              DPT_ERROR_INVALID_ARGUMENT, "the activation dtype must be float32, bfloat16 or float16");
  plan_ = plan(0, backward);
  own_.resize(spec.tensors().size());
  data_.assign(spec.tensors().size(), nullptr);
  if (dtype == DType::kF32) return;
  std::vector<size_t> widths;
  for (const TensorInfo &t : spec.tensors()) widths.push_back(t.shape.size());
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  size_t best = bytes_per_sample(plan_);
  for (const size_t w : widths) {
    Plan candidate = plan(w, backward);
    const size_t bytes = bytes_per_sample(candidate);
    if (bytes < best) best = bytes, plan_ = std::move(candidate);
  }
}

void ActivationStore::reserve(size_t n, float *input) {
  const std::vector<TensorInfo> &tensors = spec_.tensors();
  data_[0] = input;
  stores_.clear();
  work_.clear();
  for (size_t t = 1; t < tensors.size(); ++t) {
    own_[t] = DeviceBuffer();
    if (root_[t] == t && !plan_.stored[t]) own_[t] = DeviceBuffer(kernels_.memory(), floats(t, n));
  }
  if (dtype_ != DType::kF32) {
    stores_.resize(tensors.size());
    for (size_t t = 1; t < tensors.size(); ++t)
      if (plan_.copied[t]) stores_[t] = DeviceBuffer(kernels_.memory(), floats_for_halves(floats(t, n)));
    for (size_t w : plan_.widths) work_.emplace_back(kernels_.memory(), n * w);
  }
  for (size_t t = 1; t < tensors.size(); ++t)
    if (root_[t] == t && !plan_.stored[t]) data_[t] = own_[t].data();
  begin_forward();
}

void ActivationStore::begin_forward() {
  for (size_t t = 1; t < plan_.stored.size(); ++t)
    if (plan_.stored[t]) data_[t] = work_[plan_.forward_slot[t]].data();
}

void ActivationStore::after_forward(size_t node, size_t n, bool training) {
  if (stores_.empty()) return;
  if (!training || n == 0) return;
  for (size_t t : plan_.done[node])
    if (plan_.copied[t]) kernels_.narrow(data_[t], stores_[t].data(), floats(t, n), dtype_);
}

void ActivationStore::before_backward(size_t node, size_t n) {
  for (const Use &u : plan_.backward_slots[node]) {
    data_[u.root] = work_[u.slot].data();
    if (u.widen && n > 0) kernels_.widen(stores_[u.root].data(), data_[u.root], floats(u.root, n), dtype_);
  }
}

uint64_t ActivationStore::allocated_bytes() const {
  uint64_t floats = 0;
  for (const auto *buffers : {&own_, &stores_, &work_})
    for (const DeviceBuffer &b : *buffers) floats += b.size();
  return floats * sizeof(float);
}

}  // namespace dpt
