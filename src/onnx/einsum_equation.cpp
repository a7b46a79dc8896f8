#include "onnx/einsum_equation.hpp"

#include "conflux/util/errors.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

namespace conflux::onnx {

namespace {

bool is_letter(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

int letter_label(char ch) {
    return ch <= 'Z' ? ch - 'A' : 26 + (ch - 'a');
}

// A character as a message may show it: a byte that would not print (a line break in a damaged
// file) as its code, so that the message stays one line.
std::string character(char ch) {
    if (ch >= ' ' && ch <= '~') return std::string("'") + ch + "'";
    std::array<char, 8> hex{};
    std::snprintf(hex.data(), hex.size(), "0x%02x", unsigned(static_cast<unsigned char>(ch)));
    return std::string("byte ") + hex.data();
}

// `what`: "input 1" or "the output", for messages.
einsum_term parse_term(std::string_view text, const std::string& what) {
    einsum_term t;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (is_letter(ch)) {
            t.letters += ch;
        } else if (ch == '.') {
            if (text.substr(i, 3) != "...")
                throw_user_error("the term of ", what, " has a '.' that is not part of '...'");
            if (t.ellipsis) throw_user_error("the term of ", what, " has more than one '...'");
            t.ellipsis = t.letters.size();
            i += 2;
        } else {
            throw_user_error("the term of ", what, " has the character ", character(ch),
                             " (labels are the letters a-z and A-Z)");
        }
    }
    return t;
}

} // namespace

std::string einsum_label_name(int label) {
    if (label >= einsum_ellipsis_label) return "...";
    return std::string(1, label < 26 ? char('A' + label) : char('a' + label - 26));
}

einsum_equation parse_einsum_equation(std::string_view text, std::size_t input_count) {
    std::string s;
    for (char ch : text)
        if (ch != ' ') s += ch;
    std::string_view lhs = s;
    std::optional<std::string_view> rhs;
    if (const auto arrow = lhs.find("->"); arrow != std::string_view::npos) {
        rhs = lhs.substr(arrow + 2);
        lhs = lhs.substr(0, arrow);
        if (rhs->find("->") != std::string_view::npos)
            throw_user_error("the equation has more than one '->'");
    }

    einsum_equation eq;
    for (std::size_t begin = 0;;) {
        const auto comma = lhs.find(',', begin);
        const auto end = comma == std::string_view::npos ? lhs.size() : comma;
        eq.inputs.push_back(parse_term(lhs.substr(begin, end - begin),
                                       "input " + std::to_string(eq.inputs.size())));
        if (comma == std::string_view::npos) break;
        begin = comma + 1;
    }
    if (eq.inputs.size() != input_count)
        throw_user_error("the equation has ", eq.inputs.size(), " input term(s) for ", input_count,
                         " input(s)");

    std::array<int, 52> uses{};
    bool any_ellipsis = false;
    for (const auto& t : eq.inputs) {
        for (char ch : t.letters)
            ++uses[std::size_t(letter_label(ch))];
        any_ellipsis = any_ellipsis || t.ellipsis.has_value();
    }
    if (!rhs) {
        if (any_ellipsis) eq.output.ellipsis = 0;
        for (int label = 0; label < 52; ++label)
            if (uses[std::size_t(label)] == 1) eq.output.letters += einsum_label_name(label);
        return eq;
    }
    eq.output = parse_term(*rhs, "the output");
    std::array<bool, 52> seen{};
    for (char ch : eq.output.letters) {
        const auto label = std::size_t(letter_label(ch));
        if (uses[label] == 0) throw_user_error("the output label '", ch, "' is in no input term");
        if (seen[label]) throw_user_error("the output label '", ch, "' appears more than once");
        seen[label] = true;
    }
    return eq;
}

einsum_labels label_einsum_axes(const einsum_equation& eq, const std::vector<std::size_t>& ranks) {
    CONFLUX_ASSERT(ranks.size() == eq.inputs.size());
    // How many axes each input's '...' stands for; the broadcast ellipsis has the most.
    std::vector<std::size_t> covered(ranks.size(), 0);
    std::size_t ellipsis_rank = 0;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        const auto& t = eq.inputs[i];
        const std::size_t n = t.letters.size();
        if (t.ellipsis ? ranks[i] < n : ranks[i] != n)
            throw_user_error("input ", i, " has rank ", ranks[i], " but its term '",
                             t.ellipsis ? t.letters.substr(0, *t.ellipsis) + "..." +
                                              t.letters.substr(*t.ellipsis)
                                        : t.letters,
                             "' has ", n, " label(s)", t.ellipsis ? " and '...'" : "");
        covered[i] = ranks[i] - n;
        ellipsis_rank = std::max(ellipsis_rank, covered[i]);
    }
    auto labels_of = [&](const einsum_term& t, std::size_t ellipsis_axes) {
        std::vector<int> labels;
        for (std::size_t j = 0; j <= t.letters.size(); ++j) {
            if (t.ellipsis == j)
                for (std::size_t e = ellipsis_rank - ellipsis_axes; e < ellipsis_rank; ++e)
                    labels.push_back(einsum_ellipsis_label + int(e));
            if (j < t.letters.size()) labels.push_back(letter_label(t.letters[j]));
        }
        return labels;
    };
    // numpy and the ONNX reference refuse rather than sum them, and so does Conflux.
    if (ellipsis_rank > 0 && !eq.output.ellipsis)
        throw_user_error("the inputs' '...' stand for ", ellipsis_rank,
                         ellipsis_rank == 1 ? " axis" : " axes", " but the output has no '...'");
    einsum_labels out;
    for (std::size_t i = 0; i < ranks.size(); ++i)
        out.inputs.push_back(labels_of(eq.inputs[i], covered[i]));
    out.output = labels_of(eq.output, ellipsis_rank);
    return out;
}

} // namespace conflux::onnx
