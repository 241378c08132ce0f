// DPT_CLONES: compile a function once per x86-64 level (an ELF ifunc picks the copy at load), so that its
// loops vectorize with AVX-512 or AVX2 where the CPU has them while the library runs on any x86-64. The
// copies compute the same values (the code fixes every rounding; -ffp-contract=off where fused operations
// would differ). Not in sanitizer builds: the ifunc resolver runs while the dynamic loader relocates, before
// the sanitizer's runtime exists, and ThreadSanitizer's instrumentation of it crashes there.
#pragma once

#if defined(__ELF__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define DPT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DPT_CLONES
#endif
