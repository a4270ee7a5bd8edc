//! Reporters: pure functions from a [`Report`](super::outcome::Report) to a file format.
