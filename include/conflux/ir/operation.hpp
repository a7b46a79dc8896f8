// An operation is an immutable value: a name, attributes (as JSON: printable, hashable and
// serialisable from one definition), a shape function and a reference evaluation. Concrete ops
// are plain structs; `operation` erases their type.
//
// An op struct provides:
//   std::string name() const;
//   nlohmann::json attributes() const;                       (optional, default {})
//   static Op from_attributes(const nlohmann::json&);        (with attributes(): the op they
//                                                            describe, for saved programs; an
//                                                            op whose name holds a field, as
//                                                            elementwise's kind, takes it
//                                                            first; conflux/ops/op_registry.hpp)
//   shape compute_shape(const std::vector<shape>&) const;    (or the form taking submodules)
//   argument eval(const shape& out, const std::vector<argument>& in) const;
//                                                            (or the form taking eval_context)
//   op_traits traits() const;                                (optional, default all false)
//   std::optional<std::size_t> view_offset(const shape& in) const;
//                                                            (optional, default nullopt; views)
//   bool operator==(const Op&) const;                        (usually defaulted)
// Every eval must accept inputs of any strides.
#pragma once

#include "conflux/ir/argument.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace conflux {

class module;

// Facts about an op that passes and targets ask instead of comparing op names, so that adding
// an op means declaring its facts once, on the op.
struct op_traits {
    bool pointwise = false; // elementwise over broadcast-compatible inputs of equal lens
    bool view = false;      // output aliases input 0 with new lens/strides; never copies
    // Element movement, whatever the strides (so also when a view must copy):
    bool layout_only = false;       // input 0's elements, each exactly once, only indexed anew
                                    // (reshape, transpose, squeeze, unsqueeze, flatten)
    bool reshape_like = false;      // layout_only keeping the row-major order: only the lens change
                                    // (reshape, flatten, squeeze, unsqueeze)
    bool replicates = false;        // input 0's elements, some repeated (broadcast)
    bool selects = false;           // some of input 0's elements, each at most once (slice)
    bool anchor = false;            // a convolution or dot: the heart of a fused gemm op
    bool has_anchor_module = false; // fused_gemm: owns a submodule built around one anchor
    // Kept in f32 under reduced precision: reductions and normalisations, whose sums lose too
    // much in 16 bits.
    bool accumulates_in_f32 = false;
    // Of those, an op that takes a 16-bit input 0 with f32 other inputs, computes in f32 and
    // gives input 0's type (layer_norm, softmax, the summing reductions): reduced precision
    // hands it the 16-bit input as it is, which saves the f32 copy and the conversion back and
    // changes no value.
    bool reads_16bit_input = false;
    bool builtin = false; // @param, @literal, @return
};

// What an op owning submodules needs to evaluate them.
struct eval_context {
    std::function<std::vector<argument>(const module&, const std::vector<argument>&)> run_module;
};

namespace detail {
template <class T> struct type_id_holder { static constexpr char id = 0; };
template <class T> constexpr const void* type_id() {
    return &type_id_holder<T>::id;
}
} // namespace detail

class operation {
public:
    template <class Op>
    requires(!std::is_same_v<std::decay_t<Op>, operation>) operation(Op op)
        : self_(std::make_shared<model<Op>>(std::move(op))) {}
    operation() = default;

    std::string name() const { return self_->name(); }
    nlohmann::json attributes() const { return self_->attributes(); }
    op_traits traits() const { return self_->traits(); }
    // Where the output starts inside input 0's memory, in elements, when applying this op to an
    // input of shape `in` aliases it; nullopt when it must copy or is not a view op.
    std::optional<std::size_t> view_offset(const shape& in) const { return self_->view_offset(in); }
    shape compute_shape(const std::vector<shape>& inputs,
                        const std::vector<const module*>& modules = {}) const {
        return self_->compute_shape(inputs, modules);
    }
    argument eval(const shape& out, const std::vector<argument>& inputs,
                  const std::vector<const module*>& modules, const eval_context& ctx) const {
        return self_->eval(out, inputs, modules, ctx);
    }

    // The concrete op, or nullptr when this operation holds another type.
    template <class Op> const Op* get_if() const {
        if (!self_ || self_->type() != detail::type_id<Op>()) return nullptr;
        return &static_cast<const model<Op>*>(self_.get())->op;
    }

    friend bool operator==(const operation& a, const operation& b) {
        return a.self_->type() == b.self_->type() && a.self_->equals(*b.self_);
    }

    // "name" or "name{attributes as compact JSON}".
    std::string to_string() const;

private:
    struct concept_t {
        virtual ~concept_t() = default;
        virtual const void* type() const = 0;
        virtual std::string name() const = 0;
        virtual nlohmann::json attributes() const = 0;
        virtual op_traits traits() const = 0;
        virtual std::optional<std::size_t> view_offset(const shape&) const = 0;
        virtual shape compute_shape(const std::vector<shape>&,
                                    const std::vector<const module*>&) const = 0;
        virtual argument eval(const shape&, const std::vector<argument>&,
                              const std::vector<const module*>&, const eval_context&) const = 0;
        virtual bool equals(const concept_t& other) const = 0;
    };

    template <class Op> struct model final : concept_t {
        Op op;
        explicit model(Op o) : op(std::move(o)) {}
        const void* type() const override { return detail::type_id<Op>(); }
        std::string name() const override { return op.name(); }
        nlohmann::json attributes() const override {
            if constexpr (requires { op.attributes(); })
                return op.attributes();
            else
                return nlohmann::json::object();
        }
        op_traits traits() const override {
            if constexpr (requires { op.traits(); })
                return op.traits();
            else
                return {};
        }
        std::optional<std::size_t> view_offset(const shape& in) const override {
            if constexpr (requires { op.view_offset(in); })
                return op.view_offset(in);
            else
                return std::nullopt;
        }
        shape compute_shape(const std::vector<shape>& in,
                            const std::vector<const module*>& mods) const override {
            if constexpr (requires { op.compute_shape(in, mods); })
                return op.compute_shape(in, mods);
            else
                return op.compute_shape(in);
        }
        argument eval(const shape& out, const std::vector<argument>& in,
                      const std::vector<const module*>& mods,
                      const eval_context& ctx) const override {
            if constexpr (requires { op.eval(out, in, mods, ctx); })
                return op.eval(out, in, mods, ctx);
            else
                return op.eval(out, in);
        }
        bool equals(const concept_t& other) const override {
            return op == static_cast<const model&>(other).op;
        }
    };

    std::shared_ptr<const concept_t> self_;
};

// Shared input checks for compute_shape, with messages that start with the op's name.
void check_input_count(const std::string& op, const std::vector<shape>& inputs, std::size_t lo,
                       std::size_t hi);
inline void check_input_count(const std::string& op, const std::vector<shape>& inputs,
                              std::size_t n) {
    check_input_count(op, inputs, n, n);
}

} // namespace conflux
