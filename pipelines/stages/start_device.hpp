// Device stage: the plan's backend chosen and its GPUs started, with the
// job's frames read meanwhile. Starting the driver and a GPU's context
// takes 0.2-0.35 s on the H100 host, about what reading a 0.5 GB series
// takes, and neither needs the other.
#pragma once
#include "../../src/io/stack_io.hpp"
#include "../plan/stack_plan.hpp"

namespace stackalign {

struct DeviceStart {
    double seconds = 0;   // choosing the device and starting its GPUs
    int frames_read = 0;  // read into the frame cache meanwhile
};

// plan_device, then each of the plan's GPUs given its context, while the
// kept views that fit in the frame cache (`cache_bytes`) are read. Nothing
// is read ahead when the CPU was asked for: there is no wait to fill.
DeviceStart start_device(StackPlan& plan, const Config& cfg, const RunOptions& opt, FrameReader& frames,
                         std::size_t cache_bytes);

}  // namespace stackalign
