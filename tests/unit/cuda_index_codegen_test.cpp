// The index kernel family (pointwise modules, copies of views, concat, pad, gather,
// gather_elements, gather_nd, batch_normalization): every kernel compiles with NVRTC for sm_90
// (no GPU needed), and the index arithmetic of the f32 kernels is checked against the reference
// target by running the generated code on a small host emulator of the CUDA subset those kernels
// use.
#include "conflux/ir/program.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/ref/evaluate.hpp"
#include "cuda/codegen/generator.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "unit/expect_compiles.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <regex>

namespace conflux::cuda {
namespace cuda_index_codegen_test {

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

// ---- a host emulator for the CUDA the f32 index kernels are made of ---------------------------
//
// The generated body is one statement per line: declarations, assignments, loads `inK[...]`,
// stores `outK[...] = v;`, if/else-if/else blocks. Values are doubles; float arithmetic rounds
// to float after every operation as the device does. Out-of-bounds accesses fail the test.

std::vector<std::string> tokenize(const std::string& s) {
    std::vector<std::string> tokens;
    std::size_t i = 0;
    auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    while (i < s.size()) {
        const char c = s[i];
        if (c == ' ') {
            ++i;
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::size_t j = i;
            while (j < s.size() && is_ident(s[j]))
                ++j;
            tokens.push_back(s.substr(i, j - i));
            i = j;
        } else if (std::isdigit(static_cast<unsigned char>(c))) {
            std::size_t j = i;
            const bool hex = s.compare(i, 2, "0x") == 0;
            if (hex) j += 2;
            while (j < s.size() &&
                   (std::isxdigit(static_cast<unsigned char>(s[j])) || s[j] == '.') &&
                   (hex || std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.'))
                ++j;
            if (j < s.size() && (s[j] == 'p' || (!hex && s[j] == 'e'))) {
                ++j;
                if (s[j] == '+' || s[j] == '-') ++j;
                while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])))
                    ++j;
            }
            while (j < s.size() && std::strchr("uUlLf", s[j]) != nullptr)
                ++j;
            tokens.push_back(s.substr(i, j - i));
            i = j;
        } else {
            static const char* pairs[] = {"&&", "||", "==", "!=", "<=", ">="};
            std::string t(1, c);
            for (const char* p : pairs)
                if (s.compare(i, 2, p) == 0) t = p;
            tokens.push_back(t);
            i += t.size();
        }
    }
    return tokens;
}

struct emulator_state {
    std::map<std::string, double> vars;
    std::map<std::string, std::vector<double>> tables;   // __device__ literal tables
    std::vector<std::vector<double>>* buffers = nullptr; // inputs then outputs
    std::size_t inputs = 0;
};

double to_float(double v) {
    return static_cast<double>(static_cast<float>(v));
}

class expression {
public:
    expression(const std::string& text, emulator_state& st) : t_(tokenize(text)), st_(st) {}
    double evaluate() {
        const double v = ternary();
        EXPECT_EQ(p_, t_.size()) << "trailing tokens at " << p_;
        return v;
    }

private:
    std::vector<std::string> t_;
    std::size_t p_ = 0;
    emulator_state& st_;

    bool accept(const char* s) {
        if (p_ < t_.size() && t_[p_] == s) return ++p_, true;
        return false;
    }
    void expect(const char* s) {
        if (!accept(s)) throw std::runtime_error(std::string("expected ") + s);
    }
    static long long integer(double v) { return static_cast<long long>(v); }

