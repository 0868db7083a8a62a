// The spelling of an enum's values in configs, logs and run.json, kept once
// per enum so that parsing, printing and the config schema's lists of valid
// values cannot disagree. An enum opts in by specialising EnumNames with its
// names in declaration order.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace stackalign {

template <typename E>
struct EnumNames;  // static constexpr const char* names[] = {...};

template <typename E>
std::string name_of(E value) {
    return EnumNames<E>::names[std::size_t(value)];
}

template <typename E>
std::vector<std::string> names_of() {
    return {std::begin(EnumNames<E>::names), std::end(EnumNames<E>::names)};
}

template <typename E>
std::optional<E> parse_name(const std::string& text) {
    const std::vector<std::string> all = names_of<E>();
    for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i] == text) return E(i);
    return std::nullopt;
}

}  // namespace stackalign
