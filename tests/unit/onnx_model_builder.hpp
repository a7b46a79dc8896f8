// Builds ONNX models node by node for tests; they are imported from their serialized bytes like a
// file, so the whole importer runs.
#pragma once

#include "conflux/onnx/import.hpp"

#include "onnx/onnx.pb.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace conflux::test {

struct model_builder {
    ::onnx::ModelProto model;
    ::onnx::GraphProto* graph;

    explicit model_builder(std::int64_t opset = 17) {
        model.set_ir_version(8);
        auto* o = model.add_opset_import();
        o->set_domain("");
        o->set_version(opset);
        graph = model.mutable_graph();
        graph->set_name("test");
    }

    // A dim of -1 is symbolic, named by `params[i]` when given.
    void input(const std::string& name, int type, const std::vector<std::int64_t>& dims,
               const std::vector<std::string>& params = {}) {
        auto* vi = graph->add_input();
        vi->set_name(name);
        auto* tt = vi->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(type);
        auto* s = tt->mutable_shape();
        for (std::size_t i = 0; i < dims.size(); ++i) {
            auto* d = s->add_dim();
            if (dims[i] >= 0)
                d->set_dim_value(dims[i]);
            else if (i < params.size())
                d->set_dim_param(params[i]);
        }
    }

    void output(const std::string& name) { graph->add_output()->set_name(name); }

    ::onnx::TensorProto* initializer(const std::string& name, const std::vector<std::int64_t>& dims,
                                     const std::vector<float>& values) {
        auto* t = graph->add_initializer();
        t->set_name(name);
        t->set_data_type(::onnx::TensorProto::FLOAT);
        for (auto d : dims)
            t->add_dims(d);
        for (auto v : values)
            t->add_float_data(v);
        return t;
    }

    ::onnx::TensorProto* initializer_i64(const std::string& name,
                                         const std::vector<std::int64_t>& dims,
                                         const std::vector<std::int64_t>& values) {
        auto* t = graph->add_initializer();
        t->set_name(name);
        t->set_data_type(::onnx::TensorProto::INT64);
        for (auto d : dims)
            t->add_dims(d);
        for (auto v : values)
            t->add_int64_data(v);
        return t;
    }

    ::onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs, const std::string& name = "") {
        auto* n = graph->add_node();
        n->set_op_type(op);
        n->set_name(name);
        for (const auto& i : inputs)
            n->add_input(i);
        for (const auto& o : outputs)
            n->add_output(o);
        return n;
    }

    std::string bytes() const { return model.SerializeAsString(); }

    void save(const std::string& path) const {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << bytes();
    }

    program import(const conflux::onnx::import_options& options = {}) const {
        return conflux::onnx::import_model_bytes(bytes(), options, "model.onnx");
    }
};

inline void set_int(::onnx::NodeProto* n, const std::string& name, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
}

inline void set_float(::onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(v);
}

inline void set_ints(::onnx::NodeProto* n, const std::string& name,
                     const std::vector<std::int64_t>& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (auto x : v)
        a->add_ints(x);
}

inline void set_string(::onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::STRING);
    a->set_s(v);
}

} // namespace conflux::test
