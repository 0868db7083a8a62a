// `bench loads CONFIG`: what one view load, stretched load, search and
// refinement cost on the searcher of CONFIG's plan (bench/loads.cpp).
#pragma once
#include <string>

namespace stackalign::bench {
void loads(const std::string& config);
}