    double ternary() {
        const double c = logical_or();
        if (!accept("?")) return c;
        const double a = ternary();
        expect(":");
        const double b = ternary();
        return c != 0 ? a : b;
    }
    double logical_or() {
        double v = logical_and();
        while (accept("||"))
            v = (logical_and() != 0 || v != 0) ? 1 : 0;
        return v;
    }
    double logical_and() {
        double v = equality();
        while (accept("&&"))
            v = (equality() != 0 && v != 0) ? 1 : 0;
        return v;
    }
    double equality() {
        double v = relational();
        for (;;) {
            if (accept("=="))
                v = v == relational();
            else if (accept("!="))
                v = v != relational();
            else
                return v;
        }
    }
    double relational() {
        double v = additive();
        for (;;) {
            if (accept("<"))
                v = v < additive();
            else if (accept(">"))
                v = v > additive();
            else if (accept("<="))
                v = v <= additive();
            else if (accept(">="))
                v = v >= additive();
            else
                return v;
        }
    }
    double additive() {
        double v = multiplicative();
        for (;;) {
            if (accept("+"))
                v += multiplicative();
            else if (accept("-"))
                v -= multiplicative();
            else
                return v;
        }
    }
    // Only index arithmetic divides in these kernels: / and % are integer operations.
    double multiplicative() {
        double v = unary();
        for (;;) {
            if (accept("*")) {
                v *= unary();
            } else if (accept("/")) {
                v = double(integer(v) / integer(unary()));
            } else if (accept("%")) {
                v = double(integer(v) % integer(unary()));
            } else {
                return v;
            }
        }
    }
    double unary() {
        if (accept("-")) return -unary();
        if (accept("!")) return unary() == 0;
        return primary();
    }
    std::vector<double> arguments() {
        std::vector<double> args;
        expect("(");
        if (accept(")")) return args;
        do
            args.push_back(ternary());
        while (accept(","));
        expect(")");
        return args;
    }
    static double number(std::string s) {
        while (!s.empty() && std::strchr("uUlLf", s.back()) != nullptr &&
               !(s.back() == 'f' && s.compare(0, 2, "0x") == 0 && s.find('p') == std::string::npos))
            s.pop_back();
        if (s.find('p') != std::string::npos || s.find('.') != std::string::npos)
            return std::strtod(s.c_str(), nullptr);
        return static_cast<double>(std::stoull(s, nullptr, 0));
    }
    double primary() {
        if (accept("(")) {
            const double v = ternary();
            expect(")");
            return v;
        }
        const std::string name = t_.at(p_++);
        if (std::isdigit(static_cast<unsigned char>(name[0]))) return number(name);
        std::string template_arg;
        if (p_ < t_.size() && t_[p_] == "<" &&
            (name == "static_cast" || name.rfind("cx_", 0) == 0)) {
            for (++p_; t_.at(p_) != ">"; ++p_)
                template_arg += t_[p_];
            ++p_;
        }
        if (p_ < t_.size() && t_[p_] == "[") {
            ++p_;
            const auto at = integer(ternary());
            expect("]");
            return load(name, at);
        }
        if (p_ < t_.size() && t_[p_] == "(") return call(name, template_arg, arguments());
        auto it = st_.vars.find(name);
        if (it == st_.vars.end()) throw std::runtime_error("unknown name " + name);
        return it->second;
    }
    double load(const std::string& name, long long at) {
        auto table = st_.tables.find(name);
        if (table == st_.tables.end() && name.rfind("in", 0) != 0)
            throw std::runtime_error("unknown array " + name);
        const auto& buf =
            table != st_.tables.end() ? table->second : st_.buffers->at(std::stoul(name.substr(2)));
        if (at < 0 || std::size_t(at) >= buf.size())
            throw std::runtime_error(name + "[" + std::to_string(at) + "] is out of bounds");
        return buf[std::size_t(at)];
    }
    static double call(const std::string& f, const std::string& targ,
                       const std::vector<double>& a) {
        auto fl = [](double v) { return static_cast<float>(v); };
        if (f == "static_cast" || f == "cx_narrow")
            return targ == "float" ? to_float(a[0]) : double(integer(a[0]));
        if (f == "cx_widen") return a[0];
        if (f == "cx_add") return double(fl(a[0]) + fl(a[1]));
        if (f == "cx_sub") return double(fl(a[0]) - fl(a[1]));
        if (f == "cx_mul") return double(fl(a[0]) * fl(a[1]));
        if (f == "cx_div") return double(fl(a[0]) / fl(a[1]));
        if (f == "cx_sqrt") return double(std::sqrt(fl(a[0])));
        if (f == "cx_neg") return double(0.0f - fl(a[0]));
        if (f == "cx_relu") return a[0] < 0 ? 0.0 : a[0];
        if (f == "cx_max") return (a[0] > a[1] || std::isnan(a[0])) ? a[0] : a[1];
        if (f == "__uint_as_float")
            return double(std::bit_cast<float>(static_cast<std::uint32_t>(a[0])));
        const long long i = integer(a[0]), n = integer(a.at(1));
        if (f == "cx_gather_index") {
            const long long k = i < 0 ? i + n : i;
            return double(k < 0 ? 0 : (k >= n ? n - 1 : k));
        }
        if (f == "cx_edge_index") return double(i < 0 ? 0 : (i >= n ? n - 1 : i));
        if (f == "cx_reflect_index") {
            if (n == 1) return 0;
            const long long period = 2 * (n - 1), m = ((i % period) + period) % period;
            return double(m < n ? m : period - m);
        }
        throw std::runtime_error("the emulator does not know " + f);
    }
};

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(' ');
    return b == std::string::npos ? "" : s.substr(b);
}

