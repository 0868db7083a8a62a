// What the pipeline asks of a backend: preprocess a frame into one of two
// slots, then search one slot against the other. Each frame is preprocessed
// (and, on the GPU, uploaded) once and serves both pairs it belongs to.
#pragma once
#include <memory>
#include <string>

#include "mi_search/mi_search.hpp"
#include "preprocess/preprocess.hpp"

namespace stackalign {

enum class Backend { cpu, cuda };
std::string to_string(Backend b);

class PairSearcher {
public:
    virtual ~PairSearcher() = default;
    virtual void load(int slot, const RawFrame& frame) = 0;  // slot 0 or 1
    virtual MiPeak search(int ref_slot, int mov_slot) = 0;
    virtual std::string describe() const = 0;                // backend, device, strategy
};

struct SearchSetup {
    PreprocessParams preprocess;
    MiSearchParams search;
    std::string histogram = "auto";  // GPU strategy name
    int gpu = 0;
};

std::unique_ptr<PairSearcher> make_cpu_pair_searcher(const SearchSetup& setup);

}  // namespace stackalign
