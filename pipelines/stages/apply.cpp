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
    // Each frame is moved by all threads at once (rows in parallel) and
    // queued for the writer's thread, which writes it while the next ones
    // are moved. One frame per thread left the last frames of a batch on a
    // few threads and made the writer wait for the slowest. The fill (the
    // frame's mean, one serial sum) is made for a batch of frames at once,
    // one frame per thread, as each is read back (from the cache, or from
    // the file when the series is larger than memory).
    const int batch = std::max(omp_get_max_threads(), 1);
    write_atomically((std::filesystem::path(plan.output.dir) / name).string(), [&](const std::string& tmp) {
        FrameWriter w(tmp, plan.output.format, plan.input, plan.frames, plan.width, plan.height, plan.type);
        for (int first = 0; first < plan.frames; first += batch) {
            throw_if_interrupted();
            const int n = std::min(batch, plan.frames - first);
            const auto t_batch = Clock::now();
            std::vector<std::shared_ptr<const RawFrame>> read(n);
            std::vector<double> fill(n);
#pragma omp parallel for schedule(dynamic, 1) if (n > 1)
            for (int i = 0; i < n; ++i) {
                read[i] = frames.read(first + i);
                fill[i] = read[i]->mean();
            }
            apply += seconds_since(t_batch);
            for (int i = 0; i < n; ++i) {
                const auto t_frame = Clock::now();
                RawFrame moved = apply_transform(*read[i], results[first + i].offset, fill[i]);
                apply += seconds_since(t_frame);
                w.append(std::move(moved));
            }
        }
        w.close();
    });
    times.apply += apply;
    times.write += seconds_since(t) - apply;
    return name;
}

}  // namespace stackalign
