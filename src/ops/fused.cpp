#include "conflux/ops/fused.hpp"

namespace conflux::op {

// The checks are user checks, as every op's input checks are: a fused op read from a file (a
// saved program) may name any module.
shape submodule_result_shape(const std::string& op, const std::vector<shape>& in,
                             const std::vector<const module*>& m) {
    CONFLUX_USER_CHECK(m.size() == 1, op, " takes exactly one submodule");
    const module& sub = *m.front();
    auto params = sub.parameters();
    CONFLUX_USER_CHECK(params.size() == in.size(), op, ": submodule ", sub.name(), " takes ",
                       params.size(), " inputs, given ", in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const auto& want = params[i]->get_shape();
        CONFLUX_USER_CHECK(want.lens() == in[i].lens() && want.type() == in[i].type(), op,
                           ": input ", i, " is ", to_string(in[i]), " but submodule ", sub.name(),
                           " expects ", to_string(want));
    }
    auto* ret = sub.get_return();
    CONFLUX_USER_CHECK(ret != nullptr && !ret->inputs().empty(), op, ": submodule ", sub.name(),
                       " returns nothing");
    if (ret->inputs().size() == 1) return ret->inputs().front()->get_shape();
    std::vector<shape> shapes;
    for (auto* r : ret->inputs())
        shapes.push_back(r->get_shape());
    return shape{std::move(shapes)};
}

namespace {

argument run_submodule(const std::vector<argument>& in, const std::vector<const module*>& m,
                       const eval_context& ctx) {
    auto results = ctx.run_module(*m.front(), in);
    if (results.size() == 1) return results.front();
    return argument{std::move(results)};
}

} // namespace

shape pointwise::compute_shape(const std::vector<shape>& in,
                               const std::vector<const module*>& m) const {
    auto s = submodule_result_shape("pointwise", in, m);
    CONFLUX_USER_CHECK(!s.is_tuple(), "pointwise: submodule must return one value");
    return s;
}

argument pointwise::eval(const shape&, const std::vector<argument>& in,
                         const std::vector<const module*>& m, const eval_context& ctx) const {
    return run_submodule(in, m, ctx);
}

shape fused_gemm::compute_shape(const std::vector<shape>& in,
                                const std::vector<const module*>& m) const {
    return submodule_result_shape("fused_gemm", in, m);
}

argument fused_gemm::eval(const shape&, const std::vector<argument>& in,
                          const std::vector<const module*>& m, const eval_context& ctx) const {
    return run_submodule(in, m, ctx);
}

} // namespace conflux::op
