// Programs to JSON and back (conflux/ops/program_serialization.hpp) through CBOR, as a .cfx file
// will store them: every op through the registry, every repository and zoo model as imported
// and after the passes, and the errors a damaged file gives.
#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/onnx/import.hpp"
#include "conflux/ops/attention.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/op_registry.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/program_serialization.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/resize.hpp"
#include "conflux/ops/round_mantissa.hpp"
#include "conflux/ops/scan.hpp"
#include "conflux/ops/scatter.hpp"
#include "conflux/ops/top_k.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"
#include "unit/test_files.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace program_serialization_test {

using namespace conflux;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

json through_cbor(const json& j) {
    return json::from_cbor(json::to_cbor(j));
}

program round_trip(const program& p) {
    return program_from_json(through_cbor(program_to_json(p)));
}

// The same text, and the same op in every instruction: the printed text shows neither a
// literal's values nor the attributes of an op that prints none, so operator== checks those.
void expect_same_program(const program& a, const program& b) {
    EXPECT_EQ(a.to_string(), b.to_string());
    ASSERT_EQ(a.modules().size(), b.modules().size());
    for (const auto& [name, m] : a.modules()) {
        const module* other = b.get_module(name);
        ASSERT_NE(other, nullptr) << name;
        ASSERT_EQ(m->size(), other->size()) << name;
        auto it = other->begin();
        std::size_t i = 0;
        for (const auto& ins : *m) {
            EXPECT_TRUE(ins.get_operator() == it->get_operator())
                << "module " << name << ", instruction " << i << ": " << ins.name();
            ++it;
            ++i;
        }
    }
}

// ---- one op of every struct, its fields away from their defaults -------------------------

struct sample_op {
    std::string op_struct; // the struct's name in its header
    operation op;
};

using op_family = std::vector<sample_op>;

op_family view_ops() {
    return {{"reshape", op::reshape{{2, 3, 4}}},
            {"transpose", op::transpose{{2, 0, 1}}},
            {"squeeze", op::squeeze{{1, 3}}},
            {"unsqueeze", op::unsqueeze{{0, 2}}},
            {"flatten", op::flatten{2}},
            {"broadcast", op::broadcast{{4, 1, 3}}},
            {"slice", op::slice{{0, 2}, {1, -3}, {5, -1}, {1, -2}}},
            {"slice", op::slice{{}, {1}, {4}, {}}},
            {"contiguous", op::contiguous{}}};
}

op_family elementwise_ops() {
    op_family ops;
    for (auto k : op::all_elementwise_kinds) {
        ops.push_back({"elementwise", op::elementwise{.kind = k}});
        ops.push_back({"elementwise", op::elementwise{k, 0.25f, -1.5f, dtype::bf16}});
    }
    // Infinity, which JSON text cannot spell but CBOR keeps.
    ops.push_back({"elementwise", op::make_elementwise(op::elementwise_kind::isinf,
                                                       std::numeric_limits<float>::infinity(),
                                                       -std::numeric_limits<float>::max())});
    return ops;
}

op_family data_movement_ops() {
    op_family ops{{"concat", op::concat{2}},
                  {"gather", op::gather{1}},
                  {"gather_elements", op::gather_elements{2}},
                  {"trilu", op::trilu{false, -3}},
                  {"gather_nd", op::gather_nd{1}}};
    for (auto m : op::all_pad_modes)
        ops.push_back({"pad", op::pad{{1, 0, 2, 3}, -2.5f, m}});
    ops.push_back({"pad", op::pad{{0, 1}, -std::numeric_limits<float>::infinity()}});
    return ops;
}

op_family reduction_ops() {
    op_family ops;
    for (auto k : op::all_reduce_kinds)
        ops.push_back({"reduce", op::reduce{k, {0, 2}, false, true}});
    for (bool log : {false, true})
        ops.push_back({"softmax", op::softmax{.axis = 3, .log = log}});
    for (bool max : {false, true})
        ops.push_back({"arg_reduce", op::arg_reduce{max, 2, false, true}});
    ops.push_back({"cumsum", op::cumsum{1, true, true}});
    ops.push_back({"top_k", op::top_k{1, 5, false}});
    return ops;
}

