#include "pair_searcher.hpp"

namespace stackalign {

std::string to_string(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

namespace {

class CpuPairSearcher : public PairSearcher {
public:
    explicit CpuPairSearcher(const SearchSetup& s) : setup_(s) {}
    void load(int slot, const RawFrame& frame) override { slots_[slot] = cpu::preprocess(frame, setup_.preprocess); }
    MiPeak search(int ref_slot, int mov_slot) override {
        return cpu::mi_search(slots_[ref_slot], slots_[mov_slot], setup_.search);
    }
    MiPeak search_at(int ref_slot, int mov_slot, int x, int y, int z) override {
        MiSearchParams p = setup_.search;
        p.window.x = x;
        p.window.y = y;
        p.window.z = z;
        return cpu::mi_search(slots_[ref_slot], slots_[mov_slot], p);
    }
    std::string describe() const override { return "cpu (OpenMP)"; }

private:
    SearchSetup setup_;
    BinImage slots_[2];
};

}  // namespace

std::unique_ptr<PairSearcher> make_cpu_pair_searcher(const SearchSetup& setup) {
    return std::make_unique<CpuPairSearcher>(setup);
}

}  // namespace stackalign