// Runs every thread of a 32-bit generic index kernel over `buffers` (inputs then outputs, in
// storage order).
void emulate(const kernel_source& k, std::vector<std::vector<double>>& buffers,
             std::size_t inputs) {
    std::vector<std::string> lines;
    {
        std::size_t at = 0;
        while (at < k.code.size()) {
            auto end = k.code.find('\n', at);
            if (end == std::string::npos) end = k.code.size();
            lines.push_back(k.code.substr(at, end - at));
            at = end + 1;
        }
    }
    static const std::regex guard(R"(if \(thread >= (\d+)u\) return;)");
    std::size_t first = 0, n = 0;
    for (; first < lines.size(); ++first) {
        std::smatch m;
        if (std::regex_search(lines[first], m, guard)) {
            n = std::stoul(m[1]);
            first += 2; // past "const int i = ..."
            break;
        }
    }
    ASSERT_LT(first, lines.size()) << "not a 32-bit generic index kernel:\n" << k.code;
    const std::size_t last = lines.size() - 1; // the function's closing brace
    static const std::regex if_open(R"(^if \((.*)\) \{$)");
    static const std::regex else_if(R"(^\} else if \((.*)\) \{$)");
    emulator_state st;
    st.buffers = &buffers;
    st.inputs = inputs;
    for (std::size_t l = 0; l < first; ++l) {
        if (lines[l].rfind("__device__ const", 0) != 0) continue;
        const auto open = lines[l].find('[');
        const auto space = lines[l].rfind(' ', open);
        auto& table = st.tables[lines[l].substr(space + 1, open - space - 1)];
        for (++l; lines[l] != "};"; ++l)
            for (const auto& t : tokenize(lines[l]))
                if (t != ",") table.push_back(double(std::stoull(t, nullptr, 0)));
    }
    for (std::size_t thread = 0; thread < n; ++thread) {
        st.vars.clear();
        st.vars["i"] = double(thread);
        struct block {
            bool active, taken;
        };
        std::vector<block> blocks{{true, true}};
        for (std::size_t l = first; l < last; ++l) {
            const std::string s = trim(lines[l]);
            std::smatch m;
            const bool parent = blocks.back().active;
            try {
                if (s == "{") {
                    blocks.push_back({parent, true});
                } else if (std::regex_match(s, m, if_open)) {
                    const bool c = parent && expression(m[1], st).evaluate() != 0;
                    blocks.push_back({c, c});
                } else if (std::regex_match(s, m, else_if) || s == "} else {") {
                    const bool taken = blocks.back().taken;
                    blocks.pop_back();
                    const bool outer = blocks.back().active;
                    const bool c = outer && !taken &&
                                   (s == "} else {" || expression(m[1], st).evaluate() != 0);
                    blocks.push_back({c, taken || c});
                } else if (s == "}") {
                    blocks.pop_back();
                } else if (parent) {
                    ASSERT_EQ(s.back(), ';') << s;
                    const std::string stmt = s.substr(0, s.size() - 1);
                    const auto eq = stmt.find(" = ");
                    const std::string lhs = stmt.substr(0, eq);
                    const double value = eq == std::string::npos
                                             ? 0
                                             : expression(stmt.substr(eq + 3), st).evaluate();
                    if (lhs.rfind("out", 0) == 0) {
                        const auto open = lhs.find('[');
                        const std::size_t b = inputs + std::stoul(lhs.substr(3, open - 3));
                        const auto at = static_cast<long long>(
                            expression(lhs.substr(open + 1, lhs.size() - open - 2), st).evaluate());
                        ASSERT_TRUE(at >= 0 && std::size_t(at) < buffers[b].size())
                            << lhs << " writes out of bounds at " << at;
                        buffers[b][std::size_t(at)] = value;
                    } else {
                        const bool is_float = lhs.find("float") != std::string::npos;
                        const std::string name = lhs.substr(lhs.rfind(' ') + 1);
                        st.vars[name] = is_float ? to_float(value) : value;
                    }
                }
            } catch (const std::exception& e) {
                FAIL() << e.what() << " in line: " << s << "\n" << k.code;
            }
        }
    }
}

std::vector<double> storage_values(const argument& a) {
    const shape& s = a.get_shape();
    std::vector<double> v(s.element_space());
    visit_storage(s.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        for (std::size_t k = 0; k < v.size(); ++k)
            v[k] = convert_value<double>(a.typed<S>()[k]);
    });
    return v;
}

// A buffer of shape s whose storage holds distinct values, so any index mistake shows.
argument distinct(const shape& s, double start = 0.25) {
    argument a{s};
    visit_storage(s.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        for (std::size_t k = 0; k < s.element_space(); ++k)
            a.typed<S>()[k] = convert_value<S>(start + double(k));
    });
    return a;
}

// Generates m's kernel for args' shapes and `outputs`, runs it on the emulator and compares
// every output element with the reference evaluation. Returns the kernel.
kernel_source expect_matches_reference(const module& m, const std::vector<argument>& args,
                                       const std::vector<shape>& outputs,
                                       const std::string& entry) {
    std::vector<shape> inputs;
    for (const auto& a : args)
        inputs.push_back(a.get_shape());
    const kernel_source k = generate_module_kernel(m, inputs, outputs, entry);
    const auto expected = ref::evaluate(m, args);
    std::vector<std::vector<double>> buffers;
    for (const auto& a : args)
        buffers.push_back(storage_values(a));
    for (const auto& s : outputs)
        buffers.emplace_back(s.element_space(), std::nan(""));
    emulate(k, buffers, args.size());
    for (std::size_t r = 0; r < outputs.size(); ++r) {
        const auto want = to_vector<double>(expected[r]);
        for (std::size_t e = 0; e < want.size(); ++e) {
            const double got = buffers[args.size() + r][outputs[r].index_of_element(e)];
            if (got != want[e]) {
                ADD_FAILURE() << entry << ": output " << r << " element " << e << " is " << got
                              << ", the reference gives " << want[e] << "\n"
                              << k.code;
                return k;
            }
        }
    }
    return k;
}

