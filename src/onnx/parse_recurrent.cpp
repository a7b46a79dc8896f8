// LSTM, GRU and RNN, unrolled over their (static) sequence length into matrix products and
// elementwise work: the input projection of every step is one product, each step adds its
// recurrent product and the gates. What ONNX allows beyond the common form (other activations,
// clipping, LSTM's coupled input and forget gates and peepholes, per-batch sequence lengths) is
// refused by name.
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

void check_plain_form(node_context& c, std::size_t directions,
                      const std::vector<std::string>& defaults) {
    if (const auto* a = c.attribute("activations")) {
        bool plain = std::size_t(a->strings_size()) == defaults.size() * directions;
        for (int i = 0; plain && i < a->strings_size(); ++i)
            plain = a->strings(i) == defaults[std::size_t(i) % defaults.size()];
        if (!plain) {
            std::string names;
            for (const auto& d : defaults)
                names += (names.empty() ? "" : ", ") + d;
            c.unsupported("activations other than ", names, " are not supported");
        }
    }
    if (c.has_attr("clip")) c.unsupported("the clip attribute is not supported");
}

// What LSTM, GRU and RNN share: X in [steps, batch, in] order, W [dirs, G hidden, in],
// R [dirs, G hidden, hidden], B [dirs, 2 G hidden], constant full sequence_lens, initial_h.
struct recurrent_form {
    std::string direction;
    std::size_t directions = 1, steps = 0, batch = 0, in = 0, hidden = 0;
    std::int64_t layout = 0;
    instruction_ref x;
};

recurrent_form read_form(node_context& c, std::size_t gates,
                         const std::vector<std::string>& activations) {
    recurrent_form f;
    f.direction = c.attr_string("direction", "forward");
    if (f.direction != "forward" && f.direction != "reverse" && f.direction != "bidirectional")
        c.fail("direction must be forward, reverse or bidirectional, got '", f.direction, "'");
    f.directions = f.direction == "bidirectional" ? 2 : 1;
    check_plain_form(c, f.directions, activations);
    f.layout = c.attr_int("layout", 0);
    if (f.layout != 0 && f.layout != 1) c.fail("layout must be 0 or 1, got ", f.layout);
    f.x = c.input(0);
    const auto& xs = f.x->get_shape();
    if (xs.rank() != 3) c.fail("input X must have rank 3, got ", to_string(xs));
    if (f.layout == 1)
        f.x = c.add(op::transpose{{1, 0, 2}}, {f.x}); // [batch, seq, in] -> seq first
    const dims& xl = f.x->get_shape().lens();
    f.steps = xl[0], f.batch = xl[1], f.in = xl[2];
    const auto& rl = c.input_shape(2).lens();
    if (rl.size() != 3 || rl[0] != f.directions || rl[1] != gates * rl[2])
        c.fail("R must have lens [", f.directions, ", ", gates, " x hidden, hidden], got ",
               to_string(c.input_shape(2)));
    f.hidden = rl[2];
    if (c.attr_int("hidden_size", std::int64_t(f.hidden)) != std::int64_t(f.hidden))
        c.fail("hidden_size ", c.attr_int("hidden_size", 0), " does not match R's ", f.hidden);
    if (c.input_shape(1).lens() != dims{f.directions, gates * f.hidden, f.in})
        c.fail("W must have lens [", f.directions, ", ", gates * f.hidden, ", ", f.in, "], got ",
               to_string(c.input_shape(1)));
    if (c.has_input(3) && c.input_shape(3).lens() != dims{f.directions, 2 * gates * f.hidden})
        c.fail("B must have lens [", f.directions, ", ", 2 * gates * f.hidden, "], got ",
               to_string(c.input_shape(3)));
    if (c.has_input(4)) {
        for (std::int64_t l : c.constant_ints(4, "sequence_lens"))
            if (l != std::int64_t(f.steps))
                c.unsupported("sequence_lens shorter than the sequence (", l, " of ", f.steps,
                              ") are not supported");
    }
    if (f.steps > max_unrolled_steps)
        c.unsupported("sequences longer than ", max_unrolled_steps, " steps are not supported (",
                      f.steps, ")");
    if (c.has_input(5) && c.input_shape(5).lens() != dims{f.directions, f.batch, f.hidden})
        c.fail("initial_h must have lens [", f.directions, ", ", f.batch, ", ", f.hidden, "], got ",
               to_string(c.input_shape(5)));
    return f;
}

