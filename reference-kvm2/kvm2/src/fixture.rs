//! The conformance fixture (in progress).
