// The statement writer behind the index kernels: it emits a kernel body line by line, binds
// index arithmetic to local variables, and remembers what it has computed, per lexical scope, so
// that a value or an index used twice is computed once (common-subexpression elimination by
// construction, never by a later pass).
//
// Index texts are always a decimal constant or the name of a local variable: compound index
// arithmetic is bound to a variable before it is used again. That keeps texts short, makes two
// texts that compute the same thing compare equal, and lets constants fold on the host.
#pragma once

#include "conflux/ir/instruction.hpp"
#include "conflux/ir/shape.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace conflux::cuda::index {

// One position in an index space of lens `lens`: either a row-major linear index (`linear`
// non-empty; decomposed into axes only where something needs them) or one text per axis.
struct index_expr {
    dims lens;
    std::string linear;
    std::vector<std::string> axes;
    // When non-empty: the offset of this position in any buffer whose strides are
    // `dense_strides` (a packed layout, on the axes of len > 1). A thread walking an output in
    // its memory order has this, so operands laid out like the output read at `dense` directly.
    std::string dense;
    dims dense_strides;

    static index_expr from_linear(dims lens, std::string linear) {
        return {std::move(lens), std::move(linear), {}, {}, {}};
    }
    static index_expr from_axes(dims lens, std::vector<std::string> axes) {
        return {std::move(lens), {}, std::move(axes), {}, {}};
    }
    // Equal keys mean equal positions (the converse need not hold).
    std::string key() const;
};

// The integer value of an index text that is a constant.
std::optional<std::int64_t> constant_of(const std::string& text);

class kernel_writer {
public:
    // index_type: the C type of index arithmetic, "int" or "long long".
    explicit kernel_writer(std::string index_type);

    const std::string& index_type() const { return index_type_; }

    // ---- statements and scopes
    void line(const std::string& text);
    // "head {" and a new scope; close() ends it with "}". else_open() ends the current scope and
    // opens the next branch of the same if-chain: "} head {".
    void open(const std::string& head);
    void else_open(const std::string& head);
    void close();
    std::string body() const;
    // A new local name, e.g. "v12".
    std::string fresh(const char* prefix);

    // ---- values: the variable holding (instruction, index key), from this or an outer scope
    const std::string* find_value(const instruction* ins, const std::string& key) const;
    void remember_value(const instruction* ins, const std::string& key, const std::string& var);

    // ---- index arithmetic (every result is a constant or a variable name)
    // Binds an index-typed expression to a variable (reusing one that holds the same text).
    std::string bind(const std::string& expr);
    std::string add(const std::string& a, const std::string& b);
    std::string add(const std::string& a, std::int64_t c);
    std::string mul(const std::string& a, std::int64_t c);
    // sum_k axes[k] * factors[k], terms with a zero factor or a constant zero axis dropped; not
    // bound (for use inside a subscript).
    std::string dot(const std::vector<std::string>& axes, const std::vector<std::int64_t>& factors);

    // The axes of `e` (decomposing a linear index: (lin / inner) % len, bound to variables).
    std::vector<std::string> axes(const index_expr& e);
    // The row-major linear index of `e` over its lens.
    std::string linear(const index_expr& e);
    // The position of linear index `linear` in the memory order of the packed layout `s`: the
    // axes in decreasing stride order are the row-major decomposition of `linear`.
    index_expr memory_order(const std::string& linear, const shape& s);
    // The element offset of position `e` in a buffer of shape `s` (lens equal to e's): the
    // linear index itself when `s` is standard, the dense index when `s` has its layout, else
    // sum(axis * stride). Not bound.
    std::string offset(const index_expr& e, const shape& s);

private:
    struct scope {
        std::map<std::pair<const instruction*, std::string>, std::string> values;
        std::map<std::string, std::string> indices; // expression text -> variable
    };
    // An index variable is declared where it is bound but written only once something uses
    // it, so that decomposing a position into axes costs nothing for the axes nobody reads.
    struct index_var {
        std::size_t line;       // its reserved (empty until used) line
        std::string definition; // the full declaration
        bool used = false;
    };
    std::string index_type_;
    std::vector<std::string> lines_;
    std::map<std::string, index_var> index_vars_;
    std::vector<scope> scopes_;
    int next_name_ = 0;

    void write(const std::string& text);
    // Writes the declarations of the index variables `text` names, and of those they need.
    void use(const std::string& text);
};

// Row-major strides of lens, as signed values for index arithmetic.
std::vector<std::int64_t> row_major_strides(const dims& lens);

} // namespace conflux::cuda::index
