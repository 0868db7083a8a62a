#include "apply.hpp"

#include <filesystem>
#include <utility>

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
    write_atomically((std::filesystem::path(plan.output.dir) / name).string(), [&](const std::string& tmp) {
        FrameWriter w(tmp, plan.output.format, plan.input, plan.frames, plan.width, plan.height, plan.type);
        for (int k = 0; k < plan.frames; ++k) {
            throw_if_interrupted();
            const auto frame = frames.read(k);
            const auto t_k = Clock::now();
            RawFrame moved = apply_transform(*frame, results[k].offset, frame->mean());
            apply += seconds_since(t_k);
            w.append(std::move(moved));
        }
        w.close();
    });
    times.apply += apply;
    times.write += seconds_since(t) - apply;
    return name;
}

}  // namespace stackalign
