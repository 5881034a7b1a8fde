/// @file version.cuh
/// @brief hardact's version. CMake reads the numbers from here, so this is the one place to bump them.
#pragma once

#define HARDACT_VERSION_MAJOR 0
#define HARDACT_VERSION_MINOR 1
#define HARDACT_VERSION_PATCH 0

/// Single integer for preprocessor comparisons: MAJOR * 10000 + MINOR * 100 + PATCH.
#define HARDACT_VERSION (HARDACT_VERSION_MAJOR * 10000 + HARDACT_VERSION_MINOR * 100 + HARDACT_VERSION_PATCH)
