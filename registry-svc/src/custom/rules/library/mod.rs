//! Kubernetes' CEL libraries: the functions and types upstream's base environment
//! (`k8s.io/apiserver/pkg/cel/environment/base.go`, newest version) adds to CEL's standard
//! library, registered on the one environment every `x-kubernetes-validations` rule and every
//! admission policy expression runs in ([`environment`]).
//!
//! The `cel` crate knows CEL's standard library and cel-go's strings extension; the rest is
//! Kubernetes' (`pkg/cel/library`) or cel-go's sets extension, written here from their
//! documented semantics, one file per library:
//! - [`lists`]: `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`, `includes`;
//! - [`regex`]: `find`, `findAll`;
//! - [`urls`]: `url`, `isURL` and the `kubernetes.URL` accessors (Go's `net/url` rules);
//! - [`quantity`]: `quantity`, `isQuantity` and `kubernetes.Quantity`'s arithmetic;
//! - [`ip`] and [`cidr`]: `ip`, `cidr`, `isIP`, `isCIDR` and the `net.IP` / `net.CIDR`
//!   accessors (Go's `net/netip` rules);
//! - [`sets`]: `sets.contains`, `sets.equivalent`, `sets.intersects`;
//! - [`authz`]: the `authorizer` variable of admission policies.
//!
//! Evaluation is bounded before it runs (`cost`): every function here has its own arm in
//! `cost::calls`, with upstream's cost (`library/cost.go`) and a bound on the size of its
//! result, so that no chain of calls builds values larger than what it was charged for.
//!
//! Not here yet: upstream's `format` library (`format.named` and its named string
//! validators), `semver`, the `fieldSelector`/`labelSelector` authorization selectors,
//! `jsonpatch.escapeKey`, cel-go's lists extension (v3) and two-variable comprehensions.

pub mod authz;
mod cidr;
mod ip;
mod lists;
mod quantity;
mod regex;
mod sets;
#[cfg(test)]
mod tests;
mod urls;

use cel::{DeclarationError, Env};

/// What registers a library's types and overloads on an environment.
type Library = fn(&mut Env) -> Result<(), DeclarationError>;

/// CEL's standard library with Kubernetes' libraries.
pub(crate) fn environment() -> Env {
    let mut env = Env::stdlib();
    let libraries: [Library; 9] = [
        cel::extensions::strings,
        lists::library,
        regex::library,
        urls::library,
        quantity::library,
        ip::library,
        cidr::library,
        sets::library,
        authz::library,
    ];
    for library in libraries {
        // The libraries declare distinct overloads: a clash is a mistake of this module, seen
        // by every test.
        if let Err(e) = env.add_extension(library) {
            panic!("the CEL libraries conflict: {e}");
        }
    }
    env
}

/// Declares a `'static` Rust type as an opaque CEL value of type `$name`, equal by `==`, and
/// a function registering that type on an environment (so that expressions can name it).
macro_rules! opaque_type {
    ($t:ty, $name:literal) => {
        impl cel::common::value::Val for $t {
            fn get_type(&self) -> &cel::common::types::Type {
                <Self as cel::common::value::Val>::cel_type()
            }

            fn cel_type() -> &'static cel::common::types::Type {
                static TYPE: std::sync::LazyLock<cel::common::types::Type> =
                    std::sync::LazyLock::new(|| cel::common::types::Type::new_opaque_type($name));
                &TYPE
            }

            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other.downcast_ref::<$t>().is_some_and(|o| o == self)
            }

            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v>
            where
                Self: 'v,
            {
                Box::new(self.clone())
            }

            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }

        impl cel::common::value::StaticVal for $t {}
    };
}
pub(crate) use opaque_type;

/// Registers the CEL type of `T` on `env`.
fn add_type<T: cel::common::value::Val>(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(T::cel_type().to_owned())
}

/// The types of a call's arguments, for a "no such overload" error.
fn types_of(args: &[&dyn cel::common::value::Val]) -> Vec<String> {
    args.iter()
        .map(|a| a.get_type().name().to_owned())
        .collect()
}
