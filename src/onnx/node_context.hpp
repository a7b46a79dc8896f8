// What an op builder sees while one ONNX node is imported: typed attribute access with
// defaults, the node's inputs (and their constant values where they are literals), and a way to
// add instructions that folds constant subgraphs on the spot. Builders live in parse_*.cpp, one
// file per op family, and register into one table.
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/util/errors.hpp"

#include "onnx/onnx.pb.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conflux::onnx {

// A user_error whose message already names the node; the import loop passes it through
// unchanged and prefixes every other user_error (from compute_shape, say) with the node.
struct node_error : user_error {
    using user_error::user_error;
};

// ONNX TensorProto.DataType -> dtype; nullopt for types Conflux does not have.
std::optional<dtype> to_dtype(int onnx_type);
std::string onnx_type_name(int onnx_type);
class external_data;

// Throws user_error naming the tensor on anything it cannot represent. `external`: where
// tensors stored outside the model are read from (none: such a tensor is an error).
argument to_argument(const ::onnx::TensorProto& t, external_data* external = nullptr);

// Names in a damaged or hostile file may hold line breaks; every message stays one line.
std::string one_line(std::string s);

// Results folded at import stay below this size so that a huge weight transform is left to
// the compiler instead of being duplicated as a literal.
inline constexpr std::size_t fold_limit = std::size_t{1} << 20;

class node_context {
public:
    // `external`: where tensor attributes stored outside the model are read from.
    node_context(const ::onnx::NodeProto& node, std::size_t index, std::int64_t opset, module& m,
                 std::vector<instruction_ref> inputs, external_data* external = nullptr);

    const ::onnx::NodeProto& node() const { return node_; }
    const std::string& op_type() const { return node_.op_type(); }
    std::int64_t opset() const { return opset_; }
    // The node's name, or "#<index>" for unnamed nodes.
    std::string node_name() const;

    // "Reshape (node 'n3', opset 17): <parts>"
    template <class... Ts> [[noreturn]] void fail(const Ts&... parts) const {
        throw node_error(prefix() + detail::concat(parts...));
    }
    // "unsupported operator 'Pad' (node 'p', domain '', opset 17): <parts>"
    template <class... Ts> [[noreturn]] void unsupported(const Ts&... parts) const {
        throw node_error(unsupported_prefix() + detail::concat(parts...));
    }
    std::string prefix() const;
    std::string unsupported_prefix() const;

    // Inputs as listed (trailing optional ones may be omitted; "" means absent).
    std::size_t input_count() const { return inputs_.size(); }
    bool has_input(std::size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
    instruction_ref input(std::size_t i) const; // fails when absent
    const shape& input_shape(std::size_t i) const { return input(i)->get_shape(); }
    std::optional<argument> constant_input(std::size_t i) const;
    // `what` names the input in the error: "input 'shape' must be a constant".
    argument require_constant(std::size_t i, std::string_view what) const;
    std::vector<std::int64_t> constant_ints(std::size_t i, std::string_view what) const;
    std::vector<double> constant_doubles(std::size_t i, std::string_view what) const;
    // A constant holding exactly one integer: a scalar or a 1-element 1-D tensor.
    std::int64_t constant_int(std::size_t i, std::string_view what) const;

    std::size_t output_count() const { return std::size_t(node_.output_size()); }
    bool output_requested(std::size_t i) const {
        return i < output_count() && !node_.output(int(i)).empty();
    }

    // Attributes (attributes.cpp). A present attribute of the wrong type is an error.
    const ::onnx::AttributeProto* attribute(std::string_view name) const;
    bool has_attr(std::string_view name) const { return attribute(name) != nullptr; }
    std::int64_t attr_int(std::string_view name, std::int64_t def) const;
    std::optional<std::int64_t> attr_int(std::string_view name) const;
    float attr_float(std::string_view name, float def) const;
    std::optional<float> attr_float(std::string_view name) const;
    std::string attr_string(std::string_view name, const std::string& def) const;
    std::optional<std::vector<std::int64_t>> attr_ints(std::string_view name) const;
    std::vector<std::int64_t> attr_ints(std::string_view name,
                                        const std::vector<std::int64_t>& def) const;
    std::optional<std::vector<float>> attr_floats(std::string_view name) const;
    std::optional<argument> attr_tensor(std::string_view name) const;

    // Adds `op`; when every input is a literal and the result is small it is evaluated now and
    // a literal is added instead.
    instruction_ref add(const operation& op, std::vector<instruction_ref> inputs);
    instruction_ref add_literal(argument value);
    // A scalar (rank 0) literal of type t.
    instruction_ref scalar(dtype t, double value);
    // The i64 literal 0 .. len - 1 along `axis` of a rank-`rank` tensor whose other axes are 1,
    // to compare indices with (OneHot, Hardmax). Callers bound len: it is built here.
    instruction_ref positions_along(std::size_t axis, std::size_t rank, std::size_t len);

    // A broadcast view when x's lens differ from `lens`.
    instruction_ref broadcast_to(instruction_ref x, const dims& lens);
    // Multidirectional (numpy) broadcasting of all xs to their common lens.
    std::vector<instruction_ref> broadcast_all(std::vector<instruction_ref> xs);
    // Broadcasts its inputs, then applies the elementwise op.
    instruction_ref elementwise(const op::elementwise& op, std::vector<instruction_ref> xs);
    instruction_ref elementwise(op::elementwise_kind k, std::vector<instruction_ref> xs) {
        return elementwise(op::make_elementwise(k), std::move(xs));
    }
    instruction_ref convert(instruction_ref x, dtype t);

    // An axis in [-rank, rank) made non-negative; fails naming `what` otherwise.
    std::int64_t normalize_axis(std::int64_t axis, std::size_t rank,
                                std::string_view what = "axis") const;
    std::vector<std::int64_t> normalize_axes(const std::vector<std::int64_t>& axes,
                                             std::size_t rank,
                                             std::string_view what = "axes") const;

private:
    const ::onnx::NodeProto& node_;
    std::size_t index_;
    std::int64_t opset_;
    module& m_;
    std::vector<instruction_ref> inputs_;
    external_data* external_;
};

// The value of a literal or of a broadcast view of one; nullopt for anything else.
std::optional<argument> constant_value(instruction_ref ins);

using op_builder_fn = std::function<std::vector<instruction_ref>(node_context&)>;
struct op_builder {
    std::size_t min_inputs = 0;
    std::size_t max_inputs = 0;
    op_builder_fn build;
};
inline constexpr std::size_t any_count = std::numeric_limits<std::size_t>::max();
using op_table = std::map<std::string, op_builder, std::less<>>;

// One per op family (parse_*.cpp). Registration is explicit, not by static initialisers, which
// a static library would drop.
void add_elementwise_ops(op_table& t);
void add_conv_pool_ops(op_table& t);
void add_conv_transpose_ops(op_table& t);
void add_gemm_ops(op_table& t);
void add_einsum_ops(op_table& t);
void add_normalization_ops(op_table& t);
void add_shape_ops(op_table& t);
void add_recurrent_ops(op_table& t);
void add_constant_ops(op_table& t);
void add_reduce_ops(op_table& t);
void add_resize_ops(op_table& t);
void add_quantize_ops(op_table& t);
void add_col2im_ops(op_table& t);
void add_dft_ops(op_table& t);
void add_grid_sample_ops(op_table& t);

const op_table& onnx_op_table();

} // namespace conflux::onnx
