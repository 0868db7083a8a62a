// `bench coarse`: how often a coarse-to-fine search finds the exhaustive
// search's integer peak on the sample configs' real stacks (bench/coarse.cpp).
#pragma once

namespace stackalign::bench {
void coarse();
}
