//! Upstream's `internal/fixture`: a live object and its managers, operations run on them in
//! turn, then the live object and managers checked.