op_family anchor_ops() {
    return {{"convolution", op::convolution{{1, 2, 1, 2}, {2, 1}, {1, 3}, 4, true}},
            {"convolution", op::convolution{}},
            {"dot", op::dot{}},
            {"attention", op::attention{0.125f, true, {0, 2, 1, 3}}},
            {"attention", op::attention{}}};
}

op_family normalization_and_pooling_ops() {
    op_family ops{{"batch_norm", op::batch_norm{1e-3f}},
                  {"layer_norm", op::layer_norm{2, 1e-6f, false}},
                  {"layer_norm", op::layer_norm{}}};
    for (auto m : {op::pooling_mode::max, op::pooling_mode::average}) {
        ops.push_back(
            {"pooling", op::pooling{m, {3, 2}, {2, 1}, {1, 0, 1, 1}, {1, 2}, true, true, true}});
        ops.push_back({"pooling", op::pooling{.mode = m, .lengths = {2}}});
    }
    return ops;
}

op_family resize_ops() {
    op_family ops;
    for (auto m : op::all_resize_modes)
        for (auto c : op::all_resize_coordinates)
            for (auto n : op::all_resize_nearest)
                ops.push_back({"resize", op::resize{.mode = m,
                                                    .coordinates = c,
                                                    .nearest = n,
                                                    .cubic_coeff_a = -0.5f,
                                                    .exclude_outside = true,
                                                    .antialias = true,
                                                    .extrapolation_value = 1.5f,
                                                    .scales = {1, 1, 2, 0.5},
                                                    .roi = {0, 0, 0.1, 0.2, 1, 1, 0.9, 0.8},
                                                    .out_lens = {1, 3, 8, 2}}});
    return ops;
}

op_family other_ops() {
    op_family ops{{"scatter_elements", op::scatter_elements{2, op::scatter_reduction::max}},
                  {"round_mantissa", op::round_mantissa{7}},
                  {"get_tuple_elem", op::get_tuple_elem{1}},
                  {"pointwise", op::pointwise{}},
                  {"fused_gemm", op::fused_gemm{}}};
    for (auto r : op::all_scatter_reductions)
        ops.push_back({"scatter_nd", op::scatter_nd{r}});
    return ops;
}

const std::map<std::string, op_family>& op_families() {
    static const std::map<std::string, op_family> families = {
        {"views", view_ops()},
        {"elementwise", elementwise_ops()},
        {"data_movement", data_movement_ops()},
        {"reductions", reduction_ops()},
        {"anchors", anchor_ops()},
        {"normalization_and_pooling", normalization_and_pooling_ops()},
        {"resize", resize_ops()},
        {"scatters_and_others", other_ops()},
    };
    return families;
}

std::vector<std::string> family_names() {
    std::vector<std::string> names;
    for (const auto& family : op_families())
        names.push_back(family.first);
    return names;
}

// The ops a module makes itself, which the registry does not hold.
const std::set<std::string> builtin_structs = {"param", "literal", "return_op"};

// ---- what the sources declare ---------------------------------------------------------------

std::vector<fs::path> op_sources() {
    const fs::path root = CONFLUX_SOURCE_DIR;
    std::vector<fs::path> files;
    for (const auto* dir : {"include/conflux/ops", "include/conflux/ir", "src/ops"})
        for (const auto& e : fs::directory_iterator(root / dir))
            files.push_back(e.path());
    return files;
}

// Every struct at namespace level (the code base does not indent namespaces) whose body
// declares `std::string name() const`: the op structs.
std::set<std::string> declared_op_structs() {
    std::set<std::string> found;
    const std::regex head(R"(\nstruct (\w+) \{)");
    for (const auto& file : op_sources()) {
        const std::string text = test::slurp(file);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), head);
             it != std::sregex_iterator(); ++it) {
            const auto body_start = std::size_t(it->position() + it->length());
            const auto body_end = text.find("\n};", body_start);
            if (text.substr(body_start, body_end - body_start).find("std::string name() const") !=
                std::string::npos)
                found.insert((*it)[1]);
        }
    }
    return found;
}

// The enumerators of `enum class name { ... }` in `header`.
std::size_t enumerator_count(const std::string& header, const std::string& name) {
    const std::string text = test::slurp(fs::path(CONFLUX_SOURCE_DIR) / header);
    const auto start = text.find("enum class " + name + " {");
    EXPECT_NE(start, std::string::npos) << name;
    const auto open = text.find('{', start);
    const std::string body = text.substr(open + 1, text.find('}', open) - open - 1);
    const std::regex enumerator(R"(\w+)");
    return std::size_t(
        std::distance(std::sregex_iterator(body.begin(), body.end(), enumerator), {}));
}