// Direction d's state from input `index` (initial_h, initial_c), zeros when it is absent.
instruction_ref initial_state(node_context& c, const recurrent_form& f, std::size_t index,
                              std::size_t d) {
    return c.has_input(index)
               ? at(c, c.input(index), d)
               : c.broadcast_to(c.scalar(f.x->get_shape().type(), 0), {f.batch, f.hidden});
}

// The step direction d takes k-th: the reverse pass walks the sequence from its end.
std::size_t step_at(const recurrent_form& f, std::size_t d, std::size_t k) {
    const bool backwards = f.direction == "reverse" || d == 1;
    return backwards ? f.steps - 1 - k : k;
}

// Direction d's input projection of every step, with bias (when B is given) added to the
// first `biased` gates: [steps, batch, G hidden].
instruction_ref project(node_context& c, const recurrent_form& f, std::size_t gates, std::size_t d,
                        instruction_ref bias) {
    auto w = c.add(op::transpose{{1, 0}}, {at(c, c.input(1), d)});
    auto y = c.add(op::dot{}, {c.add(op::reshape{{f.steps * f.batch, f.in}}, {f.x}), w});
    if (bias) y = c.elementwise(K::add, {y, c.broadcast_to(bias, y->get_shape().lens())});
    return c.add(op::reshape{{f.steps, f.batch, gates * f.hidden}}, {y});
}

// Y [steps, dirs, batch, hidden] and a state [dirs, batch, hidden] in the node's layout.
outputs in_layout(node_context& c, const recurrent_form& f, instruction_ref y,
                  std::vector<instruction_ref> states) {
    outputs out{y};
    for (instruction_ref s : states)
        out.push_back(s);
    if (f.layout == 1) {
        out[0] = c.add(op::transpose{{2, 0, 1, 3}}, {out[0]}); // [batch, steps, dirs, hidden]
        for (std::size_t i = 1; i < out.size(); ++i)
            out[i] = c.add(op::transpose{{1, 0, 2}}, {out[i]});
    }
    return out;
}

