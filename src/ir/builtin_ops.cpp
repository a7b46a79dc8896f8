#include "conflux/ir/builtin_ops.hpp"

#include "conflux/ir/serialize.hpp"

namespace conflux::op {

shape param::compute_shape(const std::vector<shape>& in) const {
    check_input_count("@param", in, 0);
    return shape_;
}

argument param::eval(const shape&, const std::vector<argument>&) const {
    throw_internal_error("@param ", name_, " is bound by the evaluator, not evaluated");
}

shape literal::compute_shape(const std::vector<shape>& in) const {
    check_input_count("@literal", in, 0);
    return value.get_shape();
}

shape return_op::compute_shape(const std::vector<shape>& in) const {
    if (in.empty()) return {};
    return in.front();
}

argument return_op::eval(const shape&, const std::vector<argument>&) const {
    throw_internal_error("@return is handled by the evaluator");
}

get_tuple_elem get_tuple_elem::from_attributes(const nlohmann::json& a) {
    return {json_size(a, "index", "attributes")};
}

shape get_tuple_elem::compute_shape(const std::vector<shape>& in) const {
    check_input_count("get_tuple_elem", in, 1);
    CONFLUX_USER_CHECK(in[0].is_tuple() && index < in[0].sub_shapes().size(),
                       "get_tuple_elem: index ", index, " of ", to_string(in[0]));
    return in[0].sub_shapes()[index];
}

argument get_tuple_elem::eval(const shape&, const std::vector<argument>& in) const {
    return in[0].sub_arguments().at(index);
}

} // namespace conflux::op