shape f32(dims lens) {
    return {dtype::f32, std::move(lens)};
}
shape f32(dims lens, dims strides) {
    return {dtype::f32, std::move(lens), std::move(strides)};
}

// ---- tests ----------------------------------------------------------------------------------

constexpr op::elementwise_kind all_kinds[] = {
#define CONFLUX_KIND(kind, name, arity) op::elementwise_kind::kind,
    CONFLUX_ELEMENTWISE_KINDS(CONFLUX_KIND)
#undef CONFLUX_KIND
};

op::elementwise kind_op(op::elementwise_kind k) {
    using enum op::elementwise_kind;
    switch (k) {
    case mod:
        return op::make_elementwise(k, 1);
    case leaky_relu:
        return op::make_elementwise(k, 0.01f);
    case elu:
    case celu:
    case thresholded_relu:
        return op::make_elementwise(k, 1.5f);
    case selu:
        return op::make_elementwise(k, 1.67f, 1.05f);
    case hard_sigmoid:
        return op::make_elementwise(k, 0.2f, 0.5f);
    case isinf:
        return op::make_elementwise(k, 1, 0);
    case convert:
        return op::make_convert(dtype::f16);
    default:
        return op::make_elementwise(k);
    }
}

TEST(CudaIndexCodegen, EveryGeneratorOfTheFamilyIsRegistered) {
    for (auto k : all_kinds)
        EXPECT_NE(find_generator(std::string(op::to_string(k))), nullptr) << op::to_string(k);
    for (const char* name : {"pointwise", "reshape", "transpose", "squeeze", "unsqueeze", "flatten",
                             "broadcast", "slice", "contiguous", "concat", "pad", "gather",
                             "gather_elements", "gather_nd", "batch_normalization"})
        EXPECT_NE(find_generator(name), nullptr) << name;
}

// One module per dtype applying every kind to (strided) parameters, one return per kind: each
// kind's device code is compiled for every compute type in a few NVRTC runs.
TEST(CudaIndexCodegen, EveryElementwiseKindCompilesForEveryDtype) {
    std::vector<kernel_source> kernels;
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i32, dtype::i64,
                    dtype::i8, dtype::u8, dtype::boolean}) {
        program p;
        module& m = p.main();
        const shape strided{t, {4, 6}, {1, 4}}; // transposed
        auto a = m.add_parameter("a", strided);
        auto b = m.add_parameter("b", shape{t, {4, 6}});
        auto c = m.add_parameter("c", shape{t, {4, 6}});
        auto cond = m.add_parameter("cond", shape{dtype::boolean, {4, 6}});
        std::vector<instruction_ref> results;
        for (auto k : all_kinds) {
            std::vector<instruction_ref> args{a, b, c};
            if (k == op::elementwise_kind::where) args = {cond, a, b};
            args.resize(op::arity(k));
            results.push_back(m.add_instruction(kind_op(k), args));
        }
        m.add_return(results);
        std::vector<shape> inputs{strided, shape{t, {4, 6}}, shape{t, {4, 6}},
                                  shape{dtype::boolean, {4, 6}}};
        std::vector<shape> outputs;
        for (auto r : results)
            outputs.push_back(r->get_shape().as_standard());
        const std::string entry = "all_kinds_" + std::string(to_string(t));
        kernels.push_back(generate_module_kernel(m, inputs, outputs, entry));
        const std::string& code = kernels.back().code;
        EXPECT_EQ(count(code, "out" + std::to_string(results.size() - 1) + "["), 1u);
        // Every parameter is read once: CSE shares loads between the kinds.
        EXPECT_EQ(count(code, "in0["), 1u) << code;
    }
    expect_compiles(kernels);
    // The f16 arithmetic rounds every result to f16.
    EXPECT_NE(kernels[1].code.find("cx_narrow<cx_f16>(cx_add("), std::string::npos);
}

// Every single-op generator, through generate_kernel, for f32 and i64 operands.
TEST(CudaIndexCodegen, SingleElementwiseOpsCompileThroughTheirGenerators) {
    std::vector<kernel_source> kernels;
    for (dtype t : {dtype::f32, dtype::i64}) {
        for (auto k : all_kinds) {
            const operation op = kind_op(k);
            std::vector<shape> inputs(op::arity(k), shape{t, {3, 5}, {1, 3}});
            if (k == op::elementwise_kind::where) inputs[0] = shape{dtype::boolean, {3, 5}};
            const shape out = op.compute_shape(inputs);
            kernel_request r{
                &op, inputs, {out}, {}, "op_" + op.name() + "_" + std::string(to_string(t))};
            kernels.push_back(generate_kernel(r));
            EXPECT_EQ(kernels.back().inputs, inputs.size());
            EXPECT_EQ(kernels.back().outputs, 1u);
            EXPECT_EQ(kernels.back().launch.block[0], 256u);
        }
    }
    expect_compiles(kernels);
}

