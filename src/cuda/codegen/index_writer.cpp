#include "cuda/codegen/index_writer.hpp"

#include "conflux/util/errors.hpp"

#include <algorithm>
#include <cctype>

namespace conflux::cuda::index {

std::string index_expr::key() const {
    if (!linear.empty()) return "#" + linear + "@" + to_string(lens);
    std::string k;
    for (const auto& a : axes)
        k += a + ",";
    return k;
}

std::optional<std::int64_t> constant_of(const std::string& text) {
    if (text.empty()) return std::nullopt;
    std::size_t start = text[0] == '-' ? 1 : 0;
    if (start == text.size()) return std::nullopt;
    for (std::size_t i = start; i < text.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    return std::stoll(text);
}

std::vector<std::int64_t> row_major_strides(const dims& lens) {
    std::vector<std::int64_t> strides(lens.size(), 1);
    for (std::size_t k = lens.size(); k-- > 1;)
        strides[k - 1] = strides[k] * static_cast<std::int64_t>(lens[k]);
    return strides;
}

namespace {

bool is_name(const std::string& text) {
    if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_'))
        return false;
    for (char c : text)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}

// "a + 3", "a - 3": a constant term written the way a person would.
std::string plus_constant(const std::string& a, std::int64_t c) {
    return c < 0 ? a + " - " + std::to_string(-c) : a + " + " + std::to_string(c);
}

} // namespace

kernel_writer::kernel_writer(std::string index_type)
    : index_type_(std::move(index_type)), scopes_(1) {}

void kernel_writer::write(const std::string& text) {
    use(text);
    lines_.push_back(std::string(4 * scopes_.size(), ' ') + text);
}

void kernel_writer::use(const std::string& text) {
    // A worklist, not recursion: a definition may name a variable whose definition names
    // another, as long as the chain of views that built them.
    std::vector<std::string> pending{text};
    while (!pending.empty()) {
        const std::string t = std::move(pending.back());
        pending.pop_back();
        for (std::size_t at = 0; at < t.size();) {
            if (!(std::isalnum(static_cast<unsigned char>(t[at])) || t[at] == '_')) {
                ++at;
                continue;
            }
            std::size_t end = at;
            while (end < t.size() &&
                   (std::isalnum(static_cast<unsigned char>(t[end])) || t[end] == '_'))
                ++end;
            auto it = index_vars_.find(t.substr(at, end - at));
            if (it != index_vars_.end() && !it->second.used) {
                it->second.used = true;
                lines_[it->second.line] = it->second.definition;
                pending.push_back(it->second.definition);
            }
            at = end;
        }
    }
}

std::string kernel_writer::body() const {
    std::string text;
    for (const auto& l : lines_) {
        if (l.empty()) continue;
        text += l;
        text += '\n';
    }
    return text;
}

void kernel_writer::line(const std::string& text) {
    write(text);
}

void kernel_writer::open(const std::string& head) {
    write(head.empty() ? "{" : head + " {");
    scopes_.emplace_back();
}

void kernel_writer::else_open(const std::string& head) {
    CONFLUX_ASSERT(scopes_.size() > 1, "else_open outside a scope");
    scopes_.pop_back();
    write("} " + head + " {");
    scopes_.emplace_back();
}

void kernel_writer::close() {
    CONFLUX_ASSERT(scopes_.size() > 1, "close without open");
    scopes_.pop_back();
    write("}");
}

std::string kernel_writer::fresh(const char* prefix) {
    return prefix + std::to_string(next_name_++);
}

const std::string* kernel_writer::find_value(const instruction* ins, const std::string& key) const {
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
        auto it = s->values.find({ins, key});
        if (it != s->values.end()) return &it->second;
    }
    return nullptr;
}

void kernel_writer::remember_value(const instruction* ins, const std::string& key,
                                   const std::string& var) {
    scopes_.back().values[{ins, key}] = var;
}

std::string kernel_writer::bind(const std::string& expr) {
    if (constant_of(expr) || is_name(expr)) return expr;
    for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
        auto it = s->indices.find(expr);
        if (it != s->indices.end()) return it->second;
    }
    std::string var = fresh("j");
    index_vars_[var] = {lines_.size(), std::string(4 * scopes_.size(), ' ') + "const " +
                                           index_type_ + " " + var + " = " + expr + ";"};
    lines_.emplace_back(); // reserved for the declaration
    scopes_.back().indices[expr] = var;
    return var;
}

std::string kernel_writer::add(const std::string& a, const std::string& b) {
    auto ca = constant_of(a), cb = constant_of(b);
    if (ca && cb) return std::to_string(*ca + *cb);
    if (cb) return add(a, *cb);
    if (ca) return add(b, *ca);
    return bind(a + " + " + b);
}

