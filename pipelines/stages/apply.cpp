#include "apply.hpp"

#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "../../src/alignment/apply.hpp"
#include "../../src/core/interrupt.hpp"
#include "../../src/output/atomic_write.hpp"
#include "../plan/output_names.hpp"

namespace stackalign {

std::string write_aligned_stack(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                                StageTimes& times) {
    const std::string name = plan.output.format == "mrc" ? output_names::aligned_mrc : output_names::aligned_tiff;
    const auto t = Clock::now();
    double apply = 0;
    // Frames are moved a batch at a time, one frame per thread, while the
    // writer's thread writes the batch before: a frame's own serial work
    // (its mean, its copy) no longer waits for the others. A batch holds up
    // to kBatchBytes.
    constexpr std::size_t kBatchBytes = std::size_t(64) << 20;
    const std::size_t frame_bytes = std::size_t(plan.width) * plan.height * bytes_per_pixel(plan.type);
    const int batch = int(std::clamp<std::size_t>(kBatchBytes / std::max<std::size_t>(frame_bytes, 1), 1,
                                                  std::size_t(std::max(omp_get_max_threads(), 1))));
    write_atomically((std::filesystem::path(plan.output.dir) / name).string(), [&](const std::string& tmp) {
        FrameWriter w(tmp, plan.output.format, plan.input, plan.frames, plan.width, plan.height, plan.type);
        for (int first = 0; first < plan.frames; first += batch) {
            throw_if_interrupted();
            const int n = std::min(batch, plan.frames - first);
            std::vector<std::shared_ptr<const RawFrame>> read(n);
            for (int i = 0; i < n; ++i) read[i] = frames.read(first + i);
            std::vector<RawFrame> moved(n);
            const auto t_batch = Clock::now();
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
            for (int i = 0; i < n; ++i) moved[i] = apply_transform(*read[i], results[first + i].offset, read[i]->mean());
            apply += seconds_since(t_batch);
            for (RawFrame& f : moved) w.append(std::move(f));
        }
        w.close();
    });
    times.apply += apply;
    times.write += seconds_since(t) - apply;
    return name;
}

}  // namespace stackalign