// ---- the models -----------------------------------------------------------------------------

std::vector<std::string> model_dirs() {
    std::vector<std::string> dirs;
    for (const auto* set : {"tests/models/data", "tests/zoo/data"})
        for (const auto& e : fs::directory_iterator(fs::path(CONFLUX_SOURCE_DIR) / set))
            if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path().string());
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

// The data set's inputs fix the lens of every symbolic dim, as the conformance runner does.
program import_model_dir(const fs::path& dir) {
    conflux::onnx::import_options options;
    const fs::path data = dir / "test_data_set_0";
    for (std::size_t i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i) {
        std::string name;
        const auto value = conflux::onnx::read_tensor_file(
            (data / ("input_" + std::to_string(i) + ".pb")).string(), &name);
        if (!name.empty()) options.input_dims[name] = value.get_shape().lens();
    }
    return conflux::onnx::import_model((dir / "model.onnx").string(), options);
}

std::vector<argument> run_on_random_inputs(const program& p) {
    std::mt19937_64 rng(18);
    ref::parameter_map params;
    for (auto* param : p.main().parameters())
        params[param->get_operator().get_if<op::param>()->name_] =
            random_argument(param->get_shape(), rng);
    return ref::evaluate(p, params);
}

void expect_same_results(const program& a, const program& b) {
    const auto want = run_on_random_inputs(a);
    const auto got = run_on_random_inputs(b);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].get_shape(), want[i].get_shape()) << "output " << i;
        EXPECT_TRUE(got[i].same_values(want[i])) << "output " << i;
    }
}

// ---- damaged files --------------------------------------------------------------------------

// main: %x -> convolution with a literal -> pointwise0 (relu) -> return "y".
program small_program() {
    program p;
    module& sub = p.create_module("pointwise0");
    auto s = sub.add_parameter("p0", shape(dtype::f32, {1, 4, 8, 8}));
    sub.add_return({sub.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {s})});
    module& m = p.main();
    auto x = m.add_parameter("x", shape(dtype::f32, {1, 3, 8, 8}));
    std::mt19937_64 rng(7);
    auto w = m.add_literal(random_argument(shape(dtype::f32, {4, 3, 3, 3}), rng));
    auto c = m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1}, {x, w});
    m.add_return({m.add_instruction(op::pointwise{}, {c}, {&sub})}, {"y"});
    return p;
}

// The instructions of module `name` in a saved program.
json& instructions_of(json& j, const std::string& name) {
    for (auto& m : j["modules"])
        if (m["name"] == name) return m["instructions"];
    throw std::runtime_error("no module " + name);
}

void expect_user_error(const json& j, const std::string& fragment) {
    try {
        (void)program_from_json(j);
        ADD_FAILURE() << "no error (expected '" << fragment << "') for " << j.dump();
    } catch (const user_error& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
            << "'" << e.what() << "' does not contain '" << fragment << "'";
    } catch (const std::exception& e) {
        ADD_FAILURE() << "not a user_error: " << e.what() << " (expected '" << fragment << "')";
    }
}

// Every value inside `j`, as JSON pointers.
std::vector<json::json_pointer> every_value(const json& j) {
    std::vector<json::json_pointer> found;
    std::vector<json::json_pointer> work{json::json_pointer()};
    while (!work.empty()) {
        auto at = work.back();
        work.pop_back();
        found.push_back(at);
        const json& v = j.at(at);
        if (v.is_object())
            for (const auto& field : v.items())
                work.push_back(at / field.key());
        else if (v.is_array())
            for (std::size_t i = 0; i < v.size(); ++i)
                work.push_back(at / i);
    }
    return found;
}

} // namespace

// ---- ops ------------------------------------------------------------------------------------

class op_registry_family : public testing::TestWithParam<std::string> {};

TEST_P(op_registry_family, every_op_round_trips_through_name_and_attributes) {
    for (const auto& [op_struct, op] : op_families().at(GetParam())) {
        SCOPED_TRACE(op.to_string());
        const operation back = make_op(op.name(), through_cbor(op.attributes()));
        EXPECT_EQ(back.name(), op.name());
        // operator== compares every field, so an attribute that attributes() left out fails here.
        EXPECT_TRUE(back == op) << "read back as " << back.to_string();
    }
}

