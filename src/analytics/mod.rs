//! Analytics (spec 07 Part b), layered on deterministic dry runs.
