#include "apply.hpp"

#include <omp.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "../../kernels/apply/frame_mover.hpp"
#include "../../src/core/interrupt.hpp"
#include "../../src/core/workers.hpp"
#include "../../src/output/atomic_write.hpp"
#include "../plan/output_names.hpp"

namespace stackalign {

void move_aligned_frames(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                         StageTimes& times, const AlignedFrameSink& to) {
    const auto t = Clock::now();
    // No writer's thread to leave a core to: run_tasks takes them all.
    const std::unique_ptr<FrameMover> mover = make_frame_mover(plan.device, omp_get_max_threads());
    run_tasks(plan.frames, [&](int i) {
        throw_if_interrupted();
        const std::shared_ptr<const RawFrame> in = frames.read(i);
        to(i, mover->move(*in, results[i].offset, in->mean()));
    });
    times.apply += seconds_since(t);
}

std::string write_aligned_stack(const StackPlan& plan, FrameReader& frames, const std::vector<FrameResult>& results,
                                StageTimes& times, const AlignedFrameSink& also) {
    const std::string name = plan.output.format == "mrc" ? output_names::aligned_mrc : output_names::aligned_tiff;
    const auto t = Clock::now();
    double apply = 0;
    // Frames are moved (and made ready for the file: an MRC section's
    // conversion and statistics) one per thread, in order, each queued for
    // the writer's thread as soon as the frames before it are: no batch
    // waits for its slowest frame, and the writer's thread only writes. On
    // the H100 host this was twice as fast as moving each frame with all
    // threads (rows in parallel), which made every frame wait for the
    // thread that shared its core with the writer. That thread gets a core
    // of its own here.
    const int threads = omp_get_max_threads() >= 4 ? omp_get_max_threads() - 1 : omp_get_max_threads();
    // On the CUDA backend the GPU resamples the frames that cost the host
    // most (frame_mover.hpp; the same bytes), which leaves the host's cores
    // to the reads, the MRC conversion and the writer.
    const std::unique_ptr<FrameMover> mover = make_frame_mover(plan.device, threads);
    write_atomically((std::filesystem::path(plan.output.dir) / name).string(), [&](const std::string& tmp) {
        FrameWriter w(tmp, plan.output.format, plan.input, plan.frames, plan.width, plan.height, plan.type);
        // The first error, kept from inside a catch block: no exception may
        // leave the loop, and every frame still passes the ordered block.
        std::exception_ptr failure;
        std::atomic<bool> failed{false};
        auto keep_first_error = [&] {
#pragma omp critical(apply_failure)
            if (!failure) failure = std::current_exception();
            failed = true;
        };
        double queued = 0;  // waiting for room in the writer's queue: writing's time
        const auto t_frames = Clock::now();
#pragma omp parallel for ordered schedule(dynamic, 1) num_threads(threads)
        for (int i = 0; i < plan.frames; ++i) {
            FrameWriter::Prepared ready;
            try {
                if (!failed) {
                    throw_if_interrupted();
                    // from the cache, or the file when the series is larger than memory
                    const std::shared_ptr<const RawFrame> in = frames.read(i);
                    RawFrame moved = mover->move(*in, results[i].offset, in->mean());
                    if (also) also(i, moved);
                    ready = w.prepare(std::move(moved));
                }
            } catch (...) {
                keep_first_error();
            }
#pragma omp ordered
            if (!failed) {
                const auto t_queue = Clock::now();
                try {
                    w.append(std::move(ready));
                } catch (...) {
                    keep_first_error();
                }
                queued += seconds_since(t_queue);
            }
        }
        apply = seconds_since(t_frames) - queued;
        if (failure) std::rethrow_exception(failure);
        w.close();
    });
    times.apply += apply;
    times.write += seconds_since(t) - apply;
    return name;
}

}  // namespace stackalign
