//! Unit tests of the chat module.
