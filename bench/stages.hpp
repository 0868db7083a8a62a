// `bench stages`: issue #19's job shapes end to end, per stage and backend (bench/stages.cpp).
#pragma once
#include <string>

namespace stackalign::bench {
void stages(const std::string& which);
}
