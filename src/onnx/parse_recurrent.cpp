// LSTM, unrolled over its (static) sequence length into matrix products and elementwise work:
// the input projection of every step is one product, each step adds its recurrent product and
// the gates. What ONNX allows beyond the common form (other activations, clipping, coupled
// input and forget gates, peepholes, per-batch sequence lengths) is refused by name.
#include "onnx/node_context.hpp"

#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/views.hpp"

#include "onnx/onnx.pb.h"

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
using K = op::elementwise_kind;

// Each step is a handful of ops: longer sequences would make programs of millions of them.
constexpr std::size_t max_unrolled_steps = 4096;

instruction_ref take(node_context& c, instruction_ref x, std::int64_t axis, std::int64_t start,
                     std::int64_t end) {
    return c.add(op::slice{{axis}, {start}, {end}, {}}, {x});
}

// Element d of axis 0, without that axis.
instruction_ref at(node_context& c, instruction_ref x, std::size_t d) {
    return c.add(op::squeeze{{0}}, {take(c, x, 0, std::int64_t(d), std::int64_t(d) + 1)});
}

instruction_ref stack(node_context& c, const std::vector<instruction_ref>& xs, std::int64_t axis) {
    std::vector<instruction_ref> parts;
    for (instruction_ref x : xs)
        parts.push_back(c.add(op::unsqueeze{{axis}}, {x}));
    return parts.size() == 1 ? parts[0] : c.add(op::concat{axis}, parts);
}

void check_plain_form(node_context& c, std::size_t directions) {
    if (const auto* a = c.attribute("activations")) {
        const char* defaults[] = {"Sigmoid", "Tanh", "Tanh"};
        bool plain = std::size_t(a->strings_size()) == 3 * directions;
        for (int i = 0; plain && i < a->strings_size(); ++i)
            plain = a->strings(i) == defaults[i % 3];
        if (!plain) c.unsupported("activations other than Sigmoid, Tanh, Tanh are not supported");
    }
    if (c.has_attr("clip")) c.unsupported("the clip attribute is not supported");
    if (c.attr_int("input_forget", 0) != 0) c.unsupported("input_forget=1 is not supported");
    if (c.has_input(7)) c.unsupported("peepholes (input P) are not supported");
}

