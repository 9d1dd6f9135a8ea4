// A golden-tree probe (tests/layers/CMakeLists.txt): compiled with gradkit_golden's include roots, it includes a
// golden header (allowed) and one of the library's internals, which must fail with "No such file".
#include "golden/flash_attention.h"
#include "src/core/parallel.h"

int gradkitGoldenProbe() { return 0; }
