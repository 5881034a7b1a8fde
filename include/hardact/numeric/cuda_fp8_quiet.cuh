/// @file cuda_fp8_quiet.cuh
/// @brief The toolkit's <cuda_fp8.h>, included as a system header (only from hardact/fp8.cuh).
///
/// Some toolkits' fp8 header warns under a consumer's strict flags (-Wconversion) in the toolkit's
/// own code; a system header's warnings are not reported, which is how CCCL includes it too. Only
/// this file is marked, so hardact's own fp8 code (hardact/fp8.cuh) is still checked.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC system_header
#elif defined(_MSC_VER)
#pragma system_header
#endif

#include <cuda_fp8.h>
