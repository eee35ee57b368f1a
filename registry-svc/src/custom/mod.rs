//! Custom kinds, defined at run time (upstream's `apiextensions-apiserver`).
//!
//! - [`definition`]: CustomResourceDefinitions as a kind of the generic Store (strategy and
//!   static validation);
//! - [`openapi`]: the OpenAPI v3 schema engine (structural checks, validation, pruning,
//!   defaulting);
//! - [`rules`]: `x-kubernetes-validations`, CEL rules with upstream's cost limits;
//! - [`pattern`]: regular expressions compiled with a size limit;
//! - [`object`]: a custom object in storage (ObjectMeta in field 1, the rest as JSON) and its
//!   JSON form;
//! - [`strategy`]: the strategy of one served version of a custom kind;
//! - [`kinds`]: the kinds this replica serves, learnt by watching the definitions;
//! - [`controller`]: names accepted, `Established`, and the objects of a deleted definition
//!   deleted first;
//! - [`resolve`]: which served kind and version a request names (the catalog's custom
//!   endpoints and the gRPC `CustomObjects` service resolve through it).
//!
//! A custom kind reuses the generic Store whole (`store::Names` gives it its names and keys at
//! run time), so every Store rule (system fields, generateName, optimistic concurrency, dry
//! run, finalizers and propagation policy, selectors, paging, watch semantics,
//! DeleteCollection) applies to it exactly as to a built-in kind.

pub mod controller;
pub mod definition;
pub mod kinds;
pub mod object;
pub mod openapi;
pub mod pattern;
pub mod resolve;
pub mod rules;
pub mod strategy;
pub mod wire;

use std::sync::Arc;

use kubestore_proto::apiextensions::v1::CustomResourceDefinition;

use crate::{storage::StorageClient, store::Store};

/// How many definition changes may wait for the controller; past that, a change is dropped and
/// picked up by the definition's next event or the periodic resync.
const QUEUE: usize = 4096;

/// Starts following the definitions and their controller; returns the services' state.
pub fn start(
    storage: &StorageClient,
    stop: tokio::sync::watch::Receiver<bool>,
) -> resolve::Resolver {
    let definitions: Store<CustomResourceDefinition> = Store::with_names(
        storage.clone(),
        Arc::new(definition::DefinitionStrategy),
        definition::names(),
    );
    let kinds = kinds::CustomKinds::new(storage.clone());
    let (tx, rx) = tokio::sync::mpsc::channel(QUEUE);
    tokio::spawn(
        kinds
            .clone()
            .follow(definitions.clone(), tx.clone(), stop.clone()),
    );
    tokio::spawn(controller::run(
        kinds.clone(),
        definitions.clone(),
        rx,
        tx,
        stop.clone(),
    ));
    resolve::Resolver {
        definitions,
        kinds,
        stop,
    }
}
