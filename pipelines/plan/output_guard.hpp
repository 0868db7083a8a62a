// Nothing lost: before anything is written, every file a job (or a batch)
// would write is compared with every file it reads, after resolving links
// and "..": an output that would replace an input, or an input pattern that
// would pick up an output on the next run, is a ConfigError naming both.
#pragma once
#include <string>
#include <vector>

#include "../../src/config/config.hpp"

namespace stackalign {

// Every file the job may write, whatever its inputs turn out to be (both
// aligned-stack formats, the IMOD files named from the stack).
std::vector<std::string> output_paths(const Config& cfg);

// One job's outputs against its own inputs and input patterns.
void check_outputs_spare_inputs(const Config& cfg);
// Every job's outputs (and batch.json) against every job's inputs and
// patterns: one job must not overwrite or later read another's files.
void check_outputs_spare_inputs(const Batch& batch);

}  // namespace stackalign
