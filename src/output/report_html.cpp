#include "report_html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "../alignment/motion.hpp"
#include "../core/workers.hpp"
#include "png_image.hpp"

namespace stackalign {

namespace {

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string num(double v, int decimals = 2) {
    if (std::fabs(v) < 0.5 * std::pow(10.0, -decimals)) v = 0;  // no "-0.00"
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

struct Series {
    std::string name, colour;
    std::vector<double> y;  // NaN: no point there
};
struct Marker {
    double x, y;
    std::string colour, title;
};

// "Nice" tick step for a range: 1, 2 or 5 times a power of ten.
double tick_step(double span) {
    const double raw = span / 6, p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (raw <= m * p) return m * p;
    return 10 * p;
}

// A line plot as inline SVG: every series a polyline (broken at NaN),
// markers as circles with a tooltip, an optional dashed horizontal line.
std::string svg_plot(const std::string& id, const std::string& title, const std::string& xlabel,
                     const std::string& ylabel, const std::vector<double>& x, const std::vector<Series>& series,
                     const std::vector<Marker>& markers = {}, double hline = NAN) {
    const double W = 640, H = 260, L = 56, R = 12, T = 28, B = 40;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (double v : x) x0 = std::min(x0, v), x1 = std::max(x1, v);
    for (const Series& s : series)
        for (double v : s.y)
            if (std::isfinite(v)) y0 = std::min(y0, v), y1 = std::max(y1, v);
    for (const Marker& m : markers) y0 = std::min(y0, m.y), y1 = std::max(y1, m.y);
    if (std::isfinite(hline)) y0 = std::min(y0, hline), y1 = std::max(y1, hline);
    if (!std::isfinite(y0)) y0 = 0, y1 = 1;
    if (y1 - y0 < 1e-9) y0 -= 0.5, y1 += 0.5;
    if (x1 - x0 < 1e-9) x0 -= 0.5, x1 += 0.5;
    const double pad = 0.05 * (y1 - y0);
    y0 -= pad;
    y1 += pad;
    auto px = [&](double v) { return L + (v - x0) / (x1 - x0) * (W - L - R); };
    auto py = [&](double v) { return H - B - (v - y0) / (y1 - y0) * (H - T - B); };
    std::ostringstream o;
    o << "<svg class=\"plot\" id=\"" << id << "\" viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
      << "\" height=\"" << H << "\" role=\"img\" aria-label=\"" << escape(title) << "\">\n";
    o << "<text x=\"" << L << "\" y=\"18\" class=\"title\">" << escape(title) << "</text>\n";
    const double ys = tick_step(y1 - y0), xs = tick_step(x1 - x0);
    for (double v = std::ceil(y0 / ys) * ys; v <= y1; v += ys)
        o << "<line class=\"grid\" x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << num(py(v)) << "\" y2=\""
          << num(py(v)) << "\"/><text class=\"tick\" x=\"" << L - 6 << "\" y=\"" << num(py(v) + 4)
          << "\" text-anchor=\"end\">" << num(v, ys < 1 ? 2 : 0) << "</text>\n";
    for (double v = std::ceil(x0 / xs) * xs; v <= x1; v += xs)
        o << "<text class=\"tick\" x=\"" << num(px(v)) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">"
          << num(v, xs < 1 ? 1 : 0) << "</text>\n";
    o << "<rect class=\"frame\" x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\""
      << H - T - B << "\"/>\n";
    o << "<text class=\"label\" x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">"
      << escape(xlabel) << "</text>\n";
    o << "<text class=\"label\" transform=\"translate(14," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
      << escape(ylabel) << "</text>\n";
    if (std::isfinite(hline))
        o << "<line class=\"threshold\" x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << num(py(hline)) << "\" y2=\""
          << num(py(hline)) << "\"/>\n";
    double legend_x = W - R - 8;
    for (auto s = series.rbegin(); s != series.rend(); ++s) {
        std::string points;
        auto flush = [&] {
            if (!points.empty())
                o << "<polyline fill=\"none\" stroke=\"" << s->colour << "\" stroke-width=\"1.6\" points=\"" << points
                  << "\"/>\n";
            points.clear();
        };
        for (std::size_t i = 0; i < x.size() && i < s->y.size(); ++i) {
            if (!std::isfinite(s->y[i])) {
                flush();
                continue;
            }
            points += num(px(x[i])) + "," + num(py(s->y[i])) + " ";
        }
        flush();
        o << "<text class=\"legend\" x=\"" << legend_x << "\" y=\"" << T + 14 << "\" text-anchor=\"end\" fill=\"" << s->colour
          << "\">" << escape(s->name) << "</text>\n";
        legend_x -= 12 + 7.0 * s->name.size();
    }
    for (const Marker& m : markers)
        o << "<circle cx=\"" << num(px(m.x)) << "\" cy=\"" << num(py(m.y)) << "\" r=\"4\" fill=\"" << m.colour
          << "\"><title>" << escape(m.title) << "</title></circle>\n";
    o << "</svg>\n";
    return o.str();
}

}  // namespace

std::vector<int> montage_views(const std::vector<int>& kept, int reference) {
    std::vector<int> v;
    if (kept.empty()) return v;
    const int mid = kept[kept.size() / 4];  // between the first view and a central reference
    for (int k : {kept.front(), mid, reference, kept.back()})
        if (std::find(v.begin(), v.end(), k) == v.end()) v.push_back(k);
    std::sort(v.begin(), v.end());
    return v;
}

std::string stack_report_html(const ReportInput& in) {
    const int n = int(in.frames.size());
    bool tilt = n > 0;
    for (const FrameResult& f : in.frames) tilt = tilt && std::isfinite(f.tilt);
    std::vector<double> x(n);
    for (int k = 0; k < n; ++k) x[k] = tilt ? in.frames[k].tilt : k;
    const std::string xlabel = tilt ? "tilt angle (degrees)" : "view";

    Series ndx{"dx", "#1f77b4", {}}, ndy{"dy", "#d62728", {}}, cdx{"dx", "#1f77b4", {}}, cdy{"dy", "#d62728", {}};
    for (const FrameResult& f : in.frames) {
        const bool excluded = f.status.rfind("excluded", 0) == 0;
        ndx.y.push_back(excluded ? NAN : f.neighbour.dx);
        ndy.y.push_back(excluded ? NAN : f.neighbour.dy);
        cdx.y.push_back(f.offset.dx);
        cdy.y.push_back(f.offset.dy);
    }
    std::vector<Marker> excluded_marks, flagged_shift_marks, flagged_sharp_marks;
    for (int k = 0; k < n; ++k)
        if (in.frames[k].status.rfind("excluded", 0) == 0)
            excluded_marks.push_back({x[k], in.frames[k].offset.dx, "#999999",
                                      "view " + std::to_string(k) + ": excluded, offset interpolated"});
    Series sharp{"sharpness", "#2ca02c", std::vector<double>(n, NAN)};
    int flagged = 0;
    for (const ReportPair& p : in.pairs) {
        sharp.y[p.mov] = p.sharpness;
        if (!p.flagged) continue;
        ++flagged;
        const std::string what = "pair " + std::to_string(p.ref) + "-" + std::to_string(p.mov) + ": " + p.status;
        flagged_sharp_marks.push_back({x[p.mov], p.sharpness, "#d62728", what});
        for (const Series* s : {&ndx, &ndy})
            if (std::isfinite(s->y[p.mov])) flagged_shift_marks.push_back({x[p.mov], s->y[p.mov], "#d62728", what});
    }

    std::ostringstream o;
    o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>stackalign: "
      << escape(in.title) << "</title>\n<style>\n"
      << "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1340px}\n"
      << "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
      << "table.summary td{padding:2px 12px 2px 0;vertical-align:top}table.summary td:first-child{color:#666}\n"
      << ".plots{display:flex;flex-wrap:wrap;gap:12px}\n"
      << "svg.plot{background:#fff;border:1px solid #ddd}svg .title{font-size:13px;font-weight:600}\n"
      << "svg .tick,svg .legend{font-size:11px}svg .label{font-size:12px;fill:#444}\n"
      << "svg .grid{stroke:#eee}svg .frame{fill:none;stroke:#999}svg .threshold{stroke:#d62728;stroke-dasharray:4 3}\n"
      << "table.montage td{padding:4px;text-align:center;font-size:12px}table.montage img{image-rendering:pixelated;"
         "width:192px;border:1px solid #ccc}\n"
      << ".flag{color:#d62728}.verdict{font-size:15px;padding:6px 10px;border-left:4px solid #2ca02c}"
         ".verdict.suspect{border-color:#ff7f0e}.verdict.failed{border-color:#d62728}\n</style></head>\n<body>\n";
    o << "<h1>stackalign: " << escape(in.title) << "</h1>\n";
    if (!in.verdict.empty()) {
        o << "<p class=\"verdict " << escape(in.verdict) << "\" id=\"verdict\">Verdict: <b>" << escape(in.verdict)
          << "</b>";
        for (std::size_t k = 0; k < in.verdict_reasons.size(); ++k)
            o << (k ? "; " : " — ") << escape(in.verdict_reasons[k]);
        o << "</p>\n";
    }
    o << "<table class=\"summary\">\n";
    for (const auto& [k, v] : in.summary) o << "<tr><td>" << escape(k) << "</td><td>" << escape(v) << "</td></tr>\n";
    o << "<tr><td>flagged pairs</td><td" << (flagged ? " class=\"flag\"" : "") << ">" << flagged << " of "
      << in.pairs.size() << "</td></tr>\n</table>\n";

    o << "<h2>Shifts</h2>\n<div class=\"plots\">\n"
      << svg_plot("neighbour", "Neighbour shift (view relative to the previous searched view)", xlabel, "pixels", x,
                  {ndx, ndy}, flagged_shift_marks)
      << svg_plot("cumulative", "Offset relative to the reference (grey: excluded, interpolated)", xlabel,
                  "pixels", x, {cdx, cdy}, excluded_marks)
      << svg_plot("sharpness", "MI peak sharpness per pair (red: flagged; dashed: weak threshold)", xlabel,
                  "(max - mean) / sd", x, {sharp}, flagged_sharp_marks, in.min_sharpness);
    if (in.rotation) {
        Series total{"relative to the reference", "#9467bd", {}}, step{"relative to the previous view", "#8c564b", {}};
        for (const FrameResult& f : in.frames) {
            total.y.push_back(angle_of(f.offset));
            step.y.push_back(f.neighbour.finite() && f.status.rfind("excluded", 0) != 0 ? angle_of(f.neighbour) : NAN);
        }
        o << svg_plot("angle", "Rotation angle (counter-clockwise, y up as IMOD shows it)", xlabel, "degrees", x,
                      {total, step}, {});
    }
    if (in.projection) {
        Series px{"dx, projection matched", "#1f77b4", {}}, cx{"dx, pairs", "#aec7e8", {}};
        Series py{"dy, projection matched", "#ff7f0e", {}}, cy{"dy, pairs", "#ffbb78", {}};
        Series moved{"last round's move", "#2ca02c", {}};
        for (const FrameResult& f : in.frames) {
            px.y.push_back(f.offset.dx), py.y.push_back(f.offset.dy);
            cx.y.push_back(f.coarse.dx), cy.y.push_back(f.coarse.dy);
            moved.y.push_back(f.projection_residual);
        }
        o << svg_plot("projection", "Offset from the pairs and after projection matching", xlabel, "pixels", x,
                      {cx, px, cy, py}, {})
          << svg_plot("projection_residual", "Projection matching: how far the last round moved each view", xlabel,
                      "pixels", x, {moved}, {});
        if (!in.rounds_largest.empty()) {
            std::vector<double> round;
            for (std::size_t k = 0; k < in.rounds_largest.size(); ++k) round.push_back(double(k + 1));
            o << svg_plot("projection_rounds", "Projection matching: how far each round moved the views", "round",
                          "pixels", round,
                          {Series{"largest move", "#d62728", in.rounds_largest}, Series{"RMS move", "#1f77b4", in.rounds_rms}},
                          {});
        }
    }
    o << "</div>\n";

    o << "<h2>Before / after</h2>\n<table class=\"montage\"><tr><td></td>";
    for (std::size_t i = 0; i < in.montage_views.size(); ++i) {
        const int v = in.montage_views[i];
        o << "<td>view " << v << (tilt ? " (" + num(in.frames[v].tilt, 1) + "&deg;)" : std::string())
          << (v == in.reference ? ", reference" : "") << "</td>";
    }
    o << "</tr>\n";
    // Each view's two thumbnails share the input's scale. Made on the
    // caller's threads, one image each: one after another they were most
    // of a 512^2 tilt series' report (8 x 6-9 ms), the last thing its GPU
    // job waited for.
    const int views = int(std::min(in.montage_views.size(), in.before.size()));
    std::vector<ThumbnailScale> scales(views);
    std::vector<std::string> png(2 * std::size_t(views));
    run_tasks(views, [&](int i) { scales[i] = thumbnail_scale(*in.before[i]); });
    run_tasks(2 * views, [&](int k) {
        const int i = k % views, row = k / views;
        png[k] = base64(encode_png_gray(thumbnail(row ? in.after[i] : *in.before[i], scales[i], 192)));
    });
    for (int row = 0; row < 2; ++row) {
        o << "<tr><td>" << (row ? "aligned" : "input") << "</td>";
        for (int i = 0; i < views; ++i)
            o << "<td><img alt=\"view " << in.montage_views[i] << (row ? " aligned" : " input")
              << "\" src=\"data:image/png;base64," << png[std::size_t(row) * views + i] << "\"></td>";
        o << "</tr>\n";
    }
    o << "</table>\n";

    o << "<h2>Flagged pairs</h2>\n";
    if (!flagged) o << "<p>None.</p>\n";
    else {
        o << "<ul>\n";
        for (const ReportPair& p : in.pairs)
            if (p.flagged)
                o << "<li class=\"flag\">views " << p.ref << "-" << p.mov << ": " << escape(p.status) << " (sharpness "
                  << num(p.sharpness) << ")</li>\n";
        o << "</ul>\n";
    }
    // Lets a headless browser (the test) tell that the plots were laid out
    // and the thumbnails decoded: it reads body[data-rendered] from the DOM.
    o << "<script>\nwindow.addEventListener('load', () => {\n"
         "  const plots = [...document.querySelectorAll('svg.plot')];\n"
         "  const drawn = plots.filter(s => { const b = s.getBBox(); return b.width > 0 && b.height > 0 &&\n"
         "    s.querySelectorAll('polyline').length > 0; }).length;\n"
         "  const images = [...document.images].filter(i => i.complete && i.naturalWidth > 0).length;\n"
         "  document.body.dataset.rendered = drawn + '/' + plots.length + ' plots, ' + images + '/' +\n"
         "    document.images.length + ' images';\n"
         "});\n</script>\n</body></html>\n";
    return o.str();
}

}  // namespace stackalign
