// A pass is a small object with a name and one `apply(module&)`; its options are public fields.
// `pass` erases the type so a target's pipeline can be one visible list of them.
#pragma once

#include "conflux/ir/module.hpp"

#include <memory>
#include <string>

namespace conflux {

class pass {
public:
    template <class P>
    requires(!std::is_same_v<std::decay_t<P>, pass>) pass(P p)
        : self_(std::make_shared<model<P>>(std::move(p))) {}

    std::string name() const { return self_->name(); }
    void apply(module& m) const { self_->apply(m); }

private:
    struct concept_t {
        virtual ~concept_t() = default;
        virtual std::string name() const = 0;
        virtual void apply(module& m) const = 0;
    };
    template <class P> struct model final : concept_t {
        P p;
        explicit model(P x) : p(std::move(x)) {}
        std::string name() const override { return p.name(); }
        void apply(module& m) const override { p.apply(m); }
    };
    std::shared_ptr<const concept_t> self_;
};

} // namespace conflux