outputs build_lstm(node_context& c) {
    const std::string direction = c.attr_string("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
        c.fail("direction must be forward, reverse or bidirectional, got '", direction, "'");
    const std::size_t directions = direction == "bidirectional" ? 2 : 1;
    check_plain_form(c, directions);
    const std::int64_t layout = c.attr_int("layout", 0);
    if (layout != 0 && layout != 1) c.fail("layout must be 0 or 1, got ", layout);

    auto x = c.input(0);
    const auto& xs = x->get_shape();
    if (xs.rank() != 3) c.fail("input X must have rank 3, got ", to_string(xs));
    if (layout == 1) x = c.add(op::transpose{{1, 0, 2}}, {x}); // [batch, seq, in] -> [seq, ...]
    const dims& xl = x->get_shape().lens();
    const std::size_t steps = xl[0], batch = xl[1], in = xl[2];
    const dtype t = xs.type();
    const auto& rl = c.input_shape(2).lens();
    if (rl.size() != 3 || rl[0] != directions || rl[1] % 4 != 0 || rl[2] * 4 != rl[1])
        c.fail("R must have lens [", directions, ", 4 x hidden, hidden], got ",
               to_string(c.input_shape(2)));
    const std::size_t hidden = rl[2];
    if (c.attr_int("hidden_size", std::int64_t(hidden)) != std::int64_t(hidden))
        c.fail("hidden_size ", c.attr_int("hidden_size", 0), " does not match R's ", hidden);
    if (c.input_shape(1).lens() != dims{directions, 4 * hidden, in})
        c.fail("W must have lens [", directions, ", ", 4 * hidden, ", ", in, "], got ",
               to_string(c.input_shape(1)));
    if (c.has_input(3) && c.input_shape(3).lens() != dims{directions, 8 * hidden})
        c.fail("B must have lens [", directions, ", ", 8 * hidden, "], got ",
               to_string(c.input_shape(3)));
    if (c.has_input(4)) {
        const auto lens = c.constant_ints(4, "sequence_lens");
        for (std::int64_t l : lens)
            if (l != std::int64_t(steps))
                c.unsupported("sequence_lens shorter than the sequence (", l, " of ", steps,
                              ") are not supported");
    }
    if (steps > max_unrolled_steps)
        c.unsupported("sequences longer than ", max_unrolled_steps, " steps are not supported (",
                      steps, ")");
    const dims state_lens{directions, batch, hidden};
    for (std::size_t i : {5u, 6u})
        if (c.has_input(i) && c.input_shape(i).lens() != state_lens)
            c.fail(i == 5 ? "initial_h" : "initial_c", " must have lens [", to_string(state_lens),
                   "], got ", to_string(c.input_shape(i)));

    const auto H = std::int64_t(hidden);
    std::vector<instruction_ref> ys, last_h, last_c;
    for (std::size_t d = 0; d < directions; ++d) {
        // Every step's input projection and both biases at once: [steps * batch, 4 hidden].
        auto w = c.add(op::transpose{{1, 0}}, {at(c, c.input(1), d)});
        auto r = c.add(op::transpose{{1, 0}}, {at(c, c.input(2), d)});
        auto projected = c.add(op::dot{}, {c.add(op::reshape{{steps * batch, in}}, {x}), w});
        if (c.has_input(3)) {
            auto b = at(c, c.input(3), d);
            auto bias =
                c.elementwise(K::add, {take(c, b, 0, 0, 4 * H), take(c, b, 0, 4 * H, 8 * H)});
            projected = c.elementwise(
                K::add, {projected, c.broadcast_to(bias, projected->get_shape().lens())});
        }
        projected = c.add(op::reshape{{steps, batch, 4 * hidden}}, {projected});
        auto h =
            c.has_input(5) ? at(c, c.input(5), d) : c.broadcast_to(c.scalar(t, 0), {batch, hidden});
        auto cell =
            c.has_input(6) ? at(c, c.input(6), d) : c.broadcast_to(c.scalar(t, 0), {batch, hidden});
        std::vector<instruction_ref> hs(steps);
        const bool backwards = direction == "reverse" || d == 1;
        for (std::size_t k = 0; k < steps; ++k) {
            const std::size_t step = backwards ? steps - 1 - k : k;
            auto gates = c.elementwise(K::add, {at(c, projected, step), c.add(op::dot{}, {h, r})});
            auto gate = [&](std::int64_t g) { return take(c, gates, 1, g * H, (g + 1) * H); };
            // ONNX orders the gates input, output, forget, cell.
            auto input_gate = c.elementwise(K::sigmoid, {gate(0)});
            auto output_gate = c.elementwise(K::sigmoid, {gate(1)});
            auto forget_gate = c.elementwise(K::sigmoid, {gate(2)});
            auto candidate = c.elementwise(K::tanh, {gate(3)});
            cell = c.elementwise(K::add, {c.elementwise(K::mul, {forget_gate, cell}),
                                          c.elementwise(K::mul, {input_gate, candidate})});
            h = c.elementwise(K::mul, {output_gate, c.elementwise(K::tanh, {cell})});
            hs[step] = h;
        }
        ys.push_back(stack(c, hs, 0)); // [steps, batch, hidden]
        last_h.push_back(h);
        last_c.push_back(cell);
    }
    auto y = stack(c, ys, 1);       // [steps, directions, batch, hidden]
    auto y_h = stack(c, last_h, 0); // [directions, batch, hidden]
    auto y_c = stack(c, last_c, 0);
    if (layout == 1) {
        y = c.add(op::transpose{{2, 0, 1, 3}}, {y}); // [batch, steps, directions, hidden]
        y_h = c.add(op::transpose{{1, 0, 2}}, {y_h});
        y_c = c.add(op::transpose{{1, 0, 2}}, {y_c});
    }
    return {y, y_h, y_c};
}

} // namespace

void add_recurrent_ops(op_table& t) {
    t["LSTM"] = {3, 8, build_lstm};
}

} // namespace conflux::onnx