TEST(CudaIndexCodegen, StandardOperandsGiveSimpleLinearCode) {
    program p;
    module& m = p.main();
    auto a = m.add_parameter("a", f32({8, 16, 4}));
    auto b = m.add_parameter("b", f32({8, 16, 4}));
    m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {a, b})});
    const auto k = generate_module_kernel(m, {f32({8, 16, 4}), f32({8, 16, 4})}, {f32({8, 16, 4})},
                                          "simple_add");
    EXPECT_NE(k.code.find("in0[i]"), std::string::npos) << k.code;
    EXPECT_NE(k.code.find("in1[i]"), std::string::npos) << k.code;
    EXPECT_NE(k.code.find("out0[i] = "), std::string::npos) << k.code;
    EXPECT_EQ(k.code.find(" / "), std::string::npos) << k.code;
    EXPECT_EQ(k.code.find(" % "), std::string::npos) << k.code;
    EXPECT_EQ(k.launch.grid[0], 2u); // 512 elements, 256 threads a block
    expect_compiles({k});
}

// An NHWC-strided chain: threads walk the output in memory order, so operands with its layout
// are read at the thread's index, and the broadcast bias through the decomposed channel.
TEST(CudaIndexCodegen, OperandsLaidOutLikeTheOutputAreReadAtTheThreadIndex) {
    const dims lens{2, 3, 4, 5};
    const dims nhwc{60, 1, 15, 3};
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", f32(lens));
    auto y = m.add_parameter("y", f32(lens));
    auto bias = m.add_parameter("bias", f32({3, 1, 1}));
    auto sum = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {x, y});
    auto b = m.add_instruction(op::broadcast{lens}, {bias});
    m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::mul), {sum, b})});
    const auto k = expect_matches_reference(
        m, {distinct(f32(lens, nhwc)), distinct(f32(lens, nhwc), 7), distinct(f32({3, 1, 1}), -1)},
        {f32(lens, nhwc)}, "nhwc_chain");
    EXPECT_NE(k.code.find("in0[i]"), std::string::npos) << k.code;
    EXPECT_NE(k.code.find("in1[i]"), std::string::npos) << k.code;
    EXPECT_NE(k.code.find("out0[i] = "), std::string::npos) << k.code;
    EXPECT_NE(k.code.find(" = i % 3;"), std::string::npos) << k.code; // C is the fastest axis
    EXPECT_EQ(k.code.find(" / "), std::string::npos) << k.code;       // nothing else needed
    expect_compiles({k});
}

TEST(CudaIndexCodegen, AValueUsedTwiceIsComputedOnce) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", f32({4, 4}));
    auto e = m.add_instruction(op::make_elementwise(op::elementwise_kind::exp), {x});
    auto sq = m.add_instruction(op::make_elementwise(op::elementwise_kind::mul), {e, e});
    m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {sq, e})});
    const auto k = generate_module_kernel(m, {f32({4, 4})}, {f32({4, 4})}, "cse");
    EXPECT_EQ(count(k.code, "in0["), 1u) << k.code;
    EXPECT_EQ(count(k.code, "cx_exp("), 1u) << k.code;
    expect_compiles({k});
}

// relu(x^T * bias + y) with x read transposed, bias broadcast along rows, y strided, and the
// result written transposed: the emulator checks every element.
TEST(CudaIndexCodegen, PointwiseModuleWithBroadcastsAndTransposesMatchesTheReference) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", f32({5, 3}));
    auto bias = m.add_parameter("bias", f32({5}));
    auto y = m.add_parameter("y", f32({3, 5}));
    auto xt = m.add_instruction(op::transpose{{1, 0}}, {x});
    auto bb = m.add_instruction(op::broadcast{{3, 5}}, {bias});
    auto prod = m.add_instruction(op::make_elementwise(op::elementwise_kind::mul), {xt, bb});
    auto sum = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {prod, y});
    m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {sum})});
    const std::vector<argument> args{distinct(f32({5, 3})), distinct(f32({5}), -2),
                                     distinct(f32({3, 5}, {1, 4}), -7)}; // y strided
    const auto k = expect_matches_reference(m, args, {f32({3, 5}, {1, 3})}, "pointwise_views");
    expect_compiles({k});

    // Through the pointwise generator, as lowering calls it.
    program outer;
    module& sub = outer.main().create_submodule("pw");
    auto sx = sub.add_parameter("x", f32({5, 3}));
    sub.add_return({sub.add_instruction(op::make_elementwise(op::elementwise_kind::neg),
                                        {sub.add_instruction(op::transpose{{1, 0}}, {sx})})});
    const operation pw = op::pointwise{};
    const auto k2 = generate_kernel({&pw, {f32({5, 3}, {1, 5})}, {f32({3, 5})}, {&sub}, "pw"});
    expect_compiles({k2});
}

