// The readers that take files from users, as fuzz targets: each feeds one
// input to one reader. A stackalign::Error is the expected answer to junk;
// anything else (a crash, a sanitizer report, a hang, a stray exception) is a
// finding. Linked into the libFuzzer binaries (`make fuzz`) and into the test
// suite, which replays tests/fuzz/corpus and tests/fuzz/crashers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace fuzz {

void tiff(const std::uint8_t* data, std::size_t size);    // read_tiff_stack and probe_tiff
void mrc(const std::uint8_t* data, std::size_t size);     // probe_mrc and read_mrc_stack
void config(const std::uint8_t* data, std::size_t size);  // the TOML config, jobs included
void points(const std::uint8_t* data, std::size_t size);  // CSV / Amira / BigWarp point files

// By name, for the replay test: "tiff", "mrc", "config" or "points".
void run(const std::string& target, const std::uint8_t* data, std::size_t size);

}  // namespace fuzz
