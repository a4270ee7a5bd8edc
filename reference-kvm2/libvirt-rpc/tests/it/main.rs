//! Integration tests of the client against a scripted server.
