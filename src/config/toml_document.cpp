#include "toml_document.hpp"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "../core/error.hpp"

namespace stackalign {
namespace {

// What toml++ 3.3 mishandles instead of reporting (found by `make fuzz`):
// control characters (TOML allows none but tab; some abort the parser), and
// non-ASCII characters wherever it tests for whitespace (its test reaches
// __builtin_unreachable on U+00A1..U+0499: undefined behaviour). So the
// parser only ever sees ASCII outside comments: control characters and
// non-ASCII outside strings are errors with their place, and non-ASCII in a
// double-quoted string is rewritten as the equivalent \uXXXX escape (the
// same string to TOML). Literal ('...') strings cannot hold escapes, so
// non-ASCII there is an error that says to use double quotes.
std::string ascii_toml(const std::string& text, const std::string& path) {
    enum { plain, comment, basic, literal, ml_basic, ml_literal } state = plain;
    std::string out;
    out.reserve(text.size());
    int line = 1, column = 0;
    auto fail = [&](const std::string& what) {
        throw ConfigError(path + ":" + std::to_string(line) + ":" + std::to_string(column) + ": TOML syntax error: " + what);
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        ++column;
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02X", c);
            fail(std::string("control character ") + hex + " (is this a text file?)");
        }
        if (c >= 0x80) {
            if (state == comment) {
                out += char(c);
                continue;
            }
            if (state == plain) fail("a non-ASCII character outside a quoted string or comment (keys must be ASCII or quoted)");
            if (state == literal || state == ml_literal)
                fail("a non-ASCII character in a 'literal' string; write it in a \"double-quoted\" string");
            // One UTF-8 sequence -> \uXXXX or \UXXXXXXXX.
            const int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
            if (extra < 0 || c > 0xF4 || i + extra >= text.size()) fail("invalid UTF-8 (is the file UTF-8 text?)");
            std::uint32_t cp = c & (0x3F >> extra);
            for (int k = 1; k <= extra; ++k) {
                const unsigned char d = static_cast<unsigned char>(text[i + k]);
                if ((d & 0xC0) != 0x80) fail("invalid UTF-8 (is the file UTF-8 text?)");
                cp = (cp << 6) | (d & 0x3F);
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid UTF-8 (is the file UTF-8 text?)");
            char esc[16];
            std::snprintf(esc, sizeof esc, cp > 0xFFFF ? "\\U%08X" : "\\u%04X", unsigned(cp));
            out += esc;
            i += extra;
            continue;
        }
        out += char(c);
        const auto starts = [&](const char* s3) { return text.compare(i, 3, s3) == 0; };
        switch (state) {
            case plain:
                if (c == '#') state = comment;
                else if (starts("\"\"\"")) state = ml_basic, out += "\"\"", i += 2, column += 2;
                else if (starts("'''")) state = ml_literal, out += "''", i += 2, column += 2;
                else if (c == '"') state = basic;
                else if (c == '\'') state = literal;
                break;
            case comment:
                if (c == '\n') state = plain;
                break;
            case basic:
            case ml_basic:
                if (c == '\\' && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80)
                    fail("a backslash before a non-ASCII character is not a TOML escape");
                if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n')
                    out += text[++i], ++column;  // an escape: the next character is not a delimiter
                else if (state == basic && (c == '"' || c == '\n')) state = plain;
                else if (state == ml_basic && starts("\"\"\"")) state = plain, out += "\"\"", i += 2, column += 2;
                break;
            case literal:
                if (c == '\'' || c == '\n') state = plain;
                break;
            case ml_literal:
                if (starts("'''")) state = plain, out += "''", i += 2, column += 2;
                break;
        }
        if (c == '\n') ++line, column = 0;
    }
    return out;
}

}  // namespace

toml::table parse_toml(const std::string& raw, const std::string& path) {
    const std::string text = ascii_toml(raw, path);
    try {
        return toml::parse(text, path);
    } catch (const detail::TomlAssertion&) {
        throw ConfigError(path + ": TOML syntax error: not valid TOML (a table header or key holds a character TOML "
                          "does not allow; the parser could not say where)");
    } catch (const toml::parse_error& e) {
        throw ConfigError(path + ":" + std::to_string(e.source().begin.line) + ":" +
                          std::to_string(e.source().begin.column) + ": TOML syntax error: " + std::string(e.description()));
    }
}

std::string read_config_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(path + ": cannot open config file");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace stackalign
