// Divides a batch among devices in proportion to weights, by largest remainder (ties go to the lower
// device index), so every sample is assigned exactly once and the split is deterministic. The arithmetic
// is exact: each weight is first put on an integer scale, n_i = round(w_i * 2^(40 - e)) where 2^e is the
// power of two just above the largest weight (exact for every weight at least 2^-16 of the largest, which
// covers integer weights below 2^40 and every float weight within that range); device i then gets
// floor(batch * n_i / N) samples, N = sum of n_i, and the samples left over (fewer than the devices) go
// one each to the largest remainders batch * n_i mod N, ties to the lower index.
#pragma once

#include <cstddef>
#include <vector>

namespace dpt {

// weights: positive and finite. Equal weights give the even split: the first (batch % K) devices get one
// more.
std::vector<size_t> split_batch(size_t batch, const std::vector<double> &weights);

// Weights from measured seconds per sample: proportional to speed, in whole twentieths of the fastest
// (1 to 20) so that timing noise rarely changes the split.
std::vector<double> weights_from_speed(const std::vector<double> &seconds_per_sample);

// Caps a split by what each device has room for (samples; SIZE_MAX = no limit): a slice above its room
// is cut to it and the samples cut are handed, in device order, to devices with room to spare. When the
// devices hold fewer samples than the batch together, the split is returned unchanged (the step then
// fails with the device's out-of-memory error).
std::vector<size_t> cap_split(std::vector<size_t> counts, const std::vector<size_t> &room);

}  // namespace dpt
