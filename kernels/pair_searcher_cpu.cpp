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
    std::vector<MiPeak> search_windows(int ref_slot, int mov_slot, const std::vector<WindowCorner>& corners) override {
        std::vector<MiPeak> peaks;
        MiSearchParams p = setup_.search;
        for (const WindowCorner& c : corners) {
            p.window.x = c.x;
            p.window.y = c.y;
            p.window.z = c.z;
            peaks.push_back(cpu::mi_search(slots_[ref_slot], slots_[mov_slot], p));
        }
        return peaks;
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