std::string kernel_writer::add(const std::string& a, std::int64_t c) {
    if (auto ca = constant_of(a)) return std::to_string(*ca + c);
    if (c == 0) return a;
    return bind(plus_constant(a, c));
}

std::string kernel_writer::mul(const std::string& a, std::int64_t c) {
    if (auto ca = constant_of(a)) return std::to_string(*ca * c);
    if (c == 0) return "0";
    if (c == 1) return a;
    return bind(a + " * " + std::to_string(c));
}

std::string kernel_writer::dot(const std::vector<std::string>& axes,
                               const std::vector<std::int64_t>& factors) {
    CONFLUX_ASSERT(axes.size() == factors.size(), "dot: ", axes.size(), " axes but ",
                   factors.size(), " factors");
    std::string text;
    std::int64_t constant = 0;
    for (std::size_t k = 0; k < axes.size(); ++k) {
        if (factors[k] == 0) continue;
        if (auto c = constant_of(axes[k])) {
            constant += *c * factors[k];
            continue;
        }
        std::string term = factors[k] == 1 ? axes[k] : axes[k] + " * " + std::to_string(factors[k]);
        text = text.empty() ? term : text + " + " + term;
    }
    if (text.empty()) return std::to_string(constant);
    return constant == 0 ? text : plus_constant(text, constant);
}

std::vector<std::string> kernel_writer::axes(const index_expr& e) {
    if (e.linear.empty()) {
        CONFLUX_ASSERT(e.axes.size() == e.lens.size(), "index of rank ", e.axes.size(),
                       " for lens [", to_string(e.lens), "]");
        return e.axes;
    }
    const auto strides = row_major_strides(e.lens);
    const auto lin_const = constant_of(e.linear);
    std::vector<std::string> out(e.lens.size(), "0");
    bool outer_axis_seen = false; // an earlier axis of len > 1 exists: the quotient needs a %
    for (std::size_t k = 0; k < e.lens.size(); ++k) {
        if (e.lens[k] == 1) continue;
        const auto len = static_cast<std::int64_t>(e.lens[k]);
        if (lin_const) {
            out[k] = std::to_string((*lin_const / strides[k]) % len);
        } else {
            std::string x = e.linear;
            if (strides[k] != 1) x += " / " + std::to_string(strides[k]);
            if (outer_axis_seen)
                x = (strides[k] != 1 ? "(" + x + ")" : x) + " % " + std::to_string(len);
            out[k] = bind(x);
        }
        outer_axis_seen = true;
    }
    return out;
}

std::string kernel_writer::linear(const index_expr& e) {
    if (!e.linear.empty()) return e.linear;
    const std::string text = dot(axes(e), row_major_strides(e.lens));
    return bind(text);
}

index_expr kernel_writer::memory_order(const std::string& linear, const shape& s) {
    const std::size_t rank = s.rank();
    std::vector<std::size_t> order(rank);
    for (std::size_t k = 0; k < rank; ++k)
        order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return s.strides()[a] > s.strides()[b]; });
    dims memory_lens(rank);
    for (std::size_t k = 0; k < rank; ++k)
        memory_lens[k] = s.lens()[order[k]];
    const auto memory_axes = axes(index_expr::from_linear(memory_lens, linear));
    std::vector<std::string> logical(rank);
    for (std::size_t k = 0; k < rank; ++k)
        logical[order[k]] = memory_axes[k];
    index_expr e = index_expr::from_axes(s.lens(), std::move(logical));
    e.dense = linear;
    e.dense_strides = s.strides();
    return e;
}

namespace {

// Same strides on every axis that has more than one element.
bool same_layout(const dims& lens, const dims& a, const dims& b) {
    for (std::size_t k = 0; k < lens.size(); ++k)
        if (lens[k] != 1 && a[k] != b[k]) return false;
    return true;
}

} // namespace

std::string kernel_writer::offset(const index_expr& e, const shape& s) {
    CONFLUX_ASSERT(s.lens() == e.lens, "offset: index over [", to_string(e.lens),
                   "] into a buffer of shape ", to_string(s));
    if (!e.linear.empty() && s.standard()) return e.linear;
    if (!e.dense.empty() && same_layout(e.lens, e.dense_strides, s.strides())) return e.dense;
    const auto ax = axes(e);
    std::vector<std::int64_t> strides(s.rank());
    for (std::size_t k = 0; k < s.rank(); ++k)
        strides[k] = s.lens()[k] == 1 ? 0 : static_cast<std::int64_t>(s.strides()[k]);
    return dot(ax, strides);
}

} // namespace conflux::cuda::index