TEST(CudaIndexCodegen, SeveralReturnsEachGoToTheirOwnOutput) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", f32({4, 6}));
    auto r = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {x});
    auto flat = m.add_instruction(op::reshape{{24}}, {r});
    auto first = m.add_instruction(op::slice{{1}, {0}, {2}, {}}, {r});
    auto negated = m.add_instruction(op::make_elementwise(op::elementwise_kind::neg), {r});
    m.add_return({r, flat, first, negated});
    const auto k = expect_matches_reference(
        m, {distinct(f32({4, 6}), -11)},
        {f32({4, 6}, {1, 4}), f32({24}), f32({4, 2}, {2, 1}), f32({4, 6})}, "four_returns");
    EXPECT_NE(k.code.find("if (i < 8)"), std::string::npos) << k.code; // the smaller space
    // One load per index space: the two returns over [4, 6] share theirs.
    EXPECT_EQ(count(k.code, "in0["), 3u) << k.code;
    expect_compiles({k});
}

// Each view, alone and chained, as a copy of a strided input into a strided output.
TEST(CudaIndexCodegen, CopiesOfViewsMatchTheReference) {
    struct view_case {
        const char* name;
        shape input;
        std::vector<operation> ops;
        std::function<shape(const shape&)> output = [](const shape& s) { return s.as_standard(); };
    };
    const std::vector<view_case> cases{
        {"transpose3", f32({2, 3, 4}), {op::transpose{{2, 0, 1}}}},
        {"reshape_of_transposed", f32({4, 6}, {1, 4}), {op::reshape{{2, 3, 4}}}},
        {"reshape_split_merge", f32({6, 4}), {op::reshape{{2, 12}}}},
        {"reshape_regroup", f32({3, 4, 5}), {op::transpose{{1, 0, 2}}, op::reshape{{2, 2, 15}}}},
        // A transpose after a reshape hands the reshape per-axis indices: merged, split and
        // regrouped axes (with len-1 axes around) each map group by group.
        {"transpose_of_merge", f32({2, 3, 4}), {op::reshape{{6, 4}}, op::transpose{{1, 0}}}},
        {"transpose_of_split",
         f32({6, 4}, {1, 6}),
         {op::reshape{{2, 3, 4}}, op::transpose{{2, 0, 1}}}},
        {"transpose_of_regroup",
         f32({2, 1, 6}),
         {op::reshape{{1, 4, 3, 1}}, op::transpose{{2, 1, 0, 3}}}},
        {"flatten", f32({2, 3, 4}, {1, 2, 6}), {op::flatten{2}}},
        {"squeeze_unsqueeze", f32({3, 1, 4}), {op::squeeze{{1}}, op::unsqueeze{{0, 3}}}},
        {"squeeze_all", f32({1, 3, 1}), {op::squeeze{{}}}},
        {"broadcast", f32({3, 1}), {op::broadcast{{2, 3, 4}}}},
        {"slice_negative_step", f32({5, 7}), {op::slice{{0, 1}, {-1, 1}, {-6, 7}, {-2, 3}}}},
        {"slice_then_transpose",
         f32({6, 5}, {1, 6}),
         {op::slice{{0}, {1}, {5}, {}}, op::transpose{{1, 0}}}},
        {"contiguous", f32({3, 4}, {1, 3}), {op::contiguous{}}},
        {"to_strided_output",
         f32({3, 4}),
         {op::transpose{{1, 0}}},
         [](const shape& s) {
             return f32(s.lens(), {1, 8});
         }},
        {"thin_transpose", f32({3, 40}), {op::transpose{{1, 0}}}},
    };
    std::vector<kernel_source> kernels;
    for (const auto& c : cases) {
        program p;
        module& m = p.main();
        instruction_ref at = m.add_parameter("x", c.input.as_standard());
        for (const auto& op : c.ops)
            at = m.add_instruction(op, {at});
        m.add_return({at});
        SCOPED_TRACE(c.name);
        kernels.push_back(
            expect_matches_reference(m, {distinct(c.input)}, {c.output(at->get_shape())}, c.name));
        EXPECT_EQ(kernels.back().code.find("__shared__"), std::string::npos);
    }
    expect_compiles(kernels);
}

