// ONNX Einsum's equation apart from any graph: the text parsed into terms, then every operand
// axis given a label once the operands' ranks are known. Both throw user_error with a message
// that says what is wrong and leaves naming the node to the caller.
//
// Grammar: terms of letters a-z and A-Z separated by ',', one per input, each with at most one
// '...'; optionally '->' and the output term; spaces anywhere. Without '->' the output is the
// implicit one: '...' when any input has one, then the letters that appear exactly once in the
// inputs, in ASCII order (upper case first), as numpy orders them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conflux::onnx {

struct einsum_term {
    std::string letters;
    std::optional<std::size_t> ellipsis; // how many letters stand before the '...'
};

struct einsum_equation {
    std::vector<einsum_term> inputs;
    einsum_term output; // after '->', or the implicit output
};

einsum_equation parse_einsum_equation(std::string_view text, std::size_t input_count);

// Labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (so label order is ASCII order); the axes that
// the ellipses stand for are einsum_ellipsis_label + j, j counted from the leftmost of the
// broadcast ellipsis axes. The ellipses of all inputs are right-aligned, numpy-style: an input
// whose '...' covers fewer axes has the last labels of the range.
inline constexpr int einsum_ellipsis_label = 52;

struct einsum_labels {
    std::vector<std::vector<int>> inputs; // one label per axis of each input
    std::vector<int> output;
};

// Fails when an input's rank does not fit its term, or when the ellipses stand for axes and an
// explicit output has no '...' for them.
einsum_labels label_einsum_axes(const einsum_equation& eq, const std::vector<std::size_t>& ranks);

// The letter of a label, or "..." for an ellipsis axis: for messages.
std::string einsum_label_name(int label);

} // namespace conflux::onnx
