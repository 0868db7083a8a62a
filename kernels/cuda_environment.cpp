// The CUDA driver's settings a program chooses through the environment:
// plain C++, the same in a build without nvcc (where nothing reads them).
#include <cstdlib>

#include "cuda_api.hpp"

namespace stackalign::cuda {

namespace {
constexpr const char* kWorkQueues = "CUDA_DEVICE_MAX_CONNECTIONS";
}

void set_work_queues() { setenv(kWorkQueues, "2", /*overwrite=*/0); }

std::string work_queues() {
    const char* v = std::getenv(kWorkQueues);
    return v ? v : "";
}

}  // namespace stackalign::cuda
