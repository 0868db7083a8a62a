// The config file's text to a toml++ table. Only the config layer's .cpp
// files include this (toml++ 3.3 does not compile under nvcc).
#pragma once
#include <stdexcept>
#include <string>

// toml++ 3.3 checks some of its parser's expectations with assertions: on
// invalid input (a stray character in a table header, found by `make fuzz`)
// that aborts, or with NDEBUG is undefined behaviour. Its assertions throw
// instead, and parse_toml reports the file as invalid TOML.
namespace stackalign::detail {
struct TomlAssertion : std::logic_error {
    using std::logic_error::logic_error;
};
[[noreturn]] inline void toml_assertion_failed(const char* expr) { throw TomlAssertion(expr); }
}  // namespace stackalign::detail
#define TOML_ASSERT(expr) ((expr) ? static_cast<void>(0) : ::stackalign::detail::toml_assertion_failed(#expr))
#include <toml++/toml.h>

namespace stackalign {

// The text as TOML, or ConfigError with the file, line and column.
toml::table parse_toml(const std::string& text, const std::string& path);
// The whole file, or ConfigError when it cannot be opened.
std::string read_config_text(const std::string& path);

}  // namespace stackalign
