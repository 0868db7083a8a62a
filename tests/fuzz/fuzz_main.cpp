// One libFuzzer binary per target: built with -DFUZZ_TARGET=tiff (mrc,
// config, points) by `make fuzz`.
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::FUZZ_TARGET(data, size);
    return 0;
}