INSTANTIATE_TEST_SUITE_P(families, op_registry_family, testing::ValuesIn(family_names()),
                         [](const auto& info) { return info.param; });

TEST(op_registry, covers_every_op_struct_and_every_name) {
    std::set<std::string> sampled_structs = builtin_structs;
    std::set<std::string> sampled_names;
    for (const auto& [family, ops] : op_families())
        for (const auto& [op_struct, op] : ops) {
            sampled_structs.insert(op_struct);
            sampled_names.insert(op.name());
        }
    // A struct added to the sources without a sample here fails, and so does one that the
    // registry misses: the samples' names are exactly the registered names.
    const auto declared = declared_op_structs();
    EXPECT_EQ(sampled_structs, declared);
    const auto registered = registered_op_names();
    EXPECT_EQ(sampled_names, std::set<std::string>(registered.begin(), registered.end()));
    // The lists of every value of an enum, which the registry and the readers walk.
    const std::tuple<std::size_t, const char*, const char*> value_lists[] = {
        {std::size(op::all_reduce_kinds), "reduce.hpp", "reduce_kind"},
        {std::size(op::all_pad_modes), "data_movement.hpp", "pad_mode"},
        {std::size(op::all_resize_modes), "resize.hpp", "resize_mode"},
        {std::size(op::all_resize_coordinates), "resize.hpp", "resize_coordinates"},
        {std::size(op::all_resize_nearest), "resize.hpp", "resize_nearest"},
        {std::size(op::all_scatter_reductions), "scatter.hpp", "scatter_reduction"},
    };
    for (const auto& [count, header, name] : value_lists)
        EXPECT_EQ(count, enumerator_count(std::string("include/conflux/ops/") + header, name))
            << name;
    for (const auto& name : registered)
        EXPECT_NE(name.front(), '@') << name;
    EXPECT_TRUE(op_takes_submodules("pointwise"));
    EXPECT_TRUE(op_takes_submodules("fused_gemm"));
    EXPECT_FALSE(op_takes_submodules("convolution"));
}

