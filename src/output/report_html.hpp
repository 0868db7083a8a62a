// report.html: one self-contained page (inline SVG plots, PNG thumbnails as
// data: URIs, no network) that shows a stack run at a glance on a headless
// server's copy.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../core/image.hpp"
#include "frame_tables.hpp"

namespace stackalign {

struct ReportPair {
    int ref = 0, mov = 0;
    double sharpness = 0;
    bool flagged = false;
    std::string status;
};

struct ReportInput {
    std::string title;
    // The run's verdict ("ok", "suspect", "failed") and why, shown first.
    std::string verdict;
    std::vector<std::string> verdict_reasons;
    std::vector<std::pair<std::string, std::string>> summary;  // label, value
    std::vector<FrameResult> frames;                           // per view
    std::vector<ReportPair> pairs;
    double min_sharpness = 0;
    int reference = 0;
    std::vector<int> montage_views;
    // One per montage view: as read (the frame cache's, not a copy) and aligned.
    std::vector<std::shared_ptr<const RawFrame>> before;
    std::vector<RawFrame> after;
    bool rotation = false;                // rigid / similarity: the angles are plotted too
    bool projection = false;              // projection matching: the pairs' and final offsets, each view's last move
    std::vector<double> rounds_largest, rounds_rms;  // projection matching: each round's largest and RMS move, pixels
};

// Up to four views worth showing: the first and last searched views (the
// highest tilts of a tilt series), the reference, and one between.
std::vector<int> montage_views(const std::vector<int>& kept, int reference);

std::string stack_report_html(const ReportInput& in);

}  // namespace stackalign