TEST(CudaIndexCodegen, ConcatPadGatherMatchTheReference) {
    std::vector<kernel_source> kernels;
    auto check = [&](const char* name, const std::vector<argument>& args,
                     const std::function<instruction_ref(module&, std::vector<instruction_ref>)>& f,
                     std::function<shape(const shape&)> output = {}) {
        SCOPED_TRACE(name);
        program p;
        module& m = p.main();
        std::vector<instruction_ref> params;
        for (std::size_t i = 0; i < args.size(); ++i)
            params.push_back(
                m.add_parameter("x" + std::to_string(i), args[i].get_shape().as_standard()));
        auto r = f(m, params);
        m.add_return({r});
        const shape out = output ? output(r->get_shape()) : r->get_shape().as_standard();
        kernels.push_back(expect_matches_reference(m, args, {out}, name));
    };
    auto single = [](operation op) {
        return [op](module& m, std::vector<instruction_ref> in) {
            return m.add_instruction(op, std::move(in));
        };
    };
    check("concat",
          {distinct(f32({2, 3})), distinct(f32({2, 0}), 50), distinct(f32({2, 4}, {1, 2}), 100),
           distinct(f32({2, 1}), 200)},
          single(op::concat{1}));
    check("concat_transposed_out", {distinct(f32({2, 3})), distinct(f32({1, 3}), 50)},
          single(op::concat{0}), [](const shape& s) {
              return f32(s.lens(), {1, 3});
          });
    for (auto mode : {op::pad_mode::constant, op::pad_mode::reflect, op::pad_mode::edge}) {
        const std::string name = "pad_" + std::string(op::pad_mode_name(mode));
        check(name.c_str(), {distinct(f32({3, 4}, {1, 3}))},
              single(op::pad{{1, 0, 5, 2}, -1.5f, mode}));
        check((name + "_len1").c_str(), {distinct(f32({1, 3}))},
              single(op::pad{{2, 1, 3, 0}, 7.0f, mode}));
    }
    argument indices{shape{dtype::i64, {2, 2}}};
    const std::int64_t idx[] = {0, -1, 2, -3};
    std::memcpy(indices.data(), idx, sizeof idx);
    check("gather", {distinct(f32({2, 3, 4}, {1, 2, 6})), indices}, single(op::gather{1}));
    argument scalar_index{shape{dtype::i32, {}}};
    const std::int32_t two = 2;
    std::memcpy(scalar_index.data(), &two, sizeof two);
    check("gather_scalar_index", {distinct(f32({4, 3})), scalar_index}, single(op::gather{0}));
    argument elements{shape{dtype::i64, {2, 3}}};
    const std::int64_t el[] = {1, 0, -1, 2, -2, 0};
    std::memcpy(elements.data(), el, sizeof el);
    check("gather_elements", {distinct(f32({3, 3}, {1, 3})), elements},
          single(op::gather_elements{0}));
    check("gather_elements_axis1", {distinct(f32({2, 4})), elements},
          single(op::gather_elements{1}));
    // Rows of 2 indices into [3, 4, 5] (slices of 5), and batch_dims 1 with rows of 1.
    argument rows{shape{dtype::i64, {3, 2}}};
    const std::int64_t rw[] = {2, -1, 0, 3, -3, 1};
    std::memcpy(rows.data(), rw, sizeof rw);
    check("gather_nd", {distinct(f32({3, 4, 5}, {1, 3, 12})), rows}, single(op::gather_nd{}));
    argument batched{shape{dtype::i32, {3, 2, 1}}};
    const std::int32_t bt[] = {3, 0, -1, 2, 1, 1};
    std::memcpy(batched.data(), bt, sizeof bt);
    check("gather_nd_batch_dims_1", {distinct(f32({3, 4, 5})), batched}, single(op::gather_nd{1}));
    // Several of these in one module, sharing the index space.
    check("pad_of_concat_of_slices", {distinct(f32({4, 5}))},
          [](module& m, std::vector<instruction_ref> in) {
              auto a = m.add_instruction(op::slice{{0}, {0}, {2}, {}}, {in[0]});
              auto b = m.add_instruction(op::slice{{0}, {-1}, {-3}, {-1}}, {in[0]});
              auto c = m.add_instruction(op::concat{1}, {a, b});
              return m.add_instruction(op::pad{{0, 1, 0, 2}, 0.0f, op::pad_mode::reflect}, {c});
          });
    expect_compiles(kernels);
}

TEST(CudaIndexCodegen, BatchNormalizationMatchesTheReference) {
    program p;
    module& m = p.main();
    std::vector<instruction_ref> in{m.add_parameter("x", f32({2, 3, 2, 2}))};
    for (const char* name : {"scale", "bias", "mean", "var"})
        in.push_back(m.add_parameter(name, f32({3})));
    m.add_return({m.add_instruction(op::batch_norm{1e-3f}, in)});
    const auto k = expect_matches_reference(m,
                                            {distinct(f32({2, 3, 2, 2}, {12, 1, 6, 3}), -5),
                                             distinct(f32({3}), 0.5), distinct(f32({3}), -1),
                                             distinct(f32({3}), 0.125), distinct(f32({3}), 2)},
                                            {f32({2, 3, 2, 2})}, "batch_norm");
    // The f16 form, through its generator.
    const operation bn = op::batch_norm{1e-5f};
    std::vector<shape> inputs{shape{dtype::f16, {2, 8, 3}}};
    for (int i = 0; i < 4; ++i)
        inputs.push_back(shape{i < 2 ? dtype::f32 : dtype::f64, {8}});
    const auto k16 = generate_kernel({&bn, inputs, {shape{dtype::f16, {2, 8, 3}}}, {}, "bn16"});
    expect_compiles({k, k16});
}