TEST(op_registry, bad_attributes_name_the_attribute) {
    auto expect_error = [](const std::string& name, const json& attributes,
                           const std::string& fragment) {
        try {
            (void)make_op(name, attributes);
            ADD_FAILURE() << "no error for " << name << attributes.dump();
        } catch (const user_error& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expect_error("convolutoin", json::object(), "unknown op 'convolutoin'");
    expect_error("relu", json::array(), "attributes: expected an object");
    expect_error("relu", {{"alpha", 0}}, "attributes.alpha: relu has no such attribute");
    expect_error("concat", json::object(), "attributes: the field 'axis' is missing");
    expect_error("concat", {{"axis", 1.5}}, "attributes.axis: expected a 64-bit integer");
    expect_error("concat", {{"axis", std::numeric_limits<std::uint64_t>::max()}},
                 "attributes.axis: expected a 64-bit integer");
    expect_error("reshape", {{"dims", {2, -3}}}, "attributes.dims: expected non-negative integers");
    expect_error("batch_normalization", {{"epsilon", 1e300}},
                 "attributes.epsilon: expected a number within f32's range");
    expect_error("pad", {{"pads", {0, 0}}, {"value", 0}, {"mode", "wrap"}},
                 "attributes.mode: unknown value 'wrap'");
    expect_error("convert", {{"target", "f128"}}, "attributes.target: unknown element type");
    expect_error("trilu", {{"upper", 1}, {"k", 0}}, "attributes.upper: expected true or false");
}

// ---- models ---------------------------------------------------------------------------------

class program_serialization_model : public testing::TestWithParam<std::string> {};

// The zoo's models are small configurations: the reference target runs all of them, twice, in
// about a second.
TEST_P(program_serialization_model, round_trips_as_imported_and_after_the_passes) {
    const fs::path dir = GetParam();
    program p = import_model_dir(dir);
    {
        SCOPED_TRACE("as imported");
        const program q = round_trip(p);
        expect_same_program(p, q);
        expect_same_results(p, q);
    }
    run_passes(p.main(), target_independent_passes(std::nullopt, fuse_attention{}));
    {
        SCOPED_TRACE("after the passes");
        const program q = round_trip(p);
        expect_same_program(p, q);
        expect_same_results(p, q);
    }
}

INSTANTIATE_TEST_SUITE_P(models, program_serialization_model, testing::ValuesIn(model_dirs()),
                         [](const auto& info) {
                             const fs::path dir = info.param;
                             return dir.parent_path().parent_path().filename().string() + "_" +
                                    dir.filename().string();
                         });

TEST(program_serialization, fused_programs_keep_their_submodules_and_literals) {
    const program p = small_program();
    const program q = round_trip(p);
    expect_same_program(p, q);
    expect_same_results(p, q);
    // The literal's bytes are CBOR binary, not a list of numbers.
    const json j = program_to_json(p);
    const auto& main = j["modules"].back();
    EXPECT_EQ(main["name"], "main");
    EXPECT_TRUE(main["instructions"][1]["value"]["data"].is_binary());
    EXPECT_EQ(j["modules"].front()["name"], "pointwise0");
}

// ---- damaged files --------------------------------------------------------------------------

TEST(program_serialization, damaged_files_say_where) {
    const json good = program_to_json(small_program());
    auto damaged = [&](auto change) {
        json j = good;
        change(j);
        return j;
    };
    const std::string conv = "module main, instruction 2 (convolution): ";
    expect_user_error(damaged([](json& j) { instructions_of(j, "main")[2]["op"] = "convolutoin"; }),
                      "module main, instruction 2 (convolutoin): unknown op 'convolutoin'");
    expect_user_error(
        damaged([](json& j) { instructions_of(j, "main")[2]["attributes"]["stride"] = "wide"; }),
        conv + "attributes.stride: expected an array, found string");
    expect_user_error(
        damaged([](json& j) {
            instructions_of(j, "main")[2]["attributes"]["stride"] = json::array({-1, 1});
        }),
        conv + "attributes.stride: expected non-negative integers, found -1");
    expect_user_error(
        damaged([](json& j) { instructions_of(j, "main")[2]["attributes"].erase("stride"); }),
        conv + "attributes: the field 'stride' is missing");
    expect_user_error(
        damaged([](json& j) {
            instructions_of(j, "main")[2]["attributes"]["strides"] = json::array({1, 1});
        }),
        conv + "attributes.strides: convolution has no such attribute");
    // Attributes the op's shape function rejects.
    expect_user_error(
        damaged([](json& j) {
            instructions_of(j, "main")[2]["attributes"]["stride"] = json::array({0, 1});
        }),
        conv + "convolution: stride must be positive");
    expect_user_error(
        damaged([](json& j) { instructions_of(j, "main")[0]["shape"]["type"] = "f16"; }),
        conv + "convolution: input is f16 but weights are f32");
    // Inputs.
    expect_user_error(damaged([](json& j) {
                          instructions_of(j, "main")[2]["inputs"] = json::array({0, 7});
                      }),
                      conv + "input 1 is instruction 7, not an earlier one of module main");
    expect_user_error(damaged([](json& j) {
                          instructions_of(j, "main")[2]["inputs"] = json::array({2, 1});
                      }),
                      conv + "input 0 is instruction 2, not an earlier one");
    expect_user_error(
        damaged([](json& j) { instructions_of(j, "main")[2]["inputs"] = json::array({0}); }),
        conv + "convolution: expects 2 input(s), got 1");
    expect_user_error(damaged([](json& j) { instructions_of(j, "main")[2].erase("inputs"); }),
                      conv + "the field 'inputs' is missing");
    expect_user_error(damaged([](json& j) { instructions_of(j, "main")[2].erase("op"); }),
                      "module main, instruction 2: the field 'op' is missing");
    expect_user_error(damaged([](json& j) { instructions_of(j, "main")[2].erase("attributes"); }),
                      conv + "the field 'attributes' is missing");
    // Submodules.
    const std::string pw = "module main, instruction 3 (pointwise): ";
    expect_user_error(
        damaged([](json& j) { instructions_of(j, "main")[3]["modules"] = json::array({"pw9"}); }),
        pw + "submodule 'pw9' is not one of the modules before module main");
    expect_user_error(damaged([](json& j) { std::swap(j["modules"][0], j["modules"][1]); }),
                      pw + "submodule 'pointwise0' is not one of the modules before module main");
    expect_user_error(damaged([](json& j) { instructions_of(j, "main")[3].erase("modules"); }),
                      pw + "pointwise takes exactly one submodule");
    expect_user_error(damaged([](json& j) {
                          instructions_of(j, "main")[2]["modules"] = json::array({"pointwise0"});
                      }),
                      conv + "convolution takes no submodules");
    expect_user_error(
        damaged([](json& j) {
            instructions_of(j, "pointwise0")[0]["shape"]["lens"] = json::array({1, 4, 8, 9});
        }),
        pw + "pointwise: input 0 is f32[1,4,8,8] but submodule pointwise0 expects");
    // Literals, parameters, the return.
    expect_user_error(damaged([](json& j) {
                          instructions_of(j, "main")[1]["value"]["data"] =
                              json::binary(std::vector<std::uint8_t>(3));
                      }),
                      "module main, instruction 1 (@literal).value.data: 3 bytes");
    expect_user_error(damaged([](json& j) { instructions_of(j, "main")[1]["op"] = "@param"; }),
                      "module main, instruction 1 (@param): the field 'name' is missing");
    expect_user_error(
        damaged([](json& j) { instructions_of(j, "main")[2] = instructions_of(j, "main")[0]; }),
        "module main, instruction 2 (@param): module main: duplicate parameter");
    expect_user_error(damaged([](json& j) {
                          auto& ins = instructions_of(j, "main");
                          ins.push_back(ins[3]);
                      }),
                      "module main, instruction 4 (@return): the return must be the last");
    expect_user_error(damaged([](json& j) {
                          instructions_of(j, "main")[4]["names"] = json::array({"y", "z"});
                      }),
                      "module main, instruction 4 (@return): 2 names for 1 values");
    // The program.
    expect_user_error(damaged([](json& j) { j["version"] = 2; }),
                      "program: version 2, but this Conflux reads version 1");
    expect_user_error(damaged([](json& j) { j.erase("modules"); }),
                      "program: the field 'modules' is missing");
    expect_user_error(damaged([](json& j) { j["modules"][1]["name"] = "pointwise0"; }),
                      "program.modules[1]: a second module named 'pointwise0'");
    expect_user_error(damaged([](json& j) { j["modules"].erase(1); }),
                      "program: there is no module main");
    expect_user_error(damaged([](json& j) { j["modules"][0] = 5; }),
                      "program.modules[0]: expected an object, found number");
    expect_user_error(json::array(), "program: expected an object, found array");
}

// Any one value of a saved program replaced or removed: loading it gives the program or a
// user_error, never another exception (a crash would end the test binary).
TEST(program_serialization, any_damage_is_a_user_error_or_a_valid_program) {
    program p = import_model_dir(fs::path(CONFLUX_SOURCE_DIR) / "tests/models/data" /
                                 "conv_add_relu_transpose_reshape");
    run_passes(p.main(), target_independent_passes(std::nullopt, fuse_attention{}));
    for (const json& good : {program_to_json(small_program()), program_to_json(p)}) {
        const auto places = every_value(good);
        const std::vector<json> replacements = {nullptr,
                                                true,
                                                -1,
                                                0,
                                                1,
                                                2,
                                                7,
                                                std::size_t(1) << 62,
                                                1e300,
                                                -0.5,
                                                "x",
                                                "f16",
                                                json::array(),
                                                json::object(),
                                                json::array({0}),
                                                json::array({-1, 3}),
                                                json::binary(std::vector<std::uint8_t>(4))};
        std::mt19937_64 rng(18);
        for (int trial = 0; trial < 3000; ++trial) {
            json j = good;
            const auto& at = places[rng() % places.size()];
            const bool remove = rng() % 5 == 0 && !at.empty();
            std::string change;
            if (remove) {
                json& parent = j.at(at.parent_pointer());
                if (parent.is_object())
                    parent.erase(at.back());
                else
                    parent.erase(std::stoul(at.back()));
                change = "removed " + at.to_string();
            } else {
                const json& r = replacements[rng() % replacements.size()];
                j.at(at) = r;
                change = at.to_string() + " = " + (r.is_binary() ? "binary" : r.dump());
            }
            try {
                (void)program_from_json(j);
            } catch (const user_error&) {
            } catch (const std::exception& e) {
                ADD_FAILURE() << change << ": " << e.what();
            }
        }
    }
}

} // namespace program_serialization_test