outputs build_lstm(node_context& c) {
    const recurrent_form f = read_form(c, 4, {"Sigmoid", "Tanh", "Tanh"});
    if (c.attr_int("input_forget", 0) != 0) c.unsupported("input_forget=1 is not supported");
    if (c.has_input(7)) c.unsupported("peepholes (input P) are not supported");
    if (c.has_input(6) && c.input_shape(6).lens() != dims{f.directions, f.batch, f.hidden})
        c.fail("initial_c must have lens [", f.directions, ", ", f.batch, ", ", f.hidden, "], got ",
               to_string(c.input_shape(6)));
    const auto H = std::int64_t(f.hidden);
    std::vector<instruction_ref> ys, last_h, last_c;
    for (std::size_t d = 0; d < f.directions; ++d) {
        instruction_ref bias = nullptr;
        if (c.has_input(3)) {
            auto b = at(c, c.input(3), d); // Wb and Rb both add to every gate
            bias = c.elementwise(K::add, {take(c, b, 0, 0, 4 * H), take(c, b, 0, 4 * H, 8 * H)});
        }
        auto projected = project(c, f, 4, d, bias);
        auto r = c.add(op::transpose{{1, 0}}, {at(c, c.input(2), d)});
        auto h = initial_state(c, f, 5, d);
        auto cell = initial_state(c, f, 6, d);
        std::vector<instruction_ref> hs(f.steps);
        for (std::size_t k = 0; k < f.steps; ++k) {
            const std::size_t step = step_at(f, d, k);
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
    return in_layout(c, f, stack(c, ys, 1), {stack(c, last_h, 0), stack(c, last_c, 0)});
}

// GRU: gates update (z), reset (r), hidden (h). linear_before_reset (PyTorch's form) applies the
// reset gate after the recurrent product of the hidden gate, else before it.
outputs build_gru(node_context& c) {
    const recurrent_form f = read_form(c, 3, {"Sigmoid", "Tanh"});
    const bool linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
    const dtype t = f.x->get_shape().type();
    const auto H = std::int64_t(f.hidden);
    std::vector<instruction_ref> ys, last_h;
    for (std::size_t d = 0; d < f.directions; ++d) {
        instruction_ref bias = nullptr, hidden_bias = nullptr;
        if (c.has_input(3)) {
            auto b = at(c, c.input(3), d);
            // Wb for every gate, Rb for z and r; Rb of h goes where the variant puts it.
            auto rb = take(c, b, 0, 3 * H, 6 * H);
            auto rb_zr = c.add(op::concat{0}, {take(c, rb, 0, 0, 2 * H),
                                               c.broadcast_to(c.scalar(t, 0), {f.hidden})});
            bias = c.elementwise(K::add, {take(c, b, 0, 0, 3 * H), rb_zr});
            hidden_bias = take(c, rb, 0, 2 * H, 3 * H);
        }
        auto projected = project(c, f, 3, d, bias);
        auto r_all = at(c, c.input(2), d); // [3 hidden, hidden]
        auto r_zr = c.add(op::transpose{{1, 0}}, {take(c, r_all, 0, 0, 2 * H)});
        auto r_h = c.add(op::transpose{{1, 0}}, {take(c, r_all, 0, 2 * H, 3 * H)});
        auto h = initial_state(c, f, 5, d);
        const dims state{f.batch, f.hidden};
        std::vector<instruction_ref> hs(f.steps);
        for (std::size_t k = 0; k < f.steps; ++k) {
            const std::size_t step = step_at(f, d, k);
            auto x_gates = at(c, projected, step);
            auto zr =
                c.elementwise(K::sigmoid, {c.elementwise(K::add, {take(c, x_gates, 1, 0, 2 * H),
                                                                  c.add(op::dot{}, {h, r_zr})})});
            auto z = take(c, zr, 1, 0, H), reset = take(c, zr, 1, H, 2 * H);
            auto x_h = take(c, x_gates, 1, 2 * H, 3 * H);
            instruction_ref recurrent;
            if (linear_before_reset) {
                recurrent = c.add(op::dot{}, {h, r_h});
                if (hidden_bias)
                    recurrent =
                        c.elementwise(K::add, {recurrent, c.broadcast_to(hidden_bias, state)});
                recurrent = c.elementwise(K::mul, {reset, recurrent});
            } else {
                recurrent = c.add(op::dot{}, {c.elementwise(K::mul, {reset, h}), r_h});
                if (hidden_bias)
                    recurrent =
                        c.elementwise(K::add, {recurrent, c.broadcast_to(hidden_bias, state)});
            }
            auto candidate = c.elementwise(K::tanh, {c.elementwise(K::add, {x_h, recurrent})});
            // (1 - z) * candidate + z * h = candidate + z * (h - candidate)
            h = c.elementwise(
                K::add,
                {candidate, c.elementwise(K::mul, {z, c.elementwise(K::sub, {h, candidate})})});
            hs[step] = h;
        }
        ys.push_back(stack(c, hs, 0));
        last_h.push_back(h);
    }
    return in_layout(c, f, stack(c, ys, 1), {stack(c, last_h, 0)});
}

// RNN: H = tanh(X Wᵀ + H Rᵀ + Wb + Rb).
outputs build_rnn(node_context& c) {
    const recurrent_form f = read_form(c, 1, {"Tanh"});
    const auto H = std::int64_t(f.hidden);
    std::vector<instruction_ref> ys, last_h;
    for (std::size_t d = 0; d < f.directions; ++d) {
        instruction_ref bias = nullptr;
        if (c.has_input(3)) {
            auto b = at(c, c.input(3), d);
            bias = c.elementwise(K::add, {take(c, b, 0, 0, H), take(c, b, 0, H, 2 * H)});
        }
        auto projected = project(c, f, 1, d, bias);
        auto r = c.add(op::transpose{{1, 0}}, {at(c, c.input(2), d)});
        auto h = initial_state(c, f, 5, d);
        std::vector<instruction_ref> hs(f.steps);
        for (std::size_t k = 0; k < f.steps; ++k) {
            const std::size_t step = step_at(f, d, k);
            h = c.elementwise(K::tanh, {c.elementwise(K::add, {at(c, projected, step),
                                                               c.add(op::dot{}, {h, r})})});
            hs[step] = h;
        }
        ys.push_back(stack(c, hs, 0));
        last_h.push_back(h);
    }
    return in_layout(c, f, stack(c, ys, 1), {stack(c, last_h, 0)});
}

} // namespace

void add_recurrent_ops(op_table& t) {
    t["LSTM"] = {3, 8, build_lstm};
    t["GRU"] = {3, 6, build_gru};
    t["RNN"] = {3, 6, build_rnn};
}

} // namespace conflux::onnx