TEST(CudaIndexCodegen, LiteralsAreCompiledIntoTheKernel) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", f32({2, 3}));
    auto table = m.add_literal(from_vector(dtype::f32, {3}, std::vector<float>{1.5f, -2, 0.25f}));
    auto one = m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{-0.0f}));
    auto t = m.add_instruction(op::broadcast{{2, 3}}, {table});
    auto o = m.add_instruction(op::broadcast{{2, 3}}, {one});
    auto sum = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {x, t});
    m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::sub), {sum, o})});
    const auto k = expect_matches_reference(m, {distinct(f32({2, 3}))}, {f32({2, 3})}, "literals");
    EXPECT_NE(k.code.find("literals_literal0[3]"), std::string::npos) << k.code;
    EXPECT_NE(k.code.find("0x80000000"), std::string::npos) << k.code; // -0, exactly
    expect_compiles({k});
}

TEST(CudaIndexCodegen, ZeroElementOutputsLaunchNothing) {
    const operation add = op::make_elementwise(op::elementwise_kind::add);
    const shape empty = f32({3, 0});
    const auto k = generate_kernel({&add, {empty, empty}, {empty}, {}, "empty_add"});
    EXPECT_TRUE(k.empty());
    EXPECT_EQ(k.inputs, 2u);
    EXPECT_EQ(k.outputs, 1u);
    expect_compiles({k});
}

TEST(CudaIndexCodegen, TransposesAreTiledThroughSharedMemory) {
    std::vector<kernel_source> kernels;
    const operation t2 = op::transpose{{1, 0}};
    kernels.push_back(generate_kernel({&t2, {f32({64, 48})}, {f32({48, 64})}, {}, "tiled_2d"}));
    // NCHW -> NHWC: H and W merge into one long axis.
    const operation nhwc = op::transpose{{0, 2, 3, 1}};
    kernels.push_back(generate_kernel({&nhwc,
                                       {shape{dtype::f16, {2, 32, 7, 7}}},
                                       {shape{dtype::f16, {2, 7, 7, 32}}},
                                       {},
                                       "tiled_nhwc"}));
    // A copy of a standard input into a transposed output layout.
    const operation copy = op::contiguous{};
    kernels.push_back(
        generate_kernel({&copy, {f32({40, 40}, {1, 40})}, {f32({40, 40})}, {}, "tiled_copy"}));
    for (const auto& k : kernels) {
        EXPECT_NE(k.code.find("__shared__"), std::string::npos) << k.code;
        EXPECT_NE(k.code.find("[33]"), std::string::npos) << k.code; // padded against conflicts
        EXPECT_EQ(k.launch.block[0] * k.launch.block[1], 256u);
    }
    EXPECT_EQ(kernels[0].launch.grid[0], 4u); // 2 x 2 tiles of 32 x 32
    EXPECT_EQ(kernels[1].launch.grid[0], 4u); // 2 images x 1 x 2 tiles
    // No transposed axis pair: the generic kernel.
    const operation same = op::transpose{{0, 2, 1}};
    const auto generic =
        generate_kernel({&same, {f32({64, 1, 48})}, {f32({64, 48, 1})}, {}, "not_tiled"});
    EXPECT_EQ(generic.code.find("__shared__"), std::string::npos) << generic.code;
    kernels.push_back(generic);
    expect_compiles(kernels);
}

TEST(CudaIndexCodegen, HugeTensorsUse64BitIndices) {
    const operation add = op::make_elementwise(op::elementwise_kind::add);
    const shape big{dtype::f16, {3, 1u << 30}};
    const auto k = generate_kernel({&add, {big, big}, {big}, {}, "big_add"});
    EXPECT_NE(k.code.find("for (long long i"), std::string::npos) << k.code;
    const shape small = f32({4, 4});
    const auto k32 = generate_kernel({&add, {small, small}, {small}, {}, "small_add"});
    EXPECT_EQ(k32.code.find("long long"), std::string::npos) << k32.code;
    // So does a transpose of 2^32 elements (tiled: the grid still fits).
    const operation t = op::transpose{{1, 0}};
    const auto kt = generate_kernel(
        {&t, {f32({1u << 16, 1u << 16})}, {f32({1u << 16, 1u << 16})}, {}, "big_t"});
    EXPECT_NE(kt.code.find("long long"), std::string::npos) << kt.code;
    expect_compiles({k, k32, kt});
}

TEST(CudaIndexCodegen, AnOpItCannotComputeIsAnInternalErrorNamingIt) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", f32({2, 2}));
    m.add_return({m.add_instruction(op::dot{}, {x, x})});
    try {
        generate_module_kernel(m, {f32({2, 2})}, {f32({2, 2})}, "bad");
        FAIL() << "expected an error";
    } catch (const internal_error& e) {
        EXPECT_NE(std::string(e.what()).find("dot"), std::string::npos) << e.what();
    }
}

} // namespace cuda_index_codegen_test
} // namespace conflux::cuda
