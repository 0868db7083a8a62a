// `bench methods`: every method of issue #5 side by side (bench/methods.cpp).
#pragma once

namespace stackalign::bench {
void methods();
}
