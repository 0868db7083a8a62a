// Moving frames by their offsets, in their own pixel type.
#pragma once
#include "../core/image.hpp"
#include "transform.hpp"

namespace stackalign {

// Returns the frame moved by (-dx, -dy): out(x, y) = in(x + dx, y + dy).
// Integer shifts copy pixels exactly; fractional ones interpolate bilinearly
// and round to the pixel type. Pixels with no source are set to `fill`.
RawFrame shift_frame(const RawFrame& in, double dx, double dy, double fill);

// IMOD's convention for a linear transform (newstack, .xf files): the input
// pixel at X goes to X' = A (X - c) + D + c, with c the centre (cx, cy).
struct LinearTransform {
    double a11 = 1, a12 = 0, a21 = 0, a22 = 1;
    double dx = 0, dy = 0;
    double cx = 0, cy = 0;
};
// out(X') = in(X), bilinear, rounded to the pixel type; `fill` where X
// falls outside the frame. Used to stretch views for the search and, in
// tests, to apply .xf/.prexg files the way newstack does.
RawFrame transform_frame(const RawFrame& in, const LinearTransform& t, double fill);
// What transform_frame does to each pixel (frame_warp.hpp),
// for a backend that resamples the frame itself.
struct FrameWarp;
FrameWarp frame_warp(const LinearTransform& t, double fill);

// The warp apply_transform resamples a width x height frame through when
// T is not a translation (for a backend that resamples frames itself).
FrameWarp apply_warp(const Transform& t, int width, int height, double fill);

// The frame resampled into the reference's geometry: out(X) = in(T(X)).
// Translations go through shift_frame (integer shifts copy pixels exactly),
// anything else through transform_frame with T's inverse, as newstack
// applies an .xf line.
RawFrame apply_transform(const RawFrame& in, const Transform& t, double fill);

}  // namespace stackalign
